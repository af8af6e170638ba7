//! The server's TLS: its certificate (self-signed on first run and kept in the data
//! directory, or one from a real CA), rustls with ring, and a listener that completes each
//! handshake off the accept loop.
//!
//! Devices do not check the certificate against any CA: they pin its SHA-256 fingerprint,
//! which the pairing link carries ([`gatemesh_wire::PairingLink`]). So the self-signed
//! certificate's names do not matter to them, and replacing the certificate (a new
//! `--tls-cert`, a deleted `tls/` directory) means pairing every device again.

use std::{net::SocketAddr, path::Path, sync::Arc, time::Duration};

use anyhow::{Context, Result};
use gatemesh_wire::CertFingerprint;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::{TlsAcceptor, server::TlsStream};

/// The directory of the self-signed certificate, in the data directory.
pub const TLS_DIR: &str = "tls";
/// Its certificate, PEM.
pub const TLS_CERT: &str = "cert.pem";
/// Its private key, PEM (owner-only).
pub const TLS_KEY: &str = "key.pem";

/// A handshake that has not finished by then is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Handshakes under way at once; more wait in the kernel's accept queue.
const HANDSHAKES: usize = 512;

/// The certificate and key the server presents.
#[derive(Clone)]
pub struct TlsIdentity {
    chain: Vec<CertificateDer<'static>>,
    key: Arc<PrivateKeyDer<'static>>,
    fingerprint: CertFingerprint,
}

impl std::fmt::Debug for TlsIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsIdentity")
            .field("fingerprint", &self.fingerprint)
            .finish_non_exhaustive()
    }
}

impl TlsIdentity {
    /// The self-signed certificate in `data/tls/`, made on first use (ECDSA P-256, for
    /// `localhost`, 127.0.0.1 and ::1, valid ten years; the key owner-only). Creation is
    /// atomic (built aside, then renamed), so servers sharing the directory present one
    /// certificate.
    pub fn self_signed(data: &Path) -> Result<Self> {
        let dir = data.join(TLS_DIR);
        if !dir.join(TLS_CERT).exists() {
            let aside = data.join(format!(".new-tls-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&aside);
            std::fs::create_dir_all(&aside)
                .with_context(|| format!("creating {}", aside.display()))?;
            let (cert, key) = make_self_signed()?;
            gatemesh_mesh::fs::create_private(&aside.join(TLS_KEY), &key)?;
            std::fs::write(aside.join(TLS_CERT), cert)?;
            if std::fs::rename(&aside, &dir).is_err() {
                // Another server made it first.
                let _ = std::fs::remove_dir_all(&aside);
            }
        }
        Self::from_files(&dir.join(TLS_CERT), &dir.join(TLS_KEY))
    }

    /// A certificate chain (the server's own first) and its key, PEM files.
    pub fn from_files(cert: &Path, key: &Path) -> Result<Self> {
        let read = |p: &Path| {
            std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))
        };
        Self::from_pem(&read(cert)?, &read(key)?)
            .with_context(|| format!("the TLS certificate {}", cert.display()))
    }

    /// A certificate chain and key, PEM text; the key must be the certificate's.
    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<Self> {
        let chain = CertificateDer::pem_slice_iter(cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .context("reading the certificate PEM")?;
        let first = chain.first().context("no certificate in the PEM")?;
        let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).context("reading the key")?;
        let fingerprint = CertFingerprint::of(first);
        let identity = Self {
            chain,
            key: Arc::new(key),
            fingerprint,
        };
        // Refuses a key that is not the certificate's, now rather than at the first handshake.
        identity.server_config()?;
        Ok(identity)
    }

    /// What a device pins: the SHA-256 of the server's certificate.
    pub fn fingerprint(&self) -> CertFingerprint {
        self.fingerprint
    }

    fn server_config(&self) -> Result<Arc<rustls::ServerConfig>> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(self.chain.clone(), self.key.clone_key())
            .context("the key is not the certificate's")?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}

fn make_self_signed() -> Result<(String, String)> {
    use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair, PKCS_ECDSA_P256_SHA256};
    let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
    let mut params =
        CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into(), "::1".into()])?;
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, "gatemesh server");
    dn.push(DnType::OrganizationName, "gatemesh");
    params.distinguished_name = dn;
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - time::Duration::hours(1);
    params.not_after = now + time::Duration::days(3650);
    let cert = params.self_signed(&key)?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// Accepts TCP connections and hands on those whose TLS handshake completed; each handshake
/// runs on its own task, so a slow or silent client holds up no one.
#[derive(Debug)]
pub struct TlsListener {
    ready: tokio::sync::mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
}

impl TlsListener {
    /// Serves TLS with `identity` on `listener`.
    pub fn new(listener: TcpListener, identity: &TlsIdentity) -> Result<Self> {
        let local = listener.local_addr()?;
        let acceptor = TlsAcceptor::from(identity.server_config()?);
        let (tx, ready) = tokio::sync::mpsc::channel(64);
        let permits = Arc::new(tokio::sync::Semaphore::new(HANDSHAKES));
        tokio::spawn(async move {
            loop {
                let Ok(permit) = permits.clone().acquire_owned().await else {
                    return;
                };
                let accepted = tokio::select! {
                    a = listener.accept() => a,
                    () = tx.closed() => return,
                };
                let (tcp, addr) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        // Out of file descriptors and the like: wait, as axum does.
                        tracing::warn!("accepting a connection: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let _ = tcp.set_nodelay(true);
                let (acceptor, tx) = (acceptor.clone(), tx.clone());
                tokio::spawn(async move {
                    let shaken = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp));
                    match shaken.await {
                        Ok(Ok(tls)) => {
                            let _ = tx.send((tls, addr)).await;
                        }
                        Ok(Err(e)) => tracing::debug!("TLS handshake with {addr}: {e}"),
                        Err(_) => tracing::debug!("TLS handshake with {addr} timed out"),
                    }
                    drop(permit);
                });
            }
        });
        Ok(Self { ready, local })
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(conn) => conn,
            // The accept task ended (it never does while this listener lives).
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_self_signed_certificate_is_made_once_and_kept_owner_only() {
        let dir = tempfile::tempdir().unwrap();
        let a = TlsIdentity::self_signed(dir.path()).unwrap();
        let b = TlsIdentity::self_signed(dir.path()).unwrap();
        assert_eq!(a.fingerprint(), b.fingerprint());
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join(TLS_DIR).join(TLS_KEY))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "{mode:o}");
        // Another certificate's key is refused.
        let (cert, _) = make_self_signed().unwrap();
        let (_, key) = make_self_signed().unwrap();
        assert!(TlsIdentity::from_pem(&cert, &key).is_err());
        assert!(TlsIdentity::from_pem("", &key).is_err());
    }
}
