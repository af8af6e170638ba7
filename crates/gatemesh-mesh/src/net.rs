//! quinn 0.11 endpoint (server + client on one UDP socket), framing, peer identity.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::{MeshError, Result, invalid};
use quinn::crypto::rustls::{HandshakeData, QuicClientConfig, QuicServerConfig};
use quinn::{Connection, Endpoint, IdleTimeout, RecvStream, SendStream, TransportConfig, VarInt};
use rustls_pki_types::CertificateDer;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::identity::PeerId;
use crate::pki::Credentials;
use crate::tls::{ALPN, MeshTrust, SERVER_NAME, client_tls_config, server_tls_config};

/// Largest frame accepted: a sync message that carries a whole 100,000-redemption ledger is
/// about 21 MB (each change carries its author's signature, `authored.rs` in the ledger).
pub const MAX_FRAME: usize = 32 * 1024 * 1024;

/// Close code: a clean close.
pub const CLOSE_OK: u32 = 0;
/// Close code: the peer's identity was refused after the handshake.
pub const CLOSE_IDENTITY: u32 = 1;
/// Stop code on a stream: the peer announced a frame over [`MAX_FRAME`].
pub const CLOSE_FRAME_TOO_BIG: u32 = 2;

/// Bytes a connection may have sent and not yet had acknowledged. What a stalled peer costs
/// this node is this and [`crate::session::PUSH_QUEUE`] commits; past them its session falls
/// behind and catches up by a sync round once the link is back. On a LAN (1-20 ms round
/// trips) it still moves 12-250 MB/s.
pub const SEND_WINDOW: u64 = 256 * 1024;

/// How long a connection lives without hearing its peer. A partition shorter than this
/// leaves the connections across it open, and QUIC's retransmissions carry what was pushed
/// meanwhile once it heals; a longer one ends them, and the gap is caught up on the next.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(10);

/// Keep-alive every 2 s and [`IDLE_TIMEOUT`], so a lost peer is noticed within seconds;
/// no unidirectional streams; [`SEND_WINDOW`].
pub(crate) fn transport_config() -> Arc<TransportConfig> {
    let mut t = TransportConfig::default();
    t.send_window(SEND_WINDOW);
    t.keep_alive_interval(Some(Duration::from_secs(2)));
    t.max_idle_timeout(Some(
        IdleTimeout::try_from(IDLE_TIMEOUT).unwrap_or_else(|_| unreachable!("10 s fits a VarInt")),
    ));
    t.max_concurrent_uni_streams(0u32.into()); // we only use bidi streams
    Arc::new(t)
}

/// The accepting side: [`crate::tls`]'s server config over QUIC.
pub(crate) fn quinn_server_config(
    trust: &MeshTrust,
    creds: &Credentials,
) -> Result<quinn::ServerConfig> {
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

/// [`peer_identity`], closing the connection with [`CLOSE_IDENTITY`] when it fails.
pub(crate) fn checked_peer(conn: &Connection, event: &str) -> Result<PeerId> {
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

/// Why a frame could not be read or sent. The framing is a 4-byte big-endian length, then
/// that many bytes, at most [`MAX_FRAME`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// A frame over [`MAX_FRAME`]: announced by a peer, or asked to be sent.
    #[error("a frame of {len} bytes exceeds MAX_FRAME {MAX_FRAME}")]
    TooBig {
        /// Its length in bytes.
        len: usize,
    },
    /// The stream ended inside a length prefix.
    #[error("the stream ended inside a frame header ({got}/4 bytes)")]
    EndedInHeader {
        /// Header bytes received.
        got: usize,
    },
    /// The stream ended before the payload its prefix announced.
    #[error("the stream ended inside a frame ({got}/{len} bytes)")]
    EndedInPayload {
        /// Payload bytes received.
        got: usize,
        /// Payload bytes announced.
        len: usize,
    },
}

/// Sends one frame. A payload over [`MAX_FRAME`] is refused before anything is sent.
pub async fn write_frame(send: &mut SendStream, payload: &[u8]) -> Result<()> {
    encode_frame(send, payload).await
}

async fn encode_frame<W: AsyncWrite + Unpin>(send: &mut W, payload: &[u8]) -> Result<()> {
    if payload.len() > MAX_FRAME {
        return Err(FrameError::TooBig { len: payload.len() }.into());
    }
    send.write_all(&(payload.len() as u32).to_be_bytes())
        .await?;
    send.write_all(payload).await?;
    Ok(())
}

/// `Ok(None)` = peer finished the stream cleanly at a frame boundary. A frame announced
/// larger than [`MAX_FRAME`] is refused before any of it is read, and the peer is told to
/// stop sending.
pub async fn read_frame(recv: &mut RecvStream) -> Result<Option<Vec<u8>>> {
    let frame = decode_frame(recv).await;
    if let Err(MeshError::Frame(FrameError::TooBig { .. })) = &frame {
        let _ = recv.stop(VarInt::from_u32(CLOSE_FRAME_TOO_BIG));
    }
    frame
}

/// The framing over any byte stream. Memory grows with the bytes that actually arrive, never
/// with the length a peer announces.
async fn decode_frame<R: AsyncRead + Unpin>(recv: &mut R) -> Result<Option<Vec<u8>>> {
    let mut hdr = [0u8; 4];
    let mut got = 0;
    while got < hdr.len() {
        match recv.read(&mut hdr[got..]).await? {
            0 if got == 0 => return Ok(None),
            0 => return Err(FrameError::EndedInHeader { got }.into()),
            n => got += n,
        }
    }
    let len = u32::from_be_bytes(hdr) as usize;
    if len > MAX_FRAME {
        return Err(FrameError::TooBig { len }.into());
    }
    let mut buf = Vec::new();
    let got = recv.take(len as u64).read_to_end(&mut buf).await?;
    if got < len {
        return Err(FrameError::EndedInPayload { got, len }.into());
    }
    Ok(Some(buf))
}

/// Clean close: only after all streams are done in both directions.
pub async fn close_clean(conn: &Connection) {
    conn.close(VarInt::from_u32(CLOSE_OK), b"bye");
}

#[cfg(test)]
mod tests {
    //! The framing against a model, over byte streams that arrive in arbitrary pieces:
    //! noise, valid frames, valid frames cut short, with bytes changed, with oversized length
    //! prefixes, and streams that fail midway.

    use std::{
        pin::Pin,
        task::{Context, Poll},
    };

    use proptest::{prelude::*, sample::Index, test_runner::FileFailurePersistence};
    use tokio::io::ReadBuf;

    use super::*;

    /// A peer's stream as the reader sees it: `data` in pieces of the given sizes (then the
    /// rest at once), failing with a reset at `fail_at` if set.
    #[derive(Debug)]
    struct Stream {
        data: Vec<u8>,
        pos: usize,
        pieces: std::vec::IntoIter<usize>,
        fail_at: Option<usize>,
    }

    impl AsyncRead for Stream {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            if self.fail_at == Some(self.pos) {
                return Poll::Ready(Err(std::io::ErrorKind::ConnectionReset.into()));
            }
            let end = self.fail_at.unwrap_or(usize::MAX).min(self.data.len());
            let piece = self.pieces.next().unwrap_or(usize::MAX).max(1);
            let n = piece.min(buf.remaining()).min(end - self.pos);
            buf.put_slice(&self.data[self.pos..self.pos + n]);
            self.pos += n;
            Poll::Ready(Ok(()))
        }
    }

    /// How a stream ends, by the model and by the reader.
    #[derive(Debug, PartialEq, Eq)]
    enum End {
        Clean,
        Frame(FrameError),
        Reset,
    }

    /// The framing, written as plainly as possible.
    fn model(data: &[u8], fail_at: Option<usize>) -> (Vec<Vec<u8>>, End) {
        let avail = fail_at.unwrap_or(usize::MAX).min(data.len());
        let cut = |end: End| if fail_at.is_some() { End::Reset } else { end };
        let (mut frames, mut at) = (Vec::new(), 0);
        loop {
            if at == avail {
                return (frames, cut(End::Clean));
            }
            if avail - at < 4 {
                let got = avail - at;
                return (frames, cut(End::Frame(FrameError::EndedInHeader { got })));
            }
            let len = u32::from_be_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]]);
            let len = len as usize;
            if len > MAX_FRAME {
                return (frames, End::Frame(FrameError::TooBig { len }));
            }
            at += 4;
            if avail - at < len {
                let got = avail - at;
                return (
                    frames,
                    cut(End::Frame(FrameError::EndedInPayload { got, len })),
                );
            }
            frames.push(data[at..at + len].to_vec());
            at += len;
        }
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
    }

    /// Reads frames until the stream ends or is refused; also returns how far it read.
    fn read_all(
        rt: &tokio::runtime::Runtime,
        data: &[u8],
        pieces: Vec<usize>,
        fail_at: Option<usize>,
    ) -> (Vec<Vec<u8>>, End, usize) {
        let mut stream = Stream {
            data: data.to_vec(),
            pos: 0,
            pieces: pieces.into_iter(),
            fail_at,
        };
        let mut frames = Vec::new();
        let end = rt.block_on(async {
            // Every frame takes at least its 4-byte header, so this bounds a correct reader.
            for _ in 0..=data.len() / 4 + 1 {
                match decode_frame(&mut stream).await {
                    Ok(Some(frame)) => frames.push(frame),
                    Ok(None) => return End::Clean,
                    Err(MeshError::Frame(e)) => return End::Frame(e),
                    Err(MeshError::Io(e)) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                        return End::Reset;
                    }
                    Err(e) => panic!("an error of the wrong kind: {e}"),
                }
            }
            panic!("the reader went on past the end of the stream");
        });
        (frames, end, stream.pos)
    }

    fn encode(frames: &[Vec<u8>]) -> Vec<u8> {
        let mut out = Vec::new();
        let rt = runtime();
        for f in frames {
            rt.block_on(encode_frame(&mut out, f)).unwrap();
        }
        out
    }

    #[derive(Debug, Clone)]
    enum Mutation {
        Flip(Index, u8),
        Truncate(Index),
        /// A header (or any 4 bytes) replaced by a length past the limit.
        Oversize(Index, u32),
        Insert(Index, Vec<u8>),
    }

    fn mutation() -> impl Strategy<Value = Mutation> {
        prop_oneof![
            (any::<Index>(), 0..8u8).prop_map(|(i, b)| Mutation::Flip(i, b)),
            any::<Index>().prop_map(Mutation::Truncate),
            (any::<Index>(), (MAX_FRAME as u32 + 1)..=u32::MAX)
                .prop_map(|(i, len)| Mutation::Oversize(i, len)),
            (any::<Index>(), prop::collection::vec(any::<u8>(), 1..8))
                .prop_map(|(i, b)| Mutation::Insert(i, b)),
        ]
    }

    fn mutate(mut data: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
        for m in mutations {
            if data.is_empty() {
                break;
            }
            let at = |i: &Index| i.index(data.len());
            match m {
                Mutation::Flip(i, bit) => {
                    let at = at(i);
                    data[at] ^= 1 << bit;
                }
                Mutation::Truncate(i) => data.truncate(at(i)),
                Mutation::Oversize(i, len) => {
                    let at = at(i).min(data.len().saturating_sub(4));
                    let end = (at + 4).min(data.len());
                    data.splice(at..end, len.to_be_bytes());
                }
                Mutation::Insert(i, more) => {
                    let at = at(i);
                    data.splice(at..at, more.iter().copied());
                }
            }
        }
        data
    }

    fn frames() -> impl Strategy<Value = Vec<Vec<u8>>> {
        let payload = prop_oneof![
            8 => prop::collection::vec(any::<u8>(), 0..300),
            // Past tokio's and quinn's read sizes; generated cheaply.
            1 => (60_000..70_000usize, any::<u8>())
                .prop_map(|(n, b)| (0..n).map(|i| b.wrapping_add(i as u8)).collect()),
        ];
        prop::collection::vec(payload, 0..5)
    }

    /// A stream: noise, or valid frames with mutations (possibly none).
    fn streams() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            1 => prop::collection::vec(any::<u8>(), 0..600),
            3 => (frames(), prop::collection::vec(mutation(), 0..3))
                .prop_map(|(frames, m)| mutate(encode(&frames), &m)),
        ]
    }

    fn config() -> ProptestConfig {
        ProptestConfig {
            cases: 512,
            failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
                "proptest-regressions",
            ))),
            ..ProptestConfig::default()
        }
    }

    proptest! {
        #![proptest_config(config())]

        /// Whatever a peer sends, in whatever pieces, the reader returns the frames the model
        /// finds and then ends as the model does (cleanly, or with a typed error), and it
        /// never reads past an oversized length prefix.
        #[test]
        fn any_stream_reads_as_the_model_says(
            data in streams(),
            pieces in prop::collection::vec(1..64usize, 0..40),
            fail in prop::option::weighted(0.2, any::<Index>()),
        ) {
            let fail_at = fail.map(|i| i.index(data.len() + 1));
            let rt = runtime();
            let (frames, end, read) = read_all(&rt, &data, pieces, fail_at);
            let (want_frames, want_end) = model(&data, fail_at);
            prop_assert_eq!(&frames, &want_frames);
            if let End::Frame(FrameError::TooBig { .. }) = &want_end {
                let consumed: usize = frames.iter().map(|f| f.len() + 4).sum::<usize>() + 4;
                prop_assert_eq!(read, consumed, "nothing past the oversized header was read");
            }
            prop_assert_eq!(end, want_end);
        }

        /// Valid frames come back exactly, however the stream is cut into pieces.
        #[test]
        fn valid_frames_round_trip(
            sent in frames(),
            pieces in prop::collection::vec(1..64usize, 0..40),
        ) {
            let rt = runtime();
            let (got, end, _) = read_all(&rt, &encode(&sent), pieces, None);
            prop_assert_eq!(got, sent);
            prop_assert_eq!(end, End::Clean);
        }
    }

    #[test]
    fn the_limit_is_exact_both_ways() {
        let rt = runtime();
        let mut at_limit = (MAX_FRAME as u32).to_be_bytes().to_vec();
        at_limit.resize(4 + MAX_FRAME, 7);
        let (frames, end, _) = read_all(&rt, &at_limit, vec![], None);
        assert_eq!(
            (frames.len(), frames[0].len(), end),
            (1, MAX_FRAME, End::Clean)
        );

        let over = (MAX_FRAME as u32 + 1).to_be_bytes();
        let (_, end, read) = read_all(&rt, &over, vec![], None);
        assert_eq!(end, End::Frame(FrameError::TooBig { len: MAX_FRAME + 1 }));
        assert_eq!(read, 4);
        let mut sink = Vec::new();
        let refused = rt.block_on(encode_frame(&mut sink, &vec![0; MAX_FRAME + 1]));
        assert!(matches!(
            refused,
            Err(MeshError::Frame(FrameError::TooBig { len })) if len == MAX_FRAME + 1
        ));
        assert!(sink.is_empty(), "nothing of a refused frame is sent");
    }
}
