//! Who is calling: the organizer's admin token opens everything; a paired device's credential
//! opens the gate endpoints of its own event (`/v1/events/{eid}/…`).

use axum::{
    extract::{Path, Request, State},
    http::{HeaderMap, StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
};
use sha2::{Digest, Sha256};

use super::errors::err;
use crate::Server;

fn digest(s: &str) -> [u8; 32] {
    Sha256::digest(s.as_bytes()).into()
}

/// Who is calling.
#[derive(Debug, Clone)]
pub(crate) enum Caller {
    /// The organizer's token: everything.
    Admin,
    /// A paired device: its own event's gate endpoints.
    Device(crate::store::Device),
}

fn bearer(headers: &HeaderMap) -> &str {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("")
}

fn is_admin(s: &Server, given: &str) -> bool {
    // Comparing digests takes the same time whatever the token shares with the real one.
    digest(given) == digest(&s.admin_token)
}

fn unauthorized(what: &str) -> Response {
    err(StatusCode::UNAUTHORIZED, "unauthorized", what).into_response()
}

/// Organizer calls: the admin token only.
pub(super) async fn require_admin(
    State(s): State<Server>,
    headers: HeaderMap,
    mut req: Request,
    next: Next,
) -> Response {
    let given = bearer(&headers);
    if given.is_empty() {
        return unauthorized(
            "no admin token: send Authorization: Bearer <the token the server printed on \
             first start, kept in DATA/admin.token>",
        );
    }
    if !is_admin(&s, given) {
        return unauthorized(
            "wrong admin token: this server's is the one it printed on first start, kept in \
             DATA/admin.token (or --admin-token)",
        );
    }
    req.extensions_mut().insert(Caller::Admin);
    next.run(req).await
}

/// Gate calls under `/v1/events/{eid}/…`: the admin token, or the credential of a device
/// paired to that event.
pub(super) async fn require_gate(
    State(s): State<Server>,
    Path(params): Path<std::collections::HashMap<String, String>>,
    headers: HeaderMap,
    mut req: Request,
    next: Next,
) -> Response {
    let given = bearer(&headers);
    let caller = if is_admin(&s, given) {
        Caller::Admin
    } else if given.is_empty() {
        return unauthorized("a gate credential or the admin token is needed");
    } else {
        match s.credentials.lookup(&s, given).await {
            Ok(Some(d)) if params.get("eid").is_some_and(|e| e == d.eid.as_str()) => {
                Caller::Device(d)
            }
            Ok(Some(_)) => {
                return err(
                    StatusCode::FORBIDDEN,
                    "forbidden",
                    "this device belongs to another event",
                )
                .into_response();
            }
            Ok(None) => return unauthorized("unknown credential (pair the device again)"),
            Err(e) => return e.into_response(),
        }
    };
    req.extensions_mut().insert(caller);
    next.run(req).await
}
