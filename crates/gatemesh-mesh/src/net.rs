//! quinn 0.11 endpoint (server + client on one UDP socket), framing, peer identity.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::{Result, invalid};
use quinn::crypto::rustls::{HandshakeData, QuicClientConfig, QuicServerConfig};
use quinn::{Connection, Endpoint, IdleTimeout, RecvStream, SendStream, TransportConfig, VarInt};
use rustls_pki_types::CertificateDer;

use crate::identity::PeerId;
use crate::pki::Credentials;
use crate::tls::{ALPN, MeshTrust, SERVER_NAME, client_tls_config, server_tls_config};

/// Largest frame accepted: a sync message that carries a whole 100,000-redemption ledger is
/// about 1 MB.
pub const MAX_FRAME: usize = 16 * 1024 * 1024;

/// Application close codes.
pub const CLOSE_OK: u32 = 0;
pub const CLOSE_IDENTITY: u32 = 1;
pub const CLOSE_FRAME_TOO_BIG: u32 = 2;

pub fn transport_config() -> Arc<TransportConfig> {
    let mut t = TransportConfig::default();
    t.keep_alive_interval(Some(Duration::from_secs(2)));
    t.max_idle_timeout(Some(
        IdleTimeout::try_from(Duration::from_secs(10))
            .unwrap_or_else(|_| unreachable!("10 s fits a VarInt")),
    ));
    t.max_concurrent_uni_streams(0u32.into()); // we only use bidi streams
    Arc::new(t)
}

pub fn quinn_server_config(trust: &MeshTrust, creds: &Credentials) -> Result<quinn::ServerConfig> {
    let tls = server_tls_config(trust, creds)?;
    let mut cfg = quinn::ServerConfig::with_crypto(Arc::new(QuicServerConfig::try_from(tls)?));
    cfg.transport_config(transport_config());
    Ok(cfg)
}

/// `creds = None` builds a client without a certificate (only for the negative test).
pub fn quinn_client_config(
    trust: &MeshTrust,
    creds: Option<&Credentials>,
) -> Result<quinn::ClientConfig> {
    let tls = client_tls_config(trust, creds)?;
    let mut cfg = quinn::ClientConfig::new(Arc::new(QuicClientConfig::try_from(tls)?));
    cfg.transport_config(transport_config());
    Ok(cfg)
}

/// One endpoint = one UDP socket that both accepts and dials. Must be called inside a tokio runtime.
pub fn mesh_endpoint(trust: &MeshTrust, creds: &Credentials, bind: SocketAddr) -> Result<Endpoint> {
    let mut ep = Endpoint::server(quinn_server_config(trust, creds)?, bind)?;
    ep.set_default_client_config(quinn_client_config(trust, Some(creds))?);
    Ok(ep)
}

/// Post-handshake: read peer cert chain from quinn, parse SAN URI, enforce event + ALPN.
/// (The TLS verifiers already enforce the event; this is the place to learn role/name and
/// to apply policy, e.g. "observers may not dial gates".)
pub fn peer_identity(conn: &Connection, event: &str) -> Result<PeerId> {
    let hd = conn
        .handshake_data()
        .and_then(|h| h.downcast::<HandshakeData>().ok())
        .ok_or_else(|| invalid!("no handshake data"))?;
    if hd.protocol.as_deref() != Some(ALPN) {
        return Err(invalid!("ALPN mismatch: {:?}", hd.protocol));
    }
    let certs = conn
        .peer_identity()
        .ok_or_else(|| invalid!("peer presented no certificate"))?
        .downcast::<Vec<CertificateDer<'static>>>()
        .map_err(|_| invalid!("peer identity is not a rustls cert chain"))?;
    let leaf = certs.first().ok_or_else(|| invalid!("empty peer chain"))?;
    let id = PeerId::from_cert(leaf)?;
    if id.event != event {
        return Err(invalid!("peer {} belongs to event {:?}", id.name, id.event)); // reason goes to the peer: do not echo ours
    }
    Ok(id)
}

pub fn checked_peer(conn: &Connection, event: &str) -> Result<PeerId> {
    peer_identity(conn, event).inspect_err(|e| {
        conn.close(VarInt::from_u32(CLOSE_IDENTITY), e.to_string().as_bytes());
    })
}

/// Dial a peer by address; returns only after TLS (both certs) and identity checks passed
/// on OUR side. NB: the server may still reject OUR cert after this returns (see gotchas):
/// treat the link as up only after the first response.
pub async fn dial(ep: &Endpoint, addr: SocketAddr, event: &str) -> Result<(Connection, PeerId)> {
    let conn = ep.connect(addr, SERVER_NAME)?.await?;
    let peer = checked_peer(&conn, event)?;
    Ok((conn, peer))
}

// ---------------------------------------------------------------- framing

pub async fn write_frame(send: &mut SendStream, payload: &[u8]) -> Result<()> {
    if payload.len() > MAX_FRAME {
        return Err(invalid!(
            "frame of {} bytes exceeds MAX_FRAME {}",
            payload.len(),
            MAX_FRAME
        ));
    }
    send.write_all(&(payload.len() as u32).to_be_bytes())
        .await?;
    send.write_all(payload).await?;
    Ok(())
}

/// `Ok(None)` = peer finished the stream cleanly at a frame boundary.
pub async fn read_frame(recv: &mut RecvStream) -> Result<Option<Vec<u8>>> {
    let mut hdr = [0u8; 4];
    match recv.read_exact(&mut hdr).await {
        Ok(()) => {}
        Err(quinn::ReadExactError::FinishedEarly(0)) => return Ok(None),
        Err(quinn::ReadExactError::FinishedEarly(n)) => {
            return Err(invalid!("stream ended inside frame header ({n}/4)"));
        }
        Err(e @ quinn::ReadExactError::ReadError(_)) => return Err(e.into()),
    }
    let len = u32::from_be_bytes(hdr) as usize;
    if len > MAX_FRAME {
        let _ = recv.stop(VarInt::from_u32(CLOSE_FRAME_TOO_BIG));
        return Err(invalid!("peer announced {len}-byte frame, max {MAX_FRAME}"));
    }
    let mut buf = vec![0u8; len];
    recv.read_exact(&mut buf).await?;
    Ok(Some(buf))
}

/// Clean close: only after all streams are done in both directions.
pub async fn close_clean(conn: &Connection) {
    conn.close(VarInt::from_u32(CLOSE_OK), b"bye");
}
