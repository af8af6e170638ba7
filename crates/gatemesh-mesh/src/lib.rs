//! The gates' LAN mesh.
//!
//! - Secrets on disk ([`fs`]): every key and credential gatemesh keeps is written owner-only.
//! - Enrollment ([`pki`]): the event's mesh CA (P-256) signs one certificate per device,
//!   naming event, role and device in a SAN URI `gatemesh://EVENT/ROLE/NAME`.
//! - Transport ([`net`]): QUIC (quinn) with mutual TLS (rustls, ring): both sides check that
//!   the other's certificate chains to the event's CA *and* names this event, in the TLS
//!   handshake itself ([`tls`]). ALPN `gatemesh/1`, keep-alive, length-prefixed frames with a
//!   size bound.
//! - Sync sessions ([`session`]): one bidirectional stream per connection carrying Automerge
//!   sync messages, pushed whenever the local ledger changes. The ledger stays with its owner
//!   (the gate's writer thread); a session asks for and hands over messages through a
//!   [`session::SyncPort`]. A peer that sends garbage loses its connection, nobody else.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod discovery;
pub mod fs;
pub mod identity;
pub mod net;
pub mod pki;
pub mod session;
pub mod tls;

/// Everything that can go wrong in the mesh, by cause.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MeshError {
    #[error("invalid: {0}")]
    Invalid(String),
    #[error("certificate: {0}")]
    Certificate(#[from] rcgen::Error),
    #[error("PEM: {0}")]
    Pem(#[from] rustls_pki_types::pem::Error),
    #[error("TLS: {0}")]
    Tls(#[from] rustls::Error),
    #[error("TLS verifier: {0}")]
    Verifier(#[from] rustls::server::VerifierBuilderError),
    #[error("QUIC configuration: {0}")]
    NoCipherSuite(#[from] quinn::crypto::rustls::NoInitialCipherSuite),
    #[error("connecting: {0}")]
    Connect(#[from] quinn::ConnectError),
    #[error("connection: {0}")]
    Connection(#[from] quinn::ConnectionError),
    #[error("sending: {0}")]
    Write(#[from] quinn::WriteError),
    #[error("receiving: {0}")]
    Read(#[from] quinn::ReadExactError),
    #[error("framing: {0}")]
    Frame(#[from] net::FrameError),
    #[error("stream: {0}")]
    Stream(#[from] quinn::ClosedStream),
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
}

pub type Result<T, E = MeshError> = std::result::Result<T, E>;

macro_rules! invalid {
    ($($arg:tt)*) => { $crate::MeshError::Invalid(format!($($arg)*)) };
}
pub(crate) use invalid;
