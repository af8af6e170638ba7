//! Revoking devices: the organizer's word that a device's mesh certificate no longer counts
//! (a stolen laptop, a gate that misbehaves), and re-pairing a name, which revokes the
//! certificate it held before. A revocation is signed with the event's mesh CA key (kept in
//! `mesh-ca/<eid>/`), stored under the next value of the change sequence, and sent to gates
//! in the manifest and the change stream; gates write it into their ledgers, so it reaches
//! gates with no uplink over the mesh. The device's credential stops working at once on
//! this server (its cache entry is dropped; other servers on the same database within their
//! 2 s cache, `CREDENTIAL_TTL`). A revoked device's records from its cut on, relayed in an
//! honest gate's journal, are not stored and are answered `revoked_device`.

use axum::{
    Json,
    body::Bytes,
    extract::{Path as UrlPath, State},
    http::StatusCode,
};
use gatemesh_ticket::EventId;
use gatemesh_wire::{CertFingerprint, DeviceName, Label, Note, Revocation, RevokeRequest, Revoked};

use super::{ApiError, EID, ErrorBody, auth::Caller, bad, blocking, err, event_id, known_event};
use crate::Server;

/// Revokes a device.
///
/// Every certificate the device was issued stops counting: gates refuse it at the mesh
/// handshake and close its connections, and its records dated from now (or from `since`)
/// are kept but do not count. Its credential stops working. The organizer's alone: a
/// device's credential gets 403.
#[utoipa::path(
    post, path = "/v1/events/{eid}/devices/{name}/revoke", tag = "organizer",
    operation_id = "revoke_device",
    params(
        ("eid" = String, Path, description = EID),
        ("name" = String, Path, description = "The device's name"),
    ),
    request_body(content = Option<RevokeRequest>, description = "Optional: why, and since when \
        its records are set aside"),
    responses(
        (status = 200, description = "The revocations made, as gates receive them",
            body = Revoked),
        (status = 400, description = "Bad input", body = ErrorBody),
        (status = 401, description = "No credential", body = ErrorBody),
        (status = 403, description = "A device's credential", body = ErrorBody),
        (status = 404, description = "No such event or device", body = ErrorBody),
        (status = 503, description = "The event's CA could not sign", body = ErrorBody),
    ),
    security(("admin" = [])),
)]
pub(crate) async fn revoke(
    State(s): State<Server>,
    caller: axum::Extension<Caller>,
    UrlPath((eid, name)): UrlPath<(String, String)>,
    body: Bytes,
) -> Result<Json<Revoked>, ApiError> {
    if !matches!(caller.0, Caller::Admin) {
        return Err(err(
            StatusCode::FORBIDDEN,
            "forbidden",
            "only the organizer revokes devices",
        ));
    }
    let eid = event_id(&eid)?;
    let name = DeviceName::parse(&name)
        .ok_or_else(|| bad("a device name is 1-63 characters of A-Z a-z 0-9 . _ -"))?;
    let req: RevokeRequest = if body.iter().all(u8::is_ascii_whitespace) {
        RevokeRequest::default()
    } else {
        serde_json::from_slice(&body).map_err(|e| bad(format!("not a revocation: {e}")))?
    };
    known_event(&s, &eid).await?;
    let (e, n) = (eid.clone(), name.clone());
    let known = blocking(&s, move |st| st.gates(&e))
        .await?
        .iter()
        .any(|g| g.name == n);
    if !known {
        return Err(err(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("event {eid} has no device {name}"),
        ));
    }
    let revocations =
        revoke_certs(&s, &eid, &name, req.reason, req.since.map(|t| t.ms()), None).await?;
    Ok(Json(Revoked { revocations }))
}

/// Revokes every certificate of the device not yet revoked, but `keep` (the one just
/// issued, when it pairs again); without `keep` its credential stops working too. Returns
/// the revocations made.
pub(crate) async fn revoke_certs(
    s: &Server,
    eid: &EventId,
    name: &DeviceName,
    reason: Note,
    since_ms: Option<i64>,
    keep: Option<&str>,
) -> Result<Vec<Revocation>, ApiError> {
    let (e, n) = (eid.clone(), name.clone());
    let mut live = blocking(s, move |st| st.live_certs(&e, &n)).await?;
    live.retain(|(cert, _)| Some(cert.as_str()) != keep);
    let mut made = Vec::with_capacity(live.len());
    if !live.is_empty() {
        let signer = ca_signer(s, eid).await?;
        let at_ms = crate::store::now_ms();
        let by = Label::parse("organizer").ok_or_else(|| unavailable("the organizer's label"))?;
        for (cert, node) in &live {
            let (Some(cert), Some(node)) = (
                CertFingerprint::parse(cert),
                gatemesh_wire::NodeId::parse(node),
            ) else {
                tracing::error!("device {name} of {eid}: a stored certificate that does not read");
                continue;
            };
            let mut r = Revocation {
                node,
                name: name.clone(),
                cert,
                at_ms,
                since_ms,
                by: by.clone(),
                reason: reason.clone(),
                sig: None,
            };
            signer.sign(&mut r).map_err(unavailable)?;
            made.push(r);
        }
    }
    let rows = made
        .iter()
        .map(|r| {
            serde_json::to_string(r)
                .map(|json| (r.cert.to_string(), json))
                .map_err(|e| err(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()))
        })
        .collect::<Result<Vec<_>, ApiError>>()?;
    let credential = keep.is_none();
    let (e, n) = (eid.clone(), name.clone());
    let why = if credential {
        reason.to_string()
    } else {
        "paired again".to_owned()
    };
    if credential || !rows.is_empty() {
        blocking(s, move |st| {
            st.revoke(&e, &n, &rows, credential, "organizer", &why)
        })
        .await?;
    }
    // The credential replaced or revoked stops working here at once, not when its cache
    // entry expires.
    s.credentials.forget(eid, name);
    for r in &made {
        tracing::warn!("revoked device {name} of {eid} ({}, {})", r.node, r.cert);
    }
    Ok(made)
}

fn unavailable(e: impl std::fmt::Display) -> ApiError {
    tracing::error!("signing a revocation: {e}");
    err(
        StatusCode::SERVICE_UNAVAILABLE,
        "unavailable",
        "the event's mesh CA could not sign the revocation",
    )
}

/// The event's mesh CA as a signer of revocations, read from the data directory.
async fn ca_signer(s: &Server, eid: &EventId) -> Result<gatemesh_ledger::CaSigner, ApiError> {
    let (data, eid) = (s.data.clone(), eid.clone());
    tokio::task::spawn_blocking(move || -> anyhow::Result<gatemesh_ledger::CaSigner> {
        let dir = super::devices::mesh_ca(&data, &eid)?;
        let read = |f: &str| std::fs::read_to_string(dir.join(f));
        Ok(gatemesh_ledger::CaSigner::from_pem(
            &eid,
            &read(gatemesh_mesh::pki::CA_CERT)?,
            &read(gatemesh_mesh::pki::CA_KEY)?,
        )?)
    })
    .await
    .map_err(unavailable)?
    .map_err(unavailable)
}
