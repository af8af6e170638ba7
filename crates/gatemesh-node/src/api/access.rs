//! Who may call the local API: the gate operator's token (`api.token` in the data
//! directory), asked for on every request; a `Host` that names the address the API is bound
//! to (a page under a rebound DNS name is refused); no browser `Origin` but the app's own;
//! and a body of its proper content type.

use std::{
    net::{IpAddr, SocketAddr},
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
    sync::Arc,
};

use axum::{
    extract::{Request, State},
    http::{HeaderMap, HeaderValue, Method, StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
};
use rand_core::{OsRng, RngCore};
use sha2::{Digest, Sha256};

use super::ApiError;

/// The token's file in a gate's data directory.
pub const TOKEN_FILE: &str = "api.token";

/// The origins of the desktop app's own pages (Tauri's webview on Linux and macOS, and on
/// Windows over http and https).
pub const APP_ORIGINS: [&str; 3] = [
    "tauri://localhost",
    "http://tauri.localhost",
    "https://tauri.localhost",
];

/// Why a gate's API token could not be read or made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    #[error("reading {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Write(#[from] gatemesh_mesh::fs::SecretFileError),
    #[error(
        "{} is readable by others (mode {mode:o}): `chmod 600` it, or delete it for a new token",
        path.display()
    )]
    Exposed { path: PathBuf, mode: u32 },
    #[error(
        "{} holds no API token (32 to 128 characters of A-Z a-z 0-9 - _): delete it for a new one",
        path.display()
    )]
    Malformed { path: PathBuf },
}

/// The gate operator's key to the local API: whoever holds it may do all the API offers.
#[derive(Clone)]
pub struct ApiToken {
    secret: Arc<str>,
    path: PathBuf,
}

impl std::fmt::Debug for ApiToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the token itself: where it is.
        f.debug_struct("ApiToken")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

fn well_formed(t: &str) -> bool {
    (32..=128).contains(&t.len())
        && t.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

impl ApiToken {
    /// Where the token of the gate with data directory `data` is.
    pub fn path_in(data: &Path) -> PathBuf {
        data.join(TOKEN_FILE)
    }

    /// The token in `data`, made (256 random bits, hex, owner-only) on first start and kept
    /// across restarts. An empty file (a first start cut off before the write) gets a new one.
    pub fn load_or_create(data: &Path) -> Result<Self, TokenError> {
        let path = Self::path_in(data);
        let read = |source| TokenError::Read {
            path: path.clone(),
            source,
        };
        let text = match std::fs::read_to_string(&path) {
            Ok(text) if !text.trim().is_empty() => {
                let mode = std::fs::metadata(&path).map_err(read)?.permissions().mode() & 0o777;
                if mode & 0o077 != 0 {
                    return Err(TokenError::Exposed { path, mode });
                }
                text
            }
            Ok(_) => Self::make(&path, true)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(data).map_err(read)?;
                Self::make(&path, false)?
            }
            Err(e) => return Err(read(e)),
        };
        let secret = text.trim();
        if !well_formed(secret) {
            return Err(TokenError::Malformed { path });
        }
        Ok(Self {
            secret: secret.into(),
            path,
        })
    }

    fn make(path: &Path, replace: bool) -> Result<String, TokenError> {
        let mut bytes = [0u8; 32];
        OsRng.fill_bytes(&mut bytes);
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let text = format!("{hex}\n");
        if replace {
            gatemesh_mesh::fs::write_private(path, &text)?;
        } else {
            gatemesh_mesh::fs::create_private(path, &text)?;
        }
        Ok(text)
    }

    /// The token, for a client that calls the API (`Authorization: Bearer <token>`).
    pub fn secret(&self) -> &str {
        &self.secret
    }

    /// The file it is kept in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether `given` is the token. Digests are compared, so the time taken says nothing of
    /// how much of `given` matches.
    fn matches(&self, given: &str) -> bool {
        let (a, b) = (
            Sha256::digest(given.as_bytes()),
            Sha256::digest(self.secret.as_bytes()),
        );
        a.iter()
            .zip(b.iter())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
    }
}

/// How the local API guards itself.
#[derive(Debug, Clone)]
pub struct ApiConfig {
    pub token: ApiToken,
    /// Browser origins whose pages may call the API (with the token); a request from any
    /// other page is refused. [`APP_ORIGINS`] by default.
    pub origins: Vec<String>,
}

impl ApiConfig {
    /// The token and the app's origins.
    pub fn new(token: ApiToken) -> Self {
        Self {
            token,
            origins: APP_ORIGINS.iter().map(|o| (*o).to_owned()).collect(),
        }
    }

    /// The token in `data` (made on first start) and the app's origins.
    pub fn for_data_dir(data: &Path) -> Result<Self, TokenError> {
        Ok(Self::new(ApiToken::load_or_create(data)?))
    }
}

/// Whether serving the API on `addr` reaches beyond this machine.
pub fn is_public(addr: &SocketAddr) -> bool {
    !addr.ip().is_loopback()
}

#[derive(Debug, Clone)]
pub(super) struct Guard {
    config: ApiConfig,
    bound: SocketAddr,
}

impl Guard {
    pub(super) fn new(config: ApiConfig, bound: SocketAddr) -> Self {
        Self { config, bound }
    }

    /// Whether `host` (a `Host` header) names the bound address: `localhost`, a loopback
    /// address or the bound address itself, with the bound port. On an unspecified address
    /// (0.0.0.0, ::) any IP literal with the port is taken: a rebinding page has a name,
    /// never an address, in its `Host`.
    fn host_ok(&self, host: &str) -> bool {
        let (name, port) = match host.rsplit_once(':') {
            Some((name, port)) if !port.contains(']') => match port.parse::<u16>() {
                Ok(p) => (name, p),
                Err(_) => return false,
            },
            _ => (host, 80),
        };
        if port != self.bound.port() {
            return false;
        }
        if name.eq_ignore_ascii_case("localhost") {
            return true;
        }
        let literal = name
            .strip_prefix('[')
            .and_then(|n| n.strip_suffix(']'))
            .unwrap_or(name);
        let Ok(ip) = literal.parse::<IpAddr>() else {
            return false;
        };
        // An IPv6 address in a Host is always bracketed.
        if ip.is_ipv6() && literal == name {
            return false;
        }
        ip.is_loopback() || ip == self.bound.ip() || self.bound.ip().is_unspecified()
    }

    fn origin_ok(&self, origin: &HeaderValue) -> bool {
        origin
            .to_str()
            .is_ok_and(|o| self.config.origins.iter().any(|allowed| allowed == o))
    }
}

fn refuse(status: StatusCode, code: &'static str, message: impl Into<String>) -> Response {
    ApiError {
        status,
        code,
        message: message.into(),
    }
    .into_response()
}

/// Every request: the `Host`, then the `Origin`, then the token. A preflight from the app's
/// own origin is answered (it carries no token by design).
pub(super) async fn guard(State(g): State<Arc<Guard>>, req: Request, next: Next) -> Response {
    let headers = req.headers();
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    if !host.is_some_and(|h| g.host_ok(h)) {
        return refuse(
            StatusCode::MISDIRECTED_REQUEST,
            "wrong_host",
            format!(
                "this gate's API answers to localhost:{port} or {bound}, not {host:?}",
                port = g.bound.port(),
                bound = g.bound,
                host = host.unwrap_or(""),
            ),
        );
    }
    let origin = headers.get(header::ORIGIN).cloned();
    if let Some(origin) = &origin {
        if !g.origin_ok(origin) {
            return refuse(
                StatusCode::FORBIDDEN,
                "forbidden_origin",
                format!(
                    "pages from {} may not call this gate's API",
                    String::from_utf8_lossy(origin.as_bytes())
                ),
            );
        }
        if req.method() == Method::OPTIONS {
            return with_cors(StatusCode::NO_CONTENT.into_response(), origin, true);
        }
    }
    if !g.config.token.matches(bearer(headers)) {
        return refuse(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "the gate's API token is needed: Authorization: Bearer <the token in api.token in the gate's data directory>",
        );
    }
    let response = next.run(req).await;
    match &origin {
        Some(origin) => with_cors(response, origin, false),
        None => response,
    }
}

fn bearer(headers: &HeaderMap) -> &str {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("")
}

fn with_cors(mut response: Response, origin: &HeaderValue, preflight: bool) -> Response {
    let h = response.headers_mut();
    h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
    h.insert(header::VARY, HeaderValue::from_static("origin"));
    if preflight {
        h.insert(
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static("GET, POST"),
        );
        h.insert(
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            HeaderValue::from_static("authorization, content-type"),
        );
    }
    response
}

/// The media type of a request's body, without its parameters, lower-cased.
pub(super) fn media_type(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::CONTENT_TYPE)?.to_str().ok()?;
    let essence = value.split(';').next().unwrap_or("").trim();
    Some(essence.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(bound: &str) -> Guard {
        let dir = tempfile::tempdir().unwrap();
        let token = ApiToken::load_or_create(dir.path()).unwrap();
        Guard::new(ApiConfig::new(token), bound.parse().unwrap())
    }

    #[test]
    fn hosts_that_name_the_bound_address() {
        let g = guard("127.0.0.1:7070");
        for ok in [
            "127.0.0.1:7070",
            "localhost:7070",
            "LocalHost:7070",
            "[::1]:7070",
        ] {
            assert!(g.host_ok(ok), "{ok}");
        }
        for bad in [
            "ads.example:7070",
            "ads.example",
            "localhost",
            "localhost:7071",
            "127.0.0.1",
            "10.0.0.5:7070",
            "::1:7070",
            "localhost.ads.example:7070",
            "127.0.0.1:7070:7070",
            "",
        ] {
            assert!(!g.host_ok(bad), "{bad}");
        }
        let public = guard("0.0.0.0:7070");
        assert!(public.host_ok("10.0.0.5:7070"));
        assert!(!public.host_ok("gate.example:7070"));
        let lan = guard("10.0.0.5:7070");
        assert!(lan.host_ok("10.0.0.5:7070"));
        assert!(!lan.host_ok("10.0.0.6:7070"));
    }

    #[test]
    fn the_token_is_owner_only_kept_and_checked_whole() {
        let dir = tempfile::tempdir().unwrap();
        let token = ApiToken::load_or_create(dir.path()).unwrap();
        let path = dir.path().join(TOKEN_FILE);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(token.secret().len(), 64);
        assert!(!format!("{token:?}").contains(token.secret()));
        let again = ApiToken::load_or_create(dir.path()).unwrap();
        assert_eq!(again.secret(), token.secret());
        assert!(token.matches(token.secret()));
        assert!(!token.matches(&token.secret()[..63]));
        assert!(!token.matches(""));
        let other = tempfile::tempdir().unwrap();
        assert_ne!(
            ApiToken::load_or_create(other.path()).unwrap().secret(),
            token.secret()
        );

        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(matches!(
            ApiToken::load_or_create(dir.path()),
            Err(TokenError::Exposed { .. })
        ));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::write(&path, "short\n").unwrap();
        assert!(matches!(
            ApiToken::load_or_create(dir.path()),
            Err(TokenError::Malformed { .. })
        ));
        std::fs::write(&path, "").unwrap();
        let fresh = ApiToken::load_or_create(dir.path()).unwrap();
        assert_ne!(fresh.secret(), token.secret());
    }
}
