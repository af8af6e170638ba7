//! Devices: enrollment by pairing code, per-device credentials, heartbeats and the gates
//! view.
//!
//! An organizer registers a device (`POST /v1/events/{eid}/devices` → a short pairing code,
//! good once for 15 minutes, and a pairing link holding the server's URL, the code and the
//! fingerprint of the server's TLS certificate). The supervisor pastes or scans the link into
//! the gate app (or `gatemesh pair --link`), which pins that certificate and calls
//! `POST /v1/pair` with a signing request for a key it made itself, and receives everything
//! the gate needs: its mesh certificate (under the event's mesh CA, which the server keeps),
//! the issuer keys, and its own credential for the uplink. No private key crosses the wire.
//! The server keeps only hashes of codes and credentials. A device's credential reaches only
//! its own event's gate endpoints.
//!
//! Wrong codes are limited per client address and per code tried ([`PairGuard`]), never for
//! everyone at once: a guesser locks out only itself.

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
/// Failed pairing attempts a client address (an IPv6 client's /64) may make in a minute, per
/// server process.
const FAILURES_PER_SOURCE: u32 = 10;
/// Failed attempts with one code (as normalized) in a minute, from anywhere.
const FAILURES_PER_CODE: u32 = 5;
/// Addresses and codes tracked at once; past that, expired windows are dropped, then all.
const TRACKED: usize = 10_000;
/// Validity of the mesh certificates the server issues when it knows no end of the event,
/// in days.
const DEVICE_CERT_DAYS: i64 = 30;
/// How long a device certificate outlives the end of its event.
const DEVICE_CERT_MARGIN: time::Duration = time::Duration::days(1);
/// How long an event's mesh CA (made by the server on first use) and the server's own
/// identity under it stay valid: a season, not ten years. Devices' certificates, the ones that
/// travel on laptops, end with the event (see `cert_end`); once the CA ends, no gate of the
/// event can join its mesh, while records signed under it stay checkable (the ledger checks a
/// record's signature and chain, not the clock).
pub(crate) const CA_DAYS: i64 = 400;

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

/// Recent failed pairing attempts, by client address and by code: a minute's window each.
#[derive(Debug, Default)]
pub(crate) struct PairGuard(Mutex<GuardState>);

#[derive(Debug, Default)]
struct GuardState {
    sources: HashMap<Source, Window>,
    codes: HashMap<String, Window>,
}

/// Who tried: an IPv4 address, an IPv6 /64 (one subscriber's), or unknown (the router
/// driven without a connection, as in tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Source {
    V4([u8; 4]),
    V6([u8; 8]),
    Unknown,
}

impl Source {
    fn of(addr: Option<std::net::IpAddr>) -> Self {
        match addr.map(|a| a.to_canonical()) {
            Some(std::net::IpAddr::V4(a)) => Self::V4(a.octets()),
            Some(std::net::IpAddr::V6(a)) => {
                let mut prefix = [0u8; 8];
                prefix.copy_from_slice(&a.octets()[..8]);
                Self::V6(prefix)
            }
            None => Self::Unknown,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Window {
    start: Instant,
    failures: u32,
}

const WINDOW: Duration = Duration::from_secs(60);

fn failures<K: std::hash::Hash + Eq>(map: &HashMap<K, Window>, key: &K) -> u32 {
    map.get(key)
        .filter(|w| w.start.elapsed() < WINDOW)
        .map_or(0, |w| w.failures)
}

fn count<K: std::hash::Hash + Eq>(map: &mut HashMap<K, Window>, key: K) {
    if map.len() >= TRACKED {
        map.retain(|_, w| w.start.elapsed() < WINDOW);
        if map.len() >= TRACKED {
            map.clear();
        }
    }
    let w = map.entry(key).or_insert(Window {
        start: Instant::now(),
        failures: 0,
    });
    if w.start.elapsed() >= WINDOW {
        *w = Window {
            start: Instant::now(),
            failures: 0,
        };
    }
    w.failures += 1;
}

impl PairGuard {
    /// Why this attempt is refused before it is looked at, if it is.
    fn blocked(&self, source: Option<std::net::IpAddr>, code: &str) -> Option<&'static str> {
        let Ok(state) = self.0.lock() else {
            return Some("the pairing limiter failed");
        };
        if failures(&state.sources, &Source::of(source)) >= FAILURES_PER_SOURCE {
            Some("too many wrong pairing codes from this address; wait a minute")
        } else if failures(&state.codes, &code.to_owned()) >= FAILURES_PER_CODE {
            Some("too many attempts with this pairing code; wait a minute")
        } else {
            None
        }
    }

    fn failed(&self, source: Option<std::net::IpAddr>, code: &str) {
        if let Ok(mut state) = self.0.lock() {
            count(&mut state.sources, Source::of(source));
            count(&mut state.codes, code.to_owned());
        }
    }
}

/// Device credentials seen recently, so the redemption path does not ask the database
/// every time. A revocation or a re-pairing drops the device's entries in the server that
/// made it at once; other servers on the same PostgreSQL keep theirs at most
/// [`CREDENTIAL_TTL`], so a revoked credential stops working everywhere within that (and
/// what the device wrote from its cut on does not count whenever it arrives).
pub(crate) const CREDENTIAL_TTL: Duration = Duration::from_secs(2);

#[derive(Debug, Default)]
pub(crate) struct CredentialCache(Mutex<HashMap<String, (Device, Instant)>>);

impl CredentialCache {
    /// Drops the device's entries: its credential was revoked.
    pub(crate) fn forget(&self, eid: &EventId, name: &DeviceName) {
        if let Ok(mut map) = self.0.lock() {
            map.retain(|_, (d, _)| !(&d.eid == eid && &d.name == name));
        }
    }

    pub(crate) async fn lookup(
        &self,
        server: &Server,
        token: &str,
    ) -> Result<Option<Device>, ApiError> {
        let key = hash(token);
        if let Ok(map) = self.0.lock()
            && let Some((device, at)) = map.get(&key)
            && at.elapsed() < CREDENTIAL_TTL
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
    gatemesh_mesh::pki::write_new_ca(&aside, eid.as_str(), CA_DAYS)?;
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
/// Returns its pairing code, good once for 15 minutes, and the pairing link (the server's URL,
/// the code and its TLS certificate's fingerprint). Asking again for the same name issues a
/// new code (a replaced laptop).
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
    let link = s.edge.as_ref().and_then(|edge| {
        let url = edge.url.as_deref()?;
        gatemesh_wire::PairingLink::new(url, &code, edge.fingerprint)
            .ok()
            .map(|l| l.to_string())
    });
    Ok((
        StatusCode::CREATED,
        Json(PairingCode {
            event: device.eid,
            name: device.name,
            role: device.role,
            code,
            expires_at: Timestamp::from_ms(expires_ms),
            link,
        }),
    )
        .into_response())
}

/// Pairs a device.
///
/// Spends a pairing code (the code is the secret) and returns the device's mesh certificate
/// for the key of its signing request, the issuer keys and its credential. The request is
/// checked before the code is looked up, and the code is spent only once the certificate is
/// issued: a failure on the server's side is logged and leaves the code good. The certificate
/// names the device the code was made for, whatever the request says, and lasts until a day
/// after the event's end (30 days when the event has no end).
#[utoipa::path(
    post, path = "/v1/pair", tag = "open", operation_id = "pair_device",
    request_body = PairRequest,
    responses(
        (status = 200, description = "Paired", body = Paired),
        (status = 400, description = "Not a pairing code, or not a P-256 signing request",
            body = ErrorBody),
        (status = 404, description = "No such code, or it expired or was used",
            body = ErrorBody),
        (status = 429, description = "Too many wrong codes from this address, or with this \
            code, in the last minute", body = ErrorBody),
        (status = 503, description = "The identity could not be issued", body = ErrorBody),
    ),
)]
pub(crate) async fn pair(
    State(s): State<Server>,
    client: Option<axum::Extension<axum::extract::ConnectInfo<super::ClientAddr>>>,
    Body(req): Body<PairRequest>,
) -> Result<Json<Paired>, ApiError> {
    let source = client.map(|c| (c.0).0.0.ip());
    let code = normalize_code(&req.code);
    if let Some(why) = s.pair_guard.blocked(source, &code) {
        return Err(err(StatusCode::TOO_MANY_REQUESTS, "too_many_attempts", why));
    }
    if code.len() != 10 {
        s.pair_guard.failed(source, &code);
        return Err(bad("a pairing code has ten characters, like 7K2QM-X9D4R"));
    }
    if let Err(e) = gatemesh_mesh::pki::check_request(&req.csr) {
        return Err(bad(format!(
            "csr is not a signing request for a P-256 key of the device's own: {e}"
        )));
    }
    // Look the code up, issue the certificate, and only then spend the code: a pairing that
    // fails on the server's side leaves the code good for another try.
    let code_hash = hash(&code);
    let h = code_hash.clone();
    let found = blocking(&s, move |st| st.pairing(&h, now_ms())).await?;
    let unknown = || {
        err(
            StatusCode::NOT_FOUND,
            "unknown_code",
            "no such pairing code, or it expired or was used: ask for a new one",
        )
    };
    let Some(device) = found else {
        s.pair_guard.failed(source, &code);
        return Err(unknown());
    };
    let id = device.eid.clone();
    let event = blocking(&s, move |st| st.event(&id)).await?;
    let not_after = cert_end(event.and_then(|e| e.ends_at).as_deref());
    let role = device.role;
    let data = s.data.clone();
    let (eid, name) = (device.eid.clone(), device.name.clone());
    let csr = req.csr;
    let issued =
        tokio::task::spawn_blocking(move || issue(&data, &eid, role, &name, &csr, not_after))
            .await
            .map_err(|e| err(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()))?
            .map_err(|e| {
                tracing::error!(
                    event = %device.eid, device = %device.name,
                    "pairing: issuing the mesh identity failed (the code stays good): {e:#}"
                );
                err(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "unavailable",
                    "could not issue the device's identity (the server's log says why); \
                     the pairing code is still good: try again",
                )
            })?;
    // Spending is one conditional update: of two requests racing with one code, one wins and
    // the other's certificate is never recorded nor handed out.
    let token = random_token();
    let token_hash = hash(&token);
    let spent = blocking(&s, move |st| st.pair(&code_hash, &token_hash, now_ms())).await?;
    let Some(spent) = spent.filter(|d| d == &device) else {
        return Err(unknown());
    };
    let device = spent;
    let (e, n, cert, node) = (
        device.eid.clone(),
        device.name.clone(),
        issued.cert.clone(),
        issued.node,
    );
    blocking(&s, move |st| st.record_cert(&e, &n, &cert, &node, now_ms())).await?;
    // Pairing a name again revokes the certificate it held before (a replaced laptop).
    super::revoke::revoke_certs(
        &s,
        &device.eid,
        &device.name,
        gatemesh_wire::Note::parse("paired again").unwrap_or_default(),
        None,
        Some(&issued.cert),
    )
    .await?;
    let identity = issued.identity;
    Ok(Json(Paired {
        event: device.eid,
        name: device.name,
        role: device.role,
        token,
        keys: super::issuer_keys(&s),
        identity,
    }))
}

/// Issues the device's mesh certificate for the key of `csr`, under the event's mesh CA
/// (made on first use).
fn issue(
    data: &Path,
    eid: &EventId,
    role: Role,
    name: &DeviceName,
    csr: &str,
    not_after: time::OffsetDateTime,
) -> anyhow::Result<Issued> {
    let ca_dir = mesh_ca(data, eid)?;
    let read = |f: &str| std::fs::read_to_string(ca_dir.join(f));
    let ca_pem = read(gatemesh_mesh::pki::CA_CERT)?;
    let ca = gatemesh_mesh::pki::MeshCa::from_pem(&ca_pem, &read(gatemesh_mesh::pki::CA_KEY)?)?;
    let id = gatemesh_mesh::identity::PeerId::new(eid.as_str(), role, name.as_str());
    let device_pem = ca.enroll_csr(&id, csr, not_after)?;
    // What a later revocation names: the certificate's hash and the node its key makes.
    let der = {
        use rustls_pki_types::{CertificateDer, pem::PemObject};
        CertificateDer::from_pem_slice(device_pem.as_bytes())?
    };
    let node = gatemesh_ledger::Trust::from_pem(&ca_pem, eid)?
        .device(der.as_ref())
        .map_err(|why| anyhow::anyhow!("the certificate just issued: {why}"))?
        .node;
    Ok(Issued {
        identity: MeshIdentity { device_pem, ca_pem },
        cert: gatemesh_wire::CertFingerprint::of(der.as_ref()).to_string(),
        node: node.to_string(),
    })
}

/// A device identity just issued, and what names its certificate.
struct Issued {
    identity: MeshIdentity,
    /// `sha256:HEX` of its DER.
    cert: String,
    node: String,
}

/// When a device certificate ends: a day after the event's end, or 30 days from now when the
/// event names no end (or its end does not read); never sooner than a day from now.
fn cert_end(ends_at: Option<&str>) -> time::OffsetDateTime {
    let now = time::OffsetDateTime::now_utc();
    let floor = now + time::Duration::days(1);
    match ends_at.and_then(|t| gatemesh_wire::time::parse_ms(t).ok()) {
        Some(ms) => {
            let end = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
                .unwrap_or(floor);
            (end + DEVICE_CERT_MARGIN).max(floor)
        }
        None => now + time::Duration::days(DEVICE_CERT_DAYS),
    }
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
    }

    #[test]
    fn device_certificates_last_for_the_event() {
        let now = time::OffsetDateTime::now_utc();
        let in_a_week = now + time::Duration::days(7);
        let end = cert_end(Some(&gatemesh_wire::time::format_ms(
            in_a_week.unix_timestamp() * 1000,
        )));
        assert_eq!(
            end.unix_timestamp(),
            (in_a_week + DEVICE_CERT_MARGIN).unix_timestamp()
        );
        let ended = cert_end(Some("2001-01-01T00:00:00Z"));
        assert!(ended > now && ended < now + time::Duration::days(2));
        let open = cert_end(None);
        assert!(open > now + time::Duration::days(29));
    }

    #[test]
    fn wrong_codes_from_one_address_stop_only_that_address() {
        let guard = PairGuard::default();
        let (bad, good) = (Some([127, 0, 0, 1].into()), Some([127, 0, 0, 2].into()));
        for i in 0..100 {
            let code = format!("{i:010}");
            if guard.blocked(bad, &code).is_none() {
                guard.failed(bad, &code);
            }
        }
        assert!(guard.blocked(bad, "AAAAAAAAAA").is_some());
        assert!(guard.blocked(good, "AAAAAAAAAA").is_none());
        // One code tried from everywhere is stopped, other codes are not.
        for i in 0..FAILURES_PER_CODE {
            guard.failed(Some([10, 0, 0, i as u8].into()), "BBBBBBBBBB");
        }
        assert!(guard.blocked(good, "BBBBBBBBBB").is_some());
        assert!(guard.blocked(good, "CCCCCCCCCC").is_none());
        // IPv6 clients count by /64.
        let v6 = |s: &str| Some(s.parse().unwrap());
        for i in 0..FAILURES_PER_SOURCE {
            guard.failed(v6(&format!("2001:db8::{i}")), &format!("D{i:09}"));
        }
        assert!(guard.blocked(v6("2001:db8::ffff"), "EEEEEEEEEE").is_some());
        assert!(guard.blocked(v6("2001:db8:1::1"), "EEEEEEEEEE").is_none());
        assert_eq!(normalize_code("o1lI0-abcde"), "0111".to_owned() + "0ABCDE");
    }
}
