//! What goes wrong on the wire: a value that breaks its rule ([`WireError`]), and the error
//! body every HTTP API of gatemesh sends ([`ErrorBody`]).

use serde::{Deserialize, Serialize};

/// A value that does not keep its rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// A field whose value breaks the rule of its type.
    #[error("not a valid {what}: {value:?}")]
    Invalid {
        /// What the value should have been.
        what: &'static str,
        /// The value, shortened to 80 characters.
        value: String,
    },
    /// A body whose parts do not fit together.
    #[error("{0}")]
    Inconsistent(String),
}

/// At most 80 characters of `s`, for error messages about hostile input.
pub(crate) fn shorten(s: &str) -> String {
    match s.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

/// Every error an HTTP API of gatemesh sends: `{"error": {"code", "message"}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(
    feature = "openapi",
    schema(example = json!({ "error": { "code": "not_found", "message": "no event NOPE" } }))
)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: ErrorDetail,
}

/// The two halves of an error: one for programs, one for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ErrorDetail {
    /// Stable, for programs: `bad_request`, `too_large`, `unauthorized`, `forbidden`,
    /// `observer`, `not_found`, `unknown_code`, `conflict`, `too_many_attempts`,
    /// `unavailable`, `internal`.
    pub code: String,
    /// For people.
    pub message: String,
}

impl ErrorBody {
    /// An error body.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            error: ErrorDetail {
                code: code.into(),
                message: message.into(),
            },
        }
    }
}
