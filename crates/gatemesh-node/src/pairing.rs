//! Spending a pairing code at the server (`POST /v1/pair`): what a gate receives (its mesh
//! certificate, the issuer keys, its uplink credential, all as `gatemesh-wire`'s [`Paired`]),
//! and how it is kept on disk. Shared by `gatemesh pair` and the desktop app's set-up.
//!
//! The gate reaches the server through a [`PairingLink`]: it pins the certificate the link
//! names ([`crate::edge`]) for pairing and for its uplink ever after, and it makes its mesh
//! key itself, sending only a signing request. A server presenting another certificate is
//! refused before anything is sent, and nothing is written.

use std::path::Path;

use anyhow::{Context, Result};
use gatemesh_mesh::pki::DeviceRequest;
use gatemesh_ticket::EventId;
pub use gatemesh_wire::Paired;
pub use gatemesh_wire::PairingLink;
use gatemesh_wire::{CertFingerprint, DeviceName, ErrorBody, PairRequest, Role};
use serde::{Deserialize, Serialize};

use crate::edge::EdgeError;

/// A spent pairing code: the server's answer, where the server is, and the device's own key.
pub struct Pairing {
    /// The server's base URL, as the gate will reach it.
    pub server: String,
    /// The server certificate the gate pinned.
    pub fingerprint: Option<CertFingerprint>,
    /// What the server gave.
    pub answer: Paired,
    request: DeviceRequest,
}

impl std::fmt::Debug for Pairing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pairing")
            .field("server", &self.server)
            .field("fingerprint", &self.fingerprint)
            .field("answer", &self.answer)
            .finish_non_exhaustive()
    }
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
            fingerprint: self.fingerprint,
            event: self.answer.event.clone(),
            name: self.answer.name.clone(),
            role: self.answer.role,
            token: self.answer.token.clone(),
        }
    }

    /// Writes the device identity into `dir` (the layout `gatemesh enroll` makes:
    /// `device.pem`, `device.key` readable by its owner only, `ca.pem`), after checking that
    /// it loads.
    pub fn write_identity(&self, dir: &Path) -> Result<()> {
        use gatemesh_mesh::pki::{CA_CERT, DEVICE_CERT, DEVICE_KEY};
        let identity = &self.answer.identity;
        let key_pem = self.request.key_pem();
        // Everything checked before anything is written.
        let creds = gatemesh_mesh::pki::Credentials::from_pem(&identity.device_pem, &key_pem)
            .context("reading the new certificate")?;
        let peer = gatemesh_mesh::identity::PeerId::from_cert(&creds.chain[0])
            .context("reading who the new certificate names")?;
        let ca = gatemesh_mesh::pki::ca_cert_from_pem(&identity.ca_pem)
            .context("reading the mesh CA")?;
        gatemesh_mesh::tls::MeshTrust::new(ca, &peer.event).context("reading the mesh CA")?;
        std::fs::create_dir_all(dir)?;
        gatemesh_mesh::fs::write_private(&dir.join(DEVICE_KEY), &key_pem)?;
        std::fs::write(dir.join(DEVICE_CERT), &identity.device_pem)?;
        std::fs::write(dir.join(CA_CERT), &identity.ca_pem)?;
        gatemesh_mesh::pki::Identity::load(dir).context("loading the new identity")?;
        Ok(())
    }
}

/// Why a pairing code could not be spent.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PairError {
    /// Not a server the gate may talk to (`http://` off loopback, `https://` without a pin,
    /// not a URL).
    #[error(transparent)]
    Server(#[from] EdgeError),
    /// The server presented a certificate other than the one the link names: someone may be
    /// in between. Nothing was sent.
    #[error(
        "{server} presented a TLS certificate other than the pairing link's {fingerprint}; \
         nothing was sent (check the link, or whether someone is in between)"
    )]
    WrongCertificate {
        /// The server's base URL.
        server: String,
        /// The certificate the link names.
        fingerprint: CertFingerprint,
    },
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
    #[error("the server did not pair this device: {message}")]
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
            Self::Server(_) | Self::WrongCertificate { .. } => false,
        }
    }
}

/// Spends the code of `link` at its server (`POST /v1/pair`), trusting only the certificate
/// it names, with a signing request for a key made here.
pub async fn pair(link: &PairingLink) -> Result<Pairing, PairError> {
    let server = link.server.trim_end_matches('/').to_owned();
    let client = crate::edge::client_builder(&server, link.fingerprint.as_ref())?
        .timeout(std::time::Duration::from_secs(30))
        .build()
        .map_err(|e| EdgeError::Tls(e.to_string()))?;
    let request = DeviceRequest::new().map_err(|e| EdgeError::Tls(e.to_string()))?;
    let failed = |source: reqwest::Error| match link.fingerprint {
        Some(fingerprint) if crate::edge::is_wrong_certificate(&source) => {
            PairError::WrongCertificate {
                server: server.clone(),
                fingerprint,
            }
        }
        _ => PairError::Unreachable {
            server: server.clone(),
            source,
        },
    };
    let response = client
        .post(format!("{server}/v1/pair"))
        .json(&PairRequest {
            code: link.code.clone(),
            csr: request.csr_pem.clone(),
        })
        .send()
        .await
        .map_err(failed)?;
    let status = response.status();
    if !status.is_success() {
        let body = response.json::<ErrorBody>().await.ok();
        return Err(PairError::Refused {
            status: status.as_u16(),
            code: body.as_ref().map(|b| b.error.code.clone()),
            message: body.map_or_else(|| status.to_string(), |b| b.error.message),
        });
    }
    let bytes = response.bytes().await.map_err(failed)?;
    let answer: Paired =
        serde_json::from_slice(&bytes).map_err(|e| PairError::BadAnswer(e.to_string()))?;
    if answer.keys.is_empty() {
        return Err(PairError::BadAnswer("it lacks the issuer keys".into()));
    }
    request
        .certified_by(&answer.identity.device_pem)
        .map_err(|e| PairError::BadAnswer(format!("the device certificate: {e}")))?;
    Ok(Pairing {
        server,
        fingerprint: link.fingerprint,
        answer,
        request,
    })
}

/// What `gatemesh pair` keeps beside the identity and the keys (`gate.json`, readable by its
/// owner only): where the server is and the certificate pinned for it, who this gate is, and
/// its credential.
#[derive(Clone, Serialize, Deserialize)]
pub struct GateFile {
    /// The server's base URL.
    pub server: String,
    /// The server's certificate, pinned at pairing (absent for a plain-HTTP loopback server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<CertFingerprint>,
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
            .field("fingerprint", &self.fingerprint)
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
