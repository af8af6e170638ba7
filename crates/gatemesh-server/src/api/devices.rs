//! Devices: enrollment by pairing code, per-device credentials, heartbeats and the gates
//! view.
//!
//! An organizer registers a device (`POST /v1/events/{eid}/devices` → a short pairing code,
//! good once for 15 minutes). The supervisor types the code into the gate app (or
//! `gatemesh pair`), which calls `POST /v1/pair` and receives everything the gate needs: its
//! mesh identity (certificate and key under the event's mesh CA, which the server keeps), the
//! issuer keys, and its own credential for the uplink. The server keeps only hashes of codes
//! and credentials. A device's credential reaches only its own event's gate endpoints.

use std::{
    collections::HashMap,
    path::Path,
    sync::Mutex,
    time::{Duration, Instant},
};

use axum::{
    Json,
    extract::{Path as UrlPath, State},
    http::StatusCode,
    response::{IntoResponse, Response},
};
use gatemesh_ticket::EventId;
use gatemesh_wire::{
    DeviceName, GateStatus, Gates, Heartbeat, HeartbeatAck, MeshIdentity, NewDevice, PairRequest,
    Paired, PairingCode, Role, Timestamp,
};
use rand_core::{OsRng, RngCore};
use sha2::{Digest, Sha256};

use super::{
    ApiError, Body, EID, ErrorBody, auth::Caller, bad, blocking, err, event_id, known_event,
};
use crate::{Server, store::Device};

/// How long a pairing code is good for.
pub const CODE_LIFETIME: Duration = Duration::from_secs(15 * 60);
/// Failed pairing attempts allowed per minute (per server process), against guessing.
const PAIR_FAILURES_PER_MINUTE: u32 = 20;
/// Validity of the mesh certificates the server issues, in days.
const DEVICE_CERT_DAYS: i64 = 30;

/// Crockford base32 without I, L, O, U: unambiguous when read aloud or typed.
const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

fn random_code() -> String {
    let mut bytes = [0u8; 8];
    OsRng.fill_bytes(&mut bytes);
    let v = u64::from_be_bytes(bytes);
    // 50 bits in ten characters, shown as XXXXX-XXXXX.
    let chars: String = (0..10)
        .map(|i| ALPHABET[((v >> (5 * i)) & 0x1f) as usize] as char)
        .collect();
    format!("{}-{}", &chars[..5], &chars[5..])
}

/// The code as typed: case, dashes and spaces do not matter; O/I/L read as 0/1/1.
fn normalize_code(code: &str) -> String {
    code.chars()
        .filter(|c| !matches!(c, '-' | ' '))
        .map(|c| match c.to_ascii_uppercase() {
            'O' => '0',
            'I' | 'L' => '1',
            c => c,
        })
        .collect()
}

pub(crate) fn hash(secret: &str) -> String {
    Sha256::digest(secret.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn random_token() -> String {
    let mut bytes = [0u8; 32];
    OsRng.fill_bytes(&mut bytes);
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("gmd_{hex}")
}

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Recent failed pairing attempts.
#[derive(Debug, Default)]
pub(crate) struct PairGuard(Mutex<Vec<Instant>>);

impl PairGuard {
    fn blocked(&self) -> bool {
        let Ok(mut v) = self.0.lock() else {
            return true;
        };
        v.retain(|t| t.elapsed() < Duration::from_secs(60));
        v.len() as u32 >= PAIR_FAILURES_PER_MINUTE
    }

    fn failed(&self) {
        if let Ok(mut v) = self.0.lock() {
            v.push(Instant::now());
        }
    }
}

/// Device credentials seen recently, so the redemption path does not ask the database
/// every time. Entries live 30 s: a re-paired device's old credential stops working within
/// that.
#[derive(Debug, Default)]
pub(crate) struct CredentialCache(Mutex<HashMap<String, (Device, Instant)>>);

impl CredentialCache {
    pub(crate) async fn lookup(
        &self,
        server: &Server,
        token: &str,
    ) -> Result<Option<Device>, ApiError> {
        let key = hash(token);
        if let Ok(map) = self.0.lock()
            && let Some((device, at)) = map.get(&key)
            && at.elapsed() < Duration::from_secs(30)
        {
            return Ok(Some(device.clone()));
        }
        let k = key.clone();
        let found = blocking(server, move |st| st.device(&k)).await?;
        if let (Some(d), Ok(mut map)) = (&found, self.0.lock()) {
            if map.len() > 10_000 {
                map.clear();
            }
            map.insert(key, (d.clone(), Instant::now()));
        }
        Ok(found)
    }
}

/// The event's mesh CA directory in the data directory, created on first use. Creation is
/// atomic (built aside, then renamed), so servers sharing the directory agree on one CA.
pub(crate) fn mesh_ca(data: &Path, eid: &EventId) -> anyhow::Result<std::path::PathBuf> {
    let root = data.join("mesh-ca");
    let dir = root.join(eid.as_str());
    if dir.join(gatemesh_mesh::pki::CA_CERT).exists() {
        return Ok(dir);
    }
    std::fs::create_dir_all(&root)?;
    // Unique per attempt: servers in one process (and threads) may race to make it.
    let aside = root.join(format!(
        ".new-{}-{}-{}",
        eid,
        std::process::id(),
        OsRng.next_u64()
    ));
    let _ = std::fs::remove_dir_all(&aside);
    gatemesh_mesh::pki::write_new_ca(&aside, eid.as_str(), 3650)?;
    if std::fs::rename(&aside, &dir).is_err() {
        // Another server made it first.
        let _ = std::fs::remove_dir_all(&aside);
    }
    anyhow::ensure!(
        dir.join(gatemesh_mesh::pki::CA_CERT).exists(),
        "the mesh CA for {eid} could not be created"
    );
    Ok(dir)
}

/// Registers a device.
///
/// Returns its pairing code, good once for 15 minutes. Asking again for the same name issues
/// a new code (a replaced laptop).
#[utoipa::path(
    post, path = "/v1/events/{eid}/devices", tag = "organizer", operation_id = "create_device",
    params(("eid" = String, Path, description = EID)),
    request_body = NewDevice,
    responses(
        (status = 201, description = "The pairing code", body = PairingCode),
        (status = 400, description = "Bad input", body = ErrorBody),
        (status = 401, description = "No admin token", body = ErrorBody),
        (status = 404, description = "No such event", body = ErrorBody),
    ),
    security(("admin" = [])),
)]
pub(crate) async fn create(
    State(s): State<Server>,
    UrlPath(eid): UrlPath<String>,
    Body(req): Body<NewDevice>,
) -> Result<Response, ApiError> {
    let eid = event_id(&eid)?;
    if req.role == Role::Server {
        return Err(bad(
            "a device is a gate or an observer; the server's own identity is made by the server",
        ));
    }
    known_event(&s, &eid).await?;
    let code = random_code();
    let expires_ms = now_ms() + CODE_LIFETIME.as_millis() as i64;
    let device = Device {
        eid,
        name: req.name,
        role: req.role,
    };
    let d = device.clone();
    let code_hash = hash(&normalize_code(&code));
    blocking(&s, move |st| st.put_pairing(&d, &code_hash, expires_ms)).await?;
    Ok((
        StatusCode::CREATED,
        Json(PairingCode {
            event: device.eid,
            name: device.name,
            role: device.role,
            code,
            expires_at: Timestamp::from_ms(expires_ms),
        }),
    )
        .into_response())
}

/// Pairs a device.
///
/// Spends a pairing code (the code is the secret) and returns the device's mesh identity,
/// the issuer keys and its credential.
#[utoipa::path(
    post, path = "/v1/pair", tag = "open", operation_id = "pair_device",
    request_body = PairRequest,
    responses(
        (status = 200, description = "Paired", body = Paired),
        (status = 400, description = "Not a pairing code", body = ErrorBody),
        (status = 404, description = "No such code, or it expired or was used",
            body = ErrorBody),
        (status = 429, description = "Too many wrong codes in the last minute",
            body = ErrorBody),
        (status = 503, description = "The identity could not be issued", body = ErrorBody),
    ),
)]
pub(crate) async fn pair(
    State(s): State<Server>,
    Body(req): Body<PairRequest>,
) -> Result<Json<Paired>, ApiError> {
    if s.pair_guard.blocked() {
        return Err(err(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_attempts",
            "too many wrong pairing codes; wait a minute",
        ));
    }
    let code = normalize_code(&req.code);
    if code.len() != 10 {
        s.pair_guard.failed();
        return Err(bad("a pairing code has ten characters, like 7K2QM-X9D4R"));
    }
    let token = random_token();
    let (code_hash, token_hash) = (hash(&code), hash(&token));
    let device = blocking(&s, move |st| st.pair(&code_hash, &token_hash, now_ms())).await?;
    let Some(device) = device else {
        s.pair_guard.failed();
        return Err(err(
            StatusCode::NOT_FOUND,
            "unknown_code",
            "no such pairing code, or it expired or was used: ask for a new one",
        ));
    };
    let role = device.role;
    let data = s.data.clone();
    let (eid, name) = (device.eid.clone(), device.name.clone());
    let identity = tokio::task::spawn_blocking(move || -> anyhow::Result<MeshIdentity> {
        let ca_dir = mesh_ca(&data, &eid)?;
        let read = |f: &str| std::fs::read_to_string(ca_dir.join(f));
        let ca = gatemesh_mesh::pki::MeshCa::from_pem(
            &read(gatemesh_mesh::pki::CA_CERT)?,
            &read(gatemesh_mesh::pki::CA_KEY)?,
        )?;
        let id = gatemesh_mesh::identity::PeerId::new(eid.as_str(), role, name.as_str());
        let pem = ca.enroll(&id, DEVICE_CERT_DAYS)?;
        Ok(MeshIdentity {
            device_pem: pem.cert_pem,
            device_key: pem.key_pem,
            ca_pem: read(gatemesh_mesh::pki::CA_CERT)?,
        })
    })
    .await
    .map_err(|e| err(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()))?
    .map_err(|e| {
        tracing::error!("issuing a mesh identity: {e:#}");
        err(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "could not issue the device's identity",
        )
    })?;
    Ok(Json(Paired {
        event: device.eid,
        name: device.name,
        role: device.role,
        token,
        keys: super::issuer_keys(&s),
        identity,
    }))
}

/// A gate's heartbeat.
///
/// Its status, counts, peers and upload backlog, kept for the gates view (from a device, or
/// with the organizer's token and a `name`).
#[utoipa::path(
    post, path = "/v1/events/{eid}/heartbeat", tag = "gate",
    params(("eid" = String, Path, description = EID)),
    request_body = Heartbeat,
    responses(
        (status = 200, description = "Kept", body = HeartbeatAck),
        (status = 400, description = "Not a JSON object, or no name with the admin token",
            body = ErrorBody),
        (status = 401, description = "No credential", body = ErrorBody),
        (status = 403, description = "A device of another event", body = ErrorBody),
        (status = 404, description = "No such event", body = ErrorBody),
    ),
    security(("admin" = []), ("device" = [])),
)]
pub(crate) async fn heartbeat(
    State(s): State<Server>,
    caller: axum::Extension<Caller>,
    UrlPath(eid): UrlPath<String>,
    Body(body): Body<Heartbeat>,
) -> Result<Json<HeartbeatAck>, ApiError> {
    let eid = event_id(&eid)?;
    let device = match &caller.0 {
        Caller::Device(d) => d.clone(),
        Caller::Admin => {
            let Some(name) = body
                .name
                .as_ref()
                .and_then(|n| DeviceName::parse(n.as_str()))
            else {
                return Err(bad(
                    "a heartbeat sent with the organizer's token names its device (name: 1-63 \
                     characters of A-Z a-z 0-9 . _ -)",
                ));
            };
            Device {
                eid: eid.clone(),
                name,
                role: body.role.unwrap_or(Role::Gate),
            }
        }
    };
    known_event(&s, &eid).await?;
    let payload = serde_json::to_string(&body).map_err(|e| bad(e.to_string()))?;
    blocking(&s, move |st| st.heartbeat(&device, &payload, now_ms())).await?;
    Ok(Json(HeartbeatAck {
        ok: true,
        server_time: Timestamp::now(),
    }))
}

/// A gate that has not reported for this long shows as offline.
pub const OFFLINE_AFTER_MS: i64 = 30_000;

/// Every device of the event.
///
/// Online or not, each with its last heartbeat.
#[utoipa::path(
    get, path = "/v1/events/{eid}/gates", tag = "organizer", operation_id = "list_gates",
    params(("eid" = String, Path, description = EID)),
    responses(
        (status = 200, description = "The devices", body = Gates),
        (status = 400, description = "Bad id", body = ErrorBody),
        (status = 401, description = "No admin token", body = ErrorBody),
        (status = 404, description = "No such event", body = ErrorBody),
    ),
    security(("admin" = [])),
)]
pub(crate) async fn gates(
    State(s): State<Server>,
    UrlPath(eid): UrlPath<String>,
) -> Result<Json<Gates>, ApiError> {
    let eid = event_id(&eid)?;
    known_event(&s, &eid).await?;
    let gates = blocking(&s, move |st| st.gates(&eid)).await?;
    let now = now_ms();
    let gates = gates
        .into_iter()
        .map(|g| GateStatus {
            online: g.last_seen_ms.is_some_and(|t| now - t < OFFLINE_AFTER_MS),
            last_seen: g.last_seen_ms.map(Timestamp::from_ms),
            name: g.name,
            role: g.role,
            paired: g.paired,
            heartbeat: g.heartbeat,
        })
        .collect();
    Ok(Json(Gates { gates }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_read_back_however_they_are_typed() {
        for _ in 0..100 {
            let code = random_code();
            assert_eq!(code.len(), 11);
            let typed = code.to_lowercase().replace('-', " ");
            assert_eq!(normalize_code(&typed), normalize_code(&code));
            assert_eq!(normalize_code(&code).len(), 10);
        }
        assert_eq!(normalize_code("o1lI0-abcde"), "0111".to_owned() + "0ABCDE");
    }
}
