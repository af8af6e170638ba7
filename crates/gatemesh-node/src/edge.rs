//! The gate's HTTP client for the central server: HTTPS with rustls (ring), trusting exactly
//! the certificate pinned at pairing and nothing else.
//!
//! The pin is the SHA-256 of the server's end-entity certificate, from the pairing link. The
//! verifier accepts a server whose certificate has that fingerprint — no CA, no name, no
//! expiry is consulted, because the pin came over a channel the organizer trusts (the link
//! on their screen) — and still checks the handshake signature with ring's algorithms, so
//! only the holder of that certificate's key can present it. Plain `http://` is allowed only
//! to a loopback address (tests, a demo, a proxy on the same machine).

use std::{net::IpAddr, sync::Arc};

use gatemesh_wire::CertFingerprint;
use rustls::{
    DigitallySignedStruct, SignatureScheme,
    client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier},
    crypto::{WebPkiSupportedAlgorithms, ring},
};
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};

/// Why a server URL or pin cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EdgeError {
    /// Not `http://HOST[:PORT]` or `https://HOST[:PORT]`.
    #[error("the server {0:?} is not an http(s)://HOST:PORT URL")]
    BadUrl(String),
    /// Plain HTTP to an address that is not loopback: credentials would cross the venue
    /// network in clear.
    #[error(
        "the server {0} is plain http:// on an address that is not loopback; pair again with \
         the server's https:// pairing link"
    )]
    PlainHttp(String),
    /// An `https://` server with no pinned certificate.
    #[error("the server {0} is https:// but no certificate fingerprint is pinned for it")]
    NoPin(String),
    /// The TLS set-up failed.
    #[error("setting up TLS: {0}")]
    Tls(String),
}

/// The host of `http(s)://HOST[:PORT][/…]`, brackets taken off an IPv6 literal.
fn host(url: &str) -> Option<(bool, &str)> {
    let (tls, rest) = match url.strip_prefix("https://") {
        Some(rest) => (true, rest),
        None => (false, url.strip_prefix("http://")?),
    };
    let authority = rest.split(['/', '?', '#']).next()?;
    if authority.contains('@') {
        return None;
    }
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next()?,
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    (!host.is_empty()).then_some((tls, host))
}

fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Checks that the gate may talk to `server` with `pin`: `https://` with a pin, or `http://`
/// on loopback only.
pub fn check_server(server: &str, pin: Option<&CertFingerprint>) -> Result<(), EdgeError> {
    match host(server) {
        None => Err(EdgeError::BadUrl(server.to_owned())),
        Some((true, _)) if pin.is_none() => Err(EdgeError::NoPin(server.to_owned())),
        Some((false, h)) if !is_loopback(h) => Err(EdgeError::PlainHttp(server.to_owned())),
        Some(_) => Ok(()),
    }
}

/// A client builder for `server` that trusts only `pin` (after [`check_server`]). The
/// caller adds its timeouts.
pub fn client_builder(
    server: &str,
    pin: Option<&CertFingerprint>,
) -> Result<reqwest::ClientBuilder, EdgeError> {
    check_server(server, pin)?;
    pinned_builder(pin.copied())
}

/// A client builder trusting exactly the certificate `pin` names (with `None`, no TLS
/// server at all: for plain HTTP). No URL check: for tests and harnesses that talk to a
/// server they started.
pub fn pinned_builder(pin: Option<CertFingerprint>) -> Result<reqwest::ClientBuilder, EdgeError> {
    Ok(reqwest::Client::builder()
        .tls_backend_preconfigured(tls_config(pin)?)
        .https_only(pin.is_some()))
}

/// The rustls configuration of [`pinned_builder`]: ring, TLS 1.2 and 1.3, the pinned
/// verifier.
pub fn tls_config(pin: Option<CertFingerprint>) -> Result<rustls::ClientConfig, EdgeError> {
    let provider = Arc::new(ring::default_provider());
    let algorithms = provider.signature_verification_algorithms;
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| EdgeError::Tls(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(Pinned { pin, algorithms }))
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// Whether `e` is the pinned verifier refusing the server's certificate.
pub fn is_wrong_certificate(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut at = Some(e);
    while let Some(e) = at {
        if let Some(rustls::Error::InvalidCertificate(_)) = e.downcast_ref() {
            return true;
        }
        // An io::Error's source() skips the error it wraps: look inside it instead.
        at = match e
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
        {
            Some(inner) => Some(inner as &(dyn std::error::Error + 'static)),
            None => e.source(),
        };
    }
    false
}

/// Accepts exactly the pinned end-entity certificate.
#[derive(Debug)]
struct Pinned {
    pin: Option<CertFingerprint>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let presented = CertFingerprint::of(end_entity);
        if self.pin == Some(presented) {
            Ok(ServerCertVerified::assertion())
        } else {
            tracing::warn!(
                "the server presented certificate {presented}, not the pinned {:?}",
                self.pin
            );
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::ApplicationVerificationFailure,
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_only_on_loopback_and_https_only_pinned() {
        let pin = CertFingerprint::of(b"cert");
        for ok in [
            "http://127.0.0.1:8080",
            "http://127.9.9.9",
            "http://localhost:1/",
            "http://[::1]:8080",
        ] {
            assert_eq!(check_server(ok, None), Ok(()), "{ok}");
        }
        for (bad, pin) in [
            ("http://10.0.0.5:8080", None),
            ("http://10.0.0.5:8080", Some(&pin)),
            ("http://192.168.1.2", None),
            ("http://gate-server.local:80", None),
            ("http://[fe80::1]:80", None),
            ("http://127.0.0.1.evil.example:80", None),
            ("http://user@127.0.0.1:80", None),
            ("https://10.0.0.5:8443", None),
            ("ftp://127.0.0.1", None),
            ("127.0.0.1:8080", None),
            ("http://", None),
        ] {
            assert!(check_server(bad, pin).is_err(), "{bad}");
        }
        assert_eq!(check_server("https://10.0.0.5:8443", Some(&pin)), Ok(()));
        assert!(matches!(
            check_server("http://10.0.0.5:8080", None),
            Err(EdgeError::PlainHttp(_))
        ));
    }
}
