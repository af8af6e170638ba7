//! Spending a pairing code at the server (`POST /v1/pair`): what a gate receives (its mesh
//! identity, the issuer keys, its uplink credential, all as `gatemesh-wire`'s [`Paired`]),
//! and how it is kept on disk. Shared by `gatemesh pair` and the desktop app's set-up.

use std::path::Path;

use anyhow::{Context, Result};
use gatemesh_ticket::EventId;
pub use gatemesh_wire::Paired;
use gatemesh_wire::{DeviceName, ErrorBody, MeshIdentity, PairRequest, Role};
use serde::{Deserialize, Serialize};

/// A spent pairing code: the server's answer and where the server is.
#[derive(Debug, Clone)]
pub struct Pairing {
    /// The server's base URL, as the gate will reach it.
    pub server: String,
    /// What the server gave.
    pub answer: Paired,
}

impl Pairing {
    /// The issuer keys, SPKI PEM.
    pub fn issuer_pems(&self) -> Vec<String> {
        self.answer.keys.iter().map(|k| k.pem.clone()).collect()
    }

    /// What the gate keeps of it besides its identity and keys.
    pub fn gate_file(&self) -> GateFile {
        GateFile {
            server: self.server.clone(),
            event: self.answer.event.clone(),
            name: self.answer.name.clone(),
            role: self.answer.role,
            token: self.answer.token.clone(),
        }
    }
}

/// Why a pairing code could not be spent.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PairError {
    /// The server could not be reached, or stopped answering.
    #[error("reaching {server}: {source}")]
    Unreachable {
        /// The server's base URL.
        server: String,
        /// What the HTTP client saw.
        #[source]
        source: reqwest::Error,
    },
    /// The server answered with an error (its `{code, message}`).
    #[error("the server refused the code: {message}")]
    Refused {
        /// The HTTP status.
        status: u16,
        /// The server's error code (`unknown_code`, `too_many_attempts`, …), when it sent one.
        code: Option<String>,
        /// For people.
        message: String,
    },
    /// What came back is not a pairing answer.
    #[error("the server's answer is not a pairing: {0}")]
    BadAnswer(String),
}

impl PairError {
    /// The server is away or failing (try again later), rather than refusing this code.
    pub fn is_unavailable(&self) -> bool {
        match self {
            Self::Unreachable { .. } | Self::BadAnswer(_) => true,
            Self::Refused { status, .. } => *status >= 500,
        }
    }
}

/// Spends `code` at `server` (`POST /v1/pair`).
pub async fn pair(server: &str, code: &str) -> Result<Pairing, PairError> {
    let server = server.trim_end_matches('/').to_owned();
    let unreachable = |source| PairError::Unreachable {
        server: server.clone(),
        source,
    };
    let response = reqwest::Client::new()
        .post(format!("{server}/v1/pair"))
        .timeout(std::time::Duration::from_secs(30))
        .json(&PairRequest {
            code: code.to_owned(),
        })
        .send()
        .await
        .map_err(unreachable)?;
    let status = response.status();
    if !status.is_success() {
        let body = response.json::<ErrorBody>().await.ok();
        return Err(PairError::Refused {
            status: status.as_u16(),
            code: body.as_ref().map(|b| b.error.code.clone()),
            message: body.map_or_else(|| status.to_string(), |b| b.error.message),
        });
    }
    let bytes = response.bytes().await.map_err(unreachable)?;
    let answer: Paired =
        serde_json::from_slice(&bytes).map_err(|e| PairError::BadAnswer(e.to_string()))?;
    if answer.keys.is_empty() {
        return Err(PairError::BadAnswer("it lacks the issuer keys".into()));
    }
    Ok(Pairing { server, answer })
}

/// Writes the device identity into `dir` (the layout `gatemesh enroll` makes; the key
/// readable by its owner only) and checks that it loads.
pub fn write_identity(dir: &Path, identity: &MeshIdentity) -> Result<()> {
    use gatemesh_mesh::pki::{CA_CERT, DEVICE_CERT, DEVICE_KEY};
    std::fs::create_dir_all(dir)?;
    gatemesh_mesh::fs::write_private(&dir.join(DEVICE_KEY), &identity.device_key)?;
    std::fs::write(dir.join(DEVICE_CERT), &identity.device_pem)?;
    std::fs::write(dir.join(CA_CERT), &identity.ca_pem)?;
    gatemesh_mesh::pki::Identity::load(dir).context("loading the new identity")?;
    Ok(())
}

/// What `gatemesh pair` keeps beside the identity and the keys (`gate.json`, readable by its
/// owner only): where the server is, who this gate is, and its credential.
#[derive(Clone, Serialize, Deserialize)]
pub struct GateFile {
    /// The server's base URL.
    pub server: String,
    /// The gate's event.
    pub event: EventId,
    /// The gate's device name.
    pub name: DeviceName,
    /// What it is.
    pub role: Role,
    /// Its uplink credential.
    pub token: String,
}

impl std::fmt::Debug for GateFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GateFile")
            .field("server", &self.server)
            .field("event", &self.event)
            .field("name", &self.name)
            .field("role", &self.role)
            .finish_non_exhaustive()
    }
}

impl GateFile {
    /// Its name in a paired directory.
    pub const NAME: &str = "gate.json";

    /// Reads `dir/gate.json`.
    pub fn load(dir: &Path) -> Result<Self> {
        let path = dir.join(Self::NAME);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {} (made by `gatemesh pair`)", path.display()))?;
        serde_json::from_str(&text).with_context(|| format!("reading {}", path.display()))
    }

    /// Writes `dir/gate.json`, which must not exist yet.
    pub fn create(&self, dir: &Path) -> Result<()> {
        gatemesh_mesh::fs::create_private(
            &dir.join(Self::NAME),
            &serde_json::to_string_pretty(self)?,
        )?;
        Ok(())
    }
}
