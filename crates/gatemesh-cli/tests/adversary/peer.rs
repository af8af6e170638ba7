//! The adversarial peer: a device enrolled honestly under the event's mesh CA (a gate or an
//! observer) whose software is not. It dials a gate over the real mesh transport (QUIC,
//! mutual TLS, `gatemesh/3` frames), syncs honestly until it holds the gate's ledger, then
//! crafts changes with automerge itself — deletes, root maps, `meta`, records signed with
//! its own key in anyone's name — and sends them as ordinary sync messages.

use std::{collections::BTreeMap, net::SocketAddr, time::Duration};

use automerge::{
    ActorId, AutoCommit, ObjId, ROOT, ReadDoc,
    sync::{self, SyncDoc},
    transaction::Transactable,
};
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD as B64};
use gatemesh_ledger::{DeviceRecord, NodeId, Signer};
use gatemesh_mesh::{identity::Role, net, pki};
use gatemesh_ticket::EventId;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};

/// What `sign.rs` signs a record under: domain, event, map, the record without `sig`.
const DOMAIN: &[u8] = b"gatemesh-record-v1";

pub struct Attacker {
    pub name: String,
    pub event: EventId,
    pub node: NodeId,
    device: DeviceRecord,
    key: EcdsaKeyPair,
    endpoint: quinn::Endpoint,
}

impl Attacker {
    /// Enrolls `name` with `role` under the CA in `ca_dir` (as any device is enrolled).
    pub fn enroll(ca_dir: &std::path::Path, out: &std::path::Path, role: Role, name: &str) -> Self {
        pki::enroll_into(ca_dir, out, role, name, 30).unwrap();
        let identity = pki::Identity::load(out).unwrap();
        let event = EventId::new(&identity.peer.event).unwrap();
        let (signer, _) = Signer::from_identity(&identity, &event).unwrap();
        let rustls_pki_types::PrivateKeyDer::Pkcs8(pkcs8) = &identity.creds.key else {
            panic!("a PKCS#8 device key")
        };
        let key = EcdsaKeyPair::from_pkcs8(
            &ECDSA_P256_SHA256_FIXED_SIGNING,
            pkcs8.secret_pkcs8_der(),
            &ring::rand::SystemRandom::new(),
        )
        .unwrap();
        let endpoint = net::mesh_endpoint(
            &identity.trust,
            &identity.creds,
            "127.0.0.1:0".parse().unwrap(),
        )
        .unwrap();
        Self {
            name: name.into(),
            event,
            node: signer.node().clone(),
            device: DeviceRecord::of(signer.device()),
            key,
            endpoint,
        }
    }

    /// The signature of a record of `map` whose JSON without `sig` is `unsigned`, by this
    /// device's key, as `sign.rs` makes it: whatever writer the record names.
    pub fn sign(&self, map: &str, unsigned: &str) -> String {
        let mut message = Vec::new();
        for part in [DOMAIN, self.event.as_str().as_bytes(), map.as_bytes()] {
            message.extend_from_slice(part);
            message.push(0);
        }
        message.extend_from_slice(unsigned.as_bytes());
        let sig = self
            .key
            .sign(&ring::rand::SystemRandom::new(), &message)
            .unwrap();
        B64.encode(sig.as_ref())
    }

    /// Signs the changes of `doc` since `since` made under its actor with this device's key,
    /// as their author signs them (`authored.rs`): whatever actor `doc` writes under.
    pub fn sign_changes(&self, doc: &mut AutoCommit, since: &[automerge::ChangeHash]) {
        gatemesh_testkit::author::sign_as_author(doc, since, self.event.as_str(), |message| {
            self.key
                .sign(&ring::rand::SystemRandom::new(), message)
                .unwrap()
                .as_ref()
                .to_vec()
        });
    }

    /// Puts this device's certificate into `devices`, as its first record would.
    pub fn put_own_device(&self, doc: &mut AutoCommit) {
        let devices = map(doc, "devices");
        if doc.get(&devices, self.node.as_str()).unwrap().is_none() {
            let json = serde_json::to_string(&self.device).unwrap();
            doc.put(&devices, self.node.as_str(), json).unwrap();
        }
    }

    /// Dials `victim` and syncs honestly until this side's document holds at least
    /// `redemptions` redemptions.
    pub async fn connect(&self, victim: SocketAddr, redemptions: usize) -> Session {
        let (conn, _) = net::dial(&self.endpoint, victim, self.event.as_str())
            .await
            .unwrap();
        let (mut send, recv) = conn.open_bi().await.unwrap();
        net::write_frame(&mut send, &[]).await.unwrap();
        let mut doc = AutoCommit::load(&gatemesh_ledger::genesis(&self.event)).unwrap();
        // Under its own node id: a change by an author no certificate names is refused
        // before anything it carries is looked at.
        doc.set_actor(ActorId::from(self.node.as_str().as_bytes()));
        // With its certificate in its first change, as an honest device's, signed.
        let genesis = doc.get_heads();
        self.put_own_device(&mut doc);
        doc.commit();
        self.sign_changes(&mut doc, &genesis);
        let mut s = Session {
            conn,
            send,
            recv,
            doc,
            state: sync::State::new(),
        };
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        while length(&s.doc, "redemptions") < redemptions {
            assert!(tokio::time::Instant::now() < deadline, "the sync stalled");
            s.push().await;
            if let Ok(Ok(Some(bytes))) =
                tokio::time::timeout(Duration::from_secs(2), net::read_frame(&mut s.recv)).await
            {
                let _ = s.take(&bytes);
            }
        }
        s
    }
}

pub struct Session {
    conn: quinn::Connection,
    send: quinn::SendStream,
    recv: quinn::RecvStream,
    pub doc: AutoCommit,
    state: sync::State,
}

impl Session {
    /// Takes a frame from the victim: its sync messages (this peer syncs; the victim's
    /// pushes carry what its sync messages also will). Whether it was one: the victim's
    /// summaries, sent every second, are no part of the exchange.
    fn take(&mut self, frame: &[u8]) -> bool {
        use gatemesh_mesh::session::Frame;
        if let Frame::Start(m) | Frame::Sync(m) = Frame::of(frame) {
            let m = sync::Message::decode(m).unwrap();
            self.doc
                .sync()
                .receive_sync_message(&mut self.state, m)
                .unwrap();
            true
        } else {
            false
        }
    }

    /// Sends the next sync message, if this side has anything to say.
    async fn push(&mut self) {
        if let Some(m) = self.doc.sync().generate_sync_message(&mut self.state) {
            let _ = net::write_frame(&mut self.send, &m.encode()).await;
        }
    }

    /// Commits what was crafted on `doc` and pushes it as a gate pushes its commits (a push
    /// frame of the changes the victim lacks), then waits for how the victim ends the
    /// connection.
    pub async fn push_crafted(mut self) -> quinn::ConnectionError {
        self.doc.commit();
        let theirs = self.state.their_heads.clone().unwrap_or_default();
        let mut frame = vec![gatemesh_mesh::session::PUSH_FRAME];
        for change in self.doc.get_changes(&theirs) {
            frame.extend_from_slice(change.raw_bytes());
        }
        self.send_raw(&frame).await
    }

    /// Sends `frame` as it is, and waits for how the victim ends the connection.
    pub async fn send_raw(mut self, frame: &[u8]) -> quinn::ConnectionError {
        let _ = net::write_frame(&mut self.send, frame).await;
        self.closed().await
    }

    /// Commits what was crafted on `doc` and offers it by the sync protocol, answering
    /// whatever the victim says, until the victim ends the connection; how it did. `None`
    /// when the victim took it (still connected after the exchange went quiet).
    pub async fn offer(mut self) -> Option<quinn::ConnectionError> {
        self.doc.commit();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        // Quiet: no sync message for 3 s (the victim's summaries keep coming).
        let mut quiet_from = tokio::time::Instant::now() + Duration::from_secs(3);
        while tokio::time::Instant::now() < deadline {
            self.push().await;
            match tokio::time::timeout_at(quiet_from, net::read_frame(&mut self.recv)).await {
                Ok(Ok(Some(bytes))) => {
                    if self.take(&bytes) {
                        quiet_from = tokio::time::Instant::now() + Duration::from_secs(3);
                    }
                }
                Ok(_) => return Some(self.closed().await),
                Err(_) => {
                    // Quiet: taken, unless the close is on its way.
                    return match tokio::time::timeout(Duration::from_secs(1), self.conn.closed())
                        .await
                    {
                        Ok(reason) => Some(reason),
                        Err(_) => {
                            self.conn.close(0u32.into(), b"done");
                            None
                        }
                    };
                }
            }
        }
        panic!("the exchange never went quiet");
    }

    async fn closed(self) -> quinn::ConnectionError {
        tokio::time::timeout(Duration::from_secs(20), self.conn.closed())
            .await
            .expect("the victim drops the attacker")
    }
}

pub fn map(doc: &AutoCommit, name: &str) -> ObjId {
    doc.get(ROOT, name).unwrap().unwrap().1
}

/// The map a record sits in: for a ticket's record (`key` starts with its ticket), the
/// ticket's shard of `name`.
pub fn record_map(doc: &AutoCommit, name: &str, key: &str) -> ObjId {
    let tid = key.split(',').next().unwrap();
    match gatemesh_ticket::TicketId::new(tid) {
        Ok(tid) if SHARDED.contains(&name) => gatemesh_ledger::ticket_map(doc, name, &tid).unwrap(),
        _ => map(doc, name),
    }
}

const SHARDED: [&str; 3] = ["redemptions", "resolutions", "status"];

/// The objects that hold `name`'s records: its shards, or the map itself.
fn holders(doc: &AutoCommit, name: &str) -> Vec<ObjId> {
    if SHARDED.contains(&name) {
        gatemesh_ledger::ticket_maps(doc, name)
    } else {
        vec![map(doc, name)]
    }
}

fn length(doc: &AutoCommit, name: &str) -> usize {
    holders(doc, name).iter().map(|m| doc.length(m)).sum()
}

/// Every record of a saved ledger, by map and key: what is compared record by record.
pub type Records = BTreeMap<(String, String), String>;

pub fn records_of(saved: &[u8]) -> Records {
    let doc = AutoCommit::load(saved).unwrap();
    let mut out = Records::new();
    for name in ["redemptions", "resolutions", "status", "audit", "devices"] {
        for item in holders(&doc, name)
            .iter()
            .flat_map(|m| doc.map_range(m, ..))
        {
            let automerge::ValueRef::Scalar(automerge::ScalarValueRef::Str(text)) = &item.value
            else {
                panic!("a record that is no text")
            };
            out.insert((name.into(), item.key.to_string()), text.to_string());
        }
    }
    out
}

/// The node that wrote a record (a device record: the device itself).
pub fn writer_of(record: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(record).unwrap();
    v.get("node")
        .or_else(|| v.get("hlc").and_then(|h| h.get("node")))
        .and_then(|n| n.as_str())
        .unwrap()
        .to_owned()
}
