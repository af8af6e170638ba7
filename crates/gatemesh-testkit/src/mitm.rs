//! A man in the middle on loopback: terminates TLS with a self-signed certificate of its own
//! and forwards what it decrypts to the real server over TLS (trusting anything, as an
//! attacker would). A client that pins the real server's certificate must refuse it.

use std::{net::SocketAddr, sync::Arc};

use rustls::{
    DigitallySignedStruct, SignatureScheme,
    client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier},
    pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime, pem::PemObject},
};

/// A running proxy; it stops when dropped.
#[derive(Debug)]
pub struct Mitm {
    /// Where clients reach it.
    pub addr: SocketAddr,
    /// TCP connections clients made to it.
    pub connections: Arc<std::sync::atomic::AtomicUsize>,
    /// Connections whose TLS handshake with a client completed: what a client that pins the
    /// real server never lets happen.
    pub intercepted: Arc<std::sync::atomic::AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Mitm {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Mitm {
    /// A proxy in front of the TLS server at `upstream`.
    pub async fn start(upstream: SocketAddr) -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let server = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.der().clone()],
                PrivateKeyDer::from_pem_slice(key.serialize_pem().as_bytes()).unwrap(),
            )
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server));
        let client = rustls::ClientConfig::builder()
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCert))
            .with_no_client_auth();
        let connector = tokio_rustls::TlsConnector::from(Arc::new(client));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let intercepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = intercepted.clone();
        let connections = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let accepted = connections.clone();
        let task = tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                accepted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let (acceptor, connector, count) =
                    (acceptor.clone(), connector.clone(), count.clone());
                tokio::spawn(async move {
                    let Ok(mut inside) = acceptor.accept(tcp).await else {
                        return;
                    };
                    count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Ok(up) = tokio::net::TcpStream::connect(upstream).await else {
                        return;
                    };
                    let name = ServerName::try_from("localhost").unwrap();
                    let Ok(mut outside) = connector.connect(name, up).await else {
                        return;
                    };
                    let _ = tokio::io::copy_bidirectional(&mut inside, &mut outside).await;
                });
            }
        });
        Self {
            addr,
            connections,
            intercepted,
            task,
        }
    }
}

#[derive(Debug)]
struct AnyCert;

impl ServerCertVerifier for AnyCert {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn verify_tls13_signature(
        &self,
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        rustls::crypto::ring::default_provider()
            .signature_verification_algorithms
            .supported_schemes()
    }
}
