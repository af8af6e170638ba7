//! Why a desk call was refused: [`DeskError`] in Rust, and what the UI receives of it,
//! [`ErrorView`] — a stable [`ErrorCode`] to decide on and a message for people. The UI
//! branches on the code, never on the words.

use gatemesh_node::NodeError;
use serde::Serialize;
use ts_rs::TS;

use crate::StaffRole;

/// Why a desk call was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DeskError {
    /// No event is set up yet: the app shows its set-up screen.
    #[error("set up an event first")]
    NotSetUp,
    /// A set-up was asked for, but this app already has an event.
    #[error("this app is already set up for an event")]
    AlreadySetUp,
    /// Nobody is signed in (or the desk forgot who was).
    #[error("sign in first")]
    SignedOut,
    /// No staff member of this name has this PIN.
    #[error("wrong name or PIN")]
    WrongPin,
    /// Wrong PINs came too fast: the next try for this name waits a little.
    #[error("too many wrong PINs: wait {} s and try again", .wait_ms.div_ceil(1000))]
    TooSoon { wait_ms: u64 },
    /// Too many wrong PINs for this name: a manager unlocks it.
    #[error("{0} is locked after too many wrong PINs: a manager unlocks it")]
    Locked(String),
    /// The signed-in person's role may not do this.
    #[error("a {0:?} may not do this")]
    NotAllowed(StaffRole),
    /// The request breaks a rule by itself: a PIN, a name, a key, an id.
    #[error("{0}")]
    BadInput(String),
    /// The request is well formed, but what is there forbids it: the PIN is someone else's,
    /// the last manager would go.
    #[error("{0}")]
    Conflict(String),
    /// Something the desk needs did not answer: the server a pairing code is spent at.
    #[error("{0}")]
    Unavailable(String),
    /// The gate refused or failed.
    #[error(transparent)]
    Node(#[from] NodeError),
    /// Anything else (files, the gate's start): nothing the person could have done otherwise.
    #[error("{0:#}")]
    Other(#[from] anyhow::Error),
}

/// What kind of refusal an error is: the UI decides on this, never on the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// No event is set up yet.
    NotSetUp,
    /// Sign in (again) first.
    SignedOut,
    /// No staff member of this name has this PIN.
    WrongPin,
    /// Wait a few seconds before the next PIN (after wrong ones).
    TooSoon,
    /// The name is locked after too many wrong PINs; a manager unlocks it.
    Locked,
    /// The signed-in role may not do this.
    NotAllowed,
    /// The request breaks a rule; the message says which.
    BadInput,
    /// What it names does not exist (a ticket with no flag to resolve…).
    NotFound,
    /// What is there forbids it (already set up, a PIN taken, the last manager…).
    Conflict,
    /// Try again later: the gate is stopping or its storage failed, a server did not answer.
    Unavailable,
    /// A fault of the app or the machine.
    Internal,
}

impl DeskError {
    /// Its kind, for the UI to decide on.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::NotSetUp => ErrorCode::NotSetUp,
            Self::AlreadySetUp | Self::Conflict(_) => ErrorCode::Conflict,
            Self::SignedOut => ErrorCode::SignedOut,
            Self::WrongPin => ErrorCode::WrongPin,
            Self::TooSoon { .. } => ErrorCode::TooSoon,
            Self::Locked(_) => ErrorCode::Locked,
            Self::NotAllowed(_) => ErrorCode::NotAllowed,
            Self::BadInput(_) => ErrorCode::BadInput,
            Self::Unavailable(_) => ErrorCode::Unavailable,
            // As the gate's HTTP API classifies them.
            Self::Node(e) => match e {
                NodeError::BadInput(_) => ErrorCode::BadInput,
                NodeError::NotFound(_) => ErrorCode::NotFound,
                NodeError::Conflict(_) => ErrorCode::Conflict,
                NodeError::Storage(_) | NodeError::Stopped => ErrorCode::Unavailable,
                _ => ErrorCode::Internal,
            },
            Self::Other(_) => ErrorCode::Internal,
        }
    }
}

/// An error as the UI receives it: Tauri commands fail with this.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, TS)]
pub struct ErrorView {
    pub code: ErrorCode,
    /// For people: shown as it is.
    pub message: String,
}

impl From<&DeskError> for ErrorView {
    fn from(e: &DeskError) -> Self {
        Self {
            code: e.code(),
            message: e.to_string(),
        }
    }
}

/// As [`ErrorView`], so a Tauri command can fail with a `DeskError` itself.
impl Serialize for DeskError {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        ErrorView::from(self).serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_reach_the_ui_as_code_and_message() {
        let json = |e: DeskError| serde_json::to_value(e).unwrap();
        assert_eq!(
            json(DeskError::SignedOut),
            serde_json::json!({ "code": "signed_out", "message": "sign in first" })
        );
        assert_eq!(
            json(DeskError::NotAllowed(StaffRole::Staff)),
            serde_json::json!({ "code": "not_allowed", "message": "a Staff may not do this" })
        );
        assert_eq!(
            json(DeskError::Node(NodeError::Stopped))["code"],
            "unavailable"
        );
        assert_eq!(
            json(DeskError::Other(
                anyhow::anyhow!("disk full").context("saving app.json")
            )),
            serde_json::json!({ "code": "internal", "message": "saving app.json: disk full" })
        );
    }
}
