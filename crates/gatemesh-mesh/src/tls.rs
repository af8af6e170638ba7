//! rustls 0.23 configs (ring provider passed explicitly) with mesh-CA mutual TLS.
//!
//! Server side: WebPkiClientVerifier (chain to mesh CA, EKU clientAuth, mandatory) wrapped to
//! additionally require SAN URI event == ours.
//! Client side: custom ServerCertVerifier = webpki chain check to mesh CA (EKU serverAuth,
//! validity) + SAN URI event == ours; the TLS server name (we dial IPs) is ignored.

use std::sync::Arc;

use crate::Result;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::verify_server_cert_signed_by_trust_anchor;
use rustls::crypto::{
    CryptoProvider, WebPkiSupportedAlgorithms, verify_tls12_signature, verify_tls13_signature,
};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::{ParsedCertificate, WebPkiClientVerifier};
use rustls::{
    CertificateError, DigitallySignedStruct, DistinguishedName, OtherError, RootCertStore,
    SignatureScheme,
};
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};

use crate::identity::PeerId;
use crate::pki::Credentials;

/// The ALPN protocol both sides require; another wire version gets another name.
pub const ALPN: &[u8] = b"gatemesh/3";
/// Name passed to `Endpoint::connect`. Sent as SNI, otherwise ignored by MeshServerVerifier.
pub const SERVER_NAME: &str = "gatemesh.invalid";

/// The ring provider, passed explicitly everywhere (no process-default needed).
pub fn ring_provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Everything a node needs to authenticate peers.
#[derive(Clone, Debug)]
pub struct MeshTrust {
    /// The mesh CA: the only trust anchor.
    pub roots: Arc<RootCertStore>,
    /// The only event whose devices are accepted.
    pub event: String,
    /// ring, passed explicitly.
    pub provider: Arc<CryptoProvider>,
}

impl MeshTrust {
    /// Trusts devices of `event` whose certificates chain to `ca_cert`.
    pub fn new(ca_cert: CertificateDer<'static>, event: &str) -> Result<Self> {
        let mut roots = RootCertStore::empty();
        roots.add(ca_cert)?;
        Ok(Self {
            roots: Arc::new(roots),
            event: event.to_owned(),
            provider: ring_provider(),
        })
    }
}

#[derive(Debug)]
struct IdentityRejected(String);
impl std::fmt::Display for IdentityRejected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "gatemesh identity rejected: {}", self.0)
    }
}
impl std::error::Error for IdentityRejected {}

/// Called only after the chain has been verified. Maps to TLS alert bad_certificate.
fn check_event(end_entity: &CertificateDer<'_>, event: &str) -> Result<PeerId, rustls::Error> {
    let reject = |msg: String| {
        rustls::Error::InvalidCertificate(CertificateError::Other(OtherError(Arc::new(
            IdentityRejected(msg),
        ))))
    };
    let id = PeerId::from_cert(end_entity).map_err(|e| reject(e.to_string()))?;
    if id.event != event {
        // (do not echo our own event id: the reason string travels to the peer in CONNECTION_CLOSE)
        return Err(reject(format!(
            "peer event {:?} not accepted here",
            id.event
        )));
    }
    if id.role == crate::identity::Role::Server {
        // The server's identity signs what the server writes; it is no member of the mesh.
        return Err(reject(
            "the server's identity does not join the mesh".into(),
        ));
    }
    Ok(id)
}

// ---------------------------------------------------------------- client side (verifies server)

/// Checks a server's certificate: chain to the mesh CA, validity, EKU serverAuth, and this
/// event in the SAN URI. The server name is ignored: we dial by IP.
#[derive(Debug)]
pub(crate) struct MeshServerVerifier {
    roots: Arc<RootCertStore>,
    event: String,
    algs: WebPkiSupportedAlgorithms,
}

impl MeshServerVerifier {
    /// A verifier for `trust`.
    pub fn new(trust: &MeshTrust) -> Self {
        Self {
            roots: trust.roots.clone(),
            event: trust.event.clone(),
            algs: trust.provider.signature_verification_algorithms,
        }
    }
}

impl ServerCertVerifier for MeshServerVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>, // we dial by IP: identity comes from the SAN URI instead
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let cert = ParsedCertificate::try_from(end_entity)?;
        // Chain to mesh CA, validity period, EKU serverAuth (no revocation: add CRLs if needed).
        verify_server_cert_signed_by_trust_anchor(
            &cert,
            &self.roots,
            intermediates,
            now,
            self.algs.all,
        )?;
        check_event(end_entity, &self.event)?;
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.algs)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.algs)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algs.supported_schemes()
    }
}

// ---------------------------------------------------------------- server side (verifies client)

/// Checks a client's certificate, which is mandatory: chain to the mesh CA, EKU clientAuth,
/// and this event in the SAN URI.
#[derive(Debug)]
pub(crate) struct MeshClientVerifier {
    inner: Arc<dyn ClientCertVerifier>,
    event: String,
}

impl MeshClientVerifier {
    /// A verifier for `trust`.
    pub fn new(trust: &MeshTrust) -> Result<Self> {
        // builder_with_provider: no process-default provider needed. Client auth is mandatory
        // unless .allow_unauthenticated() is called.
        let inner = WebPkiClientVerifier::builder_with_provider(
            trust.roots.clone(),
            trust.provider.clone(),
        )
        .build()?;
        Ok(Self {
            inner,
            event: trust.event.clone(),
        })
    }
}

impl ClientCertVerifier for MeshClientVerifier {
    fn offer_client_auth(&self) -> bool {
        true
    }
    fn client_auth_mandatory(&self) -> bool {
        true
    }
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }
    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        self.inner
            .verify_client_cert(end_entity, intermediates, now)?; // chain + EKU clientAuth
        check_event(end_entity, &self.event)?;
        Ok(ClientCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

// ---------------------------------------------------------------- configs

/// TLS 1.3, ALPN [`ALPN`], a client certificate required and checked by
/// [`MeshClientVerifier`].
pub(crate) fn server_tls_config(
    trust: &MeshTrust,
    creds: &Credentials,
) -> Result<rustls::ServerConfig> {
    let mut cfg = rustls::ServerConfig::builder_with_provider(trust.provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_client_cert_verifier(Arc::new(MeshClientVerifier::new(trust)?))
        .with_single_cert(creds.chain.clone(), creds.key.clone_key())?;
    cfg.alpn_protocols = vec![ALPN.to_vec()];
    Ok(cfg)
}

/// TLS 1.3, ALPN [`ALPN`], the server checked by [`MeshServerVerifier`]; `creds = None`
/// only for the test of a client without a certificate.
pub(crate) fn client_tls_config(
    trust: &MeshTrust,
    creds: Option<&Credentials>,
) -> Result<rustls::ClientConfig> {
    let builder = rustls::ClientConfig::builder_with_provider(trust.provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .dangerous() // required for any custom ServerCertVerifier
        .with_custom_certificate_verifier(Arc::new(MeshServerVerifier::new(trust)));
    let mut cfg = match creds {
        Some(c) => builder.with_client_auth_cert(c.chain.clone(), c.key.clone_key())?,
        None => builder.with_no_client_auth(), // only used by the "no client cert" test
    };
    cfg.alpn_protocols = vec![ALPN.to_vec()];
    Ok(cfg)
}
