//! The gates' LAN mesh.
//!
//! - Secrets on disk ([`fs`]): every key and credential gatemesh keeps is written owner-only.
//! - Enrollment ([`pki`]): the event's mesh CA (P-256) signs one certificate per device,
//!   naming event, role and device in a SAN URI `gatemesh://EVENT/ROLE/NAME`.
//! - Transport ([`net`]): QUIC (quinn) with mutual TLS (rustls, ring): both sides check that
//!   the other's certificate chains to the event's CA *and* names this event, in the TLS
//!   handshake itself ([`tls`]). ALPN `gatemesh/3`, keep-alive, length-prefixed frames with a
//!   size bound.
//! - Sync sessions ([`session`]): one bidirectional stream per connection carrying Automerge
//!   sync messages, pushed whenever the local ledger changes. The ledger stays with its owner
//!   (the gate's writer thread); a session asks for and hands over messages through a
//!   [`session::SyncPort`]. A peer that sends garbage loses its connection, nobody else.
//! - Revocation ([`revoked`]): certificates the event's CA revoked are refused right after
//!   the handshake, and a connection to a peer is closed the moment it is revoked.
//! - Discovery ([`discovery`]): mDNS, started only by [`session::Mesh::start`] when
//!   [`session::MeshConfig::discovery`] asks for it.
//!
//! Enrolling a gate under a fresh mesh CA, and reading its identity back from its
//! certificate (no network):
//!
//! ```
//! use gatemesh_mesh::{
//!     identity::{PeerId, Role},
//!     pki::{Credentials, MeshCa, create_ca},
//! };
//!
//! let ca = create_ca("ROCK-2026", 30).unwrap();
//! let ca = MeshCa::from_pem(&ca.cert_pem, &ca.key_pem).unwrap();
//! let gate = PeerId::new("ROCK-2026", Role::Gate, "north-1");
//! let device = ca.enroll(&gate, 30).unwrap();
//!
//! let creds = Credentials::from_device(&device).unwrap();
//! assert_eq!(PeerId::from_cert(&creds.chain[0]).unwrap(), gate);
//! assert_eq!(gate.uri(), "gatemesh://ROCK-2026/gate/north-1");
//! ```
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![warn(missing_docs)]

pub mod discovery;
pub mod fs;
pub mod identity;
pub mod net;
pub mod pki;
pub mod revoked;
pub mod session;
pub mod tls;

/// Everything that can go wrong in the mesh, by cause.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MeshError {
    /// Something that breaks a rule of the mesh: an identity or SAN URI, a CA whose key does
    /// not match it, a peer's identity, a refused sync message, a stopped ledger. The text
    /// says which.
    #[error("invalid: {0}")]
    Invalid(String),
    /// The ledger refused a peer's sync message (it breaks the ledger's rules, or does not
    /// decode): the peer loses its connection and is listed in [`session::Mesh::refusals`].
    #[error("refused sync message: {0}")]
    Refused(String),
    /// Making or signing a certificate failed.
    #[error("certificate: {0}")]
    Certificate(#[from] rcgen::Error),
    /// A certificate or key that is not the PEM expected.
    #[error("PEM: {0}")]
    Pem(#[from] rustls_pki_types::pem::Error),
    /// rustls refused a certificate, a key or a configuration.
    #[error("TLS: {0}")]
    Tls(#[from] rustls::Error),
    /// The client-certificate verifier could not be built from the trust anchors.
    #[error("TLS verifier: {0}")]
    Verifier(#[from] rustls::server::VerifierBuilderError),
    /// The TLS configuration offers no cipher suite QUIC can start with.
    #[error("QUIC configuration: {0}")]
    NoCipherSuite(#[from] quinn::crypto::rustls::NoInitialCipherSuite),
    /// A dial could not start (endpoint closing, address unusable).
    #[error("connecting: {0}")]
    Connect(#[from] quinn::ConnectError),
    /// A connection was refused, timed out, was lost or was closed.
    #[error("connection: {0}")]
    Connection(#[from] quinn::ConnectionError),
    /// Sending on a stream failed.
    #[error("sending: {0}")]
    Write(#[from] quinn::WriteError),
    /// Receiving on a stream failed.
    #[error("receiving: {0}")]
    Read(#[from] quinn::ReadExactError),
    /// A frame that breaks the framing.
    #[error("framing: {0}")]
    Frame(#[from] net::FrameError),
    /// A stream used after it was closed.
    #[error("stream: {0}")]
    Stream(#[from] quinn::ClosedStream),
    /// A file, socket or stream read failed.
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
}

/// A result whose error is a [`MeshError`] unless said otherwise.
pub type Result<T, E = MeshError> = std::result::Result<T, E>;

macro_rules! invalid {
    ($($arg:tt)*) => { $crate::MeshError::Invalid(format!($($arg)*)) };
}
pub(crate) use invalid;
