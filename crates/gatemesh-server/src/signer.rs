//! The server's own identity under each event's mesh CA, with role `server`: it signs the
//! admissions the server took without a gate's record (a scanner asking it directly, the
//! organizer's journal) when it relays them, so that gates take them as they take any
//! device's record — checked against the writer's certificate, which travels inside the
//! record. The identity is made on first use beside the event's CA
//! (`mesh-ca/<event>/server/`), atomically, so servers sharing the data directory agree.

use std::{collections::HashMap, path::Path, sync::Arc};

use anyhow::Context;

use base64::Engine as _;
use gatemesh_ledger::{Hlc, Redemption, Signer};
use gatemesh_mesh::{identity::Role, pki};
use gatemesh_ticket::{EventId, TicketId};
use gatemesh_wire::{Admission, RedemptionRequest};
use rand_core::{OsRng, RngCore};

use crate::store::StoreError;

/// The name of the server's identity in its certificate.
const NAME: &str = "server";

/// One signer per event, loaded or made on first use, and the event's CA as a checker of
/// device records (read once: an event's CA never changes), with the records' signatures
/// found good (every gate uploads every admission it holds: each is verified once).
#[derive(Default)]
pub(crate) struct Signers(
    std::sync::Mutex<HashMap<EventId, Arc<(Signer, String)>>>,
    std::sync::Mutex<HashMap<EventId, Arc<gatemesh_ledger::Trust>>>,
    pub(crate) gatemesh_ledger::Vouched,
);

impl Signers {
    /// The server's signer for `eid` and its certificate (base64url DER).
    pub(crate) fn get(&self, data: &Path, eid: &EventId) -> anyhow::Result<Arc<(Signer, String)>> {
        // Held while the identity is made: concurrent first requests make it once.
        let mut signers = self
            .0
            .lock()
            .map_err(|_| anyhow::anyhow!("the signers' lock is poisoned"))?;
        if let Some(s) = signers.get(eid) {
            return Ok(s.clone());
        }
        let ca = crate::api::devices::mesh_ca(data, eid)?;
        let dir = ca.join(NAME);
        if !dir.join(pki::DEVICE_CERT).exists() {
            let aside = ca.join(format!(
                ".new-{NAME}-{}-{}",
                std::process::id(),
                OsRng.next_u64()
            ));
            let _ = std::fs::remove_dir_all(&aside);
            pki::enroll_into(
                &ca,
                &aside,
                Role::Server,
                NAME,
                crate::api::devices::CA_DAYS,
            )
            .context("making the server's identity")?;
            if std::fs::rename(&aside, &dir).is_err() {
                // Another server made it first.
                let _ = std::fs::remove_dir_all(&aside);
            }
        }
        let identity = pki::Identity::load(&dir)
            .with_context(|| format!("loading the server's identity in {}", dir.display()))?;
        let (signer, _) = Signer::from_identity(&identity, eid)?;
        let cert = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(identity.creds.chain[0].as_ref());
        let made = Arc::new((signer, cert));
        signers.insert(eid.clone(), made.clone());
        Ok(made)
    }
}

impl Signers {
    /// The event's mesh CA as a checker of device records (the CA is made at the first
    /// pairing, so a device's credential implies it), read from disk once per event.
    pub(crate) fn trust(
        &self,
        data: &Path,
        eid: &EventId,
    ) -> anyhow::Result<Arc<gatemesh_ledger::Trust>> {
        if let Some(t) = self.1.lock().ok().and_then(|m| m.get(eid).cloned()) {
            return Ok(t);
        }
        let ca = crate::api::devices::mesh_ca(data, eid)?;
        let pem = std::fs::read_to_string(ca.join(pki::CA_CERT))?;
        let trust = Arc::new(gatemesh_ledger::Trust::from_pem(&pem, eid)?);
        if let Ok(mut m) = self.1.lock() {
            m.insert(eid.clone(), trust.clone());
        }
        Ok(trust)
    }
}

/// Checks the records a device sends (its journal): each must be a redemption its writer
/// signed, with the writer's certificate (from this event's mesh CA) beside it — so a gate's
/// credential carries other gates' admissions only as they wrote them, never its own
/// inventions in their names. The ledger's other rules for records from outside hold here
/// too, since what the server takes travels on to every gate: dated at most
/// `MAX_CLOCK_AHEAD_MS` ahead of the server's clock `now_ms`, and at most `MAX_PER_TICKET`
/// redemptions of one ticket by one writer in an upload. Says which item fails and why;
/// else returns each item's writer and its clock reading (`hlc.wall_ms`), by which a revoked
/// writer's records are set aside.
pub(crate) fn check_device_records(
    trust: &gatemesh_ledger::Trust,
    vouched: &gatemesh_ledger::Vouched,
    items: &[RedemptionRequest],
    now_ms: i64,
) -> Result<Vec<(gatemesh_ledger::NodeId, i64)>, String> {
    use gatemesh_ledger::{MAX_CLOCK_AHEAD_MS, MAX_PER_TICKET};
    let mut per_ticket: HashMap<(gatemesh_ledger::NodeId, gatemesh_ticket::TicketId), usize> =
        HashMap::new();
    let mut writers = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let why = |w: String| format!("redemption {} (item {i}): {w}", item.redemption_id);
        let record = item
            .record
            .as_ref()
            .ok_or_else(|| why("a device sends the ledger's signed record".into()))?;
        let cert = record
            .get("cert")
            .and_then(|c| c.as_str())
            .and_then(|c| {
                base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .decode(c)
                    .ok()
            })
            .ok_or_else(|| why("no certificate of its writer beside the record".into()))?;
        let r: Redemption = serde_json::from_value(record.clone())
            .map_err(|e| why(format!("not a ledger redemption: {e}")))?;
        if r.gate != item.gate.as_str()
            || r.at_ms != item.at.ms()
            || r.scanner != item.scanner.as_str()
        {
            return Err(why("the item says otherwise than its signed record".into()));
        }
        let ahead = r.at_ms.max(r.hlc.wall_ms).saturating_sub(now_ms);
        if ahead > MAX_CLOCK_AHEAD_MS {
            return Err(why(format!(
                "a record dated {} s ahead of the server's clock",
                ahead / 1000
            )));
        }
        let count = per_ticket
            .entry((r.node.clone(), r.tid.clone()))
            .or_default();
        *count += 1;
        if *count > MAX_PER_TICKET {
            return Err(why(format!(
                "node {} writes more than {MAX_PER_TICKET} redemptions of ticket {}",
                r.node, r.tid
            )));
        }
        // The certificate is checked once (`Trust` remembers it), and so is the record's
        // signature (`vouched`): the other gates upload the same record again.
        gatemesh_ledger::check_redemption_vouched(trust, &cert, &r, vouched).map_err(why)?;
        writers.push((r.node, r.hlc.wall_ms));
    }
    Ok(writers)
}

/// Per revoked device of the event, the earliest time from which its records are set aside
/// (as every gate's ledger sets them aside, `gatemesh_ledger`'s `revoke` module).
pub(crate) fn revoked_cuts(
    st: &dyn crate::store::Storage,
    eid: &EventId,
) -> Result<HashMap<gatemesh_ledger::NodeId, i64>, StoreError> {
    let records = stored_revocations(st, eid, 0, i64::MAX)?;
    Ok(gatemesh_ledger::revocation_cuts(&records))
}

/// The event's revocations kept after change `since` and up to `upto`, read back.
pub(crate) fn stored_revocations(
    st: &dyn crate::store::Storage,
    eid: &EventId,
    since: i64,
    upto: i64,
) -> Result<Vec<gatemesh_wire::Revocation>, StoreError> {
    st.revocations(eid, since, upto)?
        .iter()
        .map(|json| {
            serde_json::from_str(json)
                .map_err(|e| StoreError::Corrupt(format!("a stored revocation: {e}")))
        })
        .collect()
}

/// A record the server signed, as JSON with its certificate (base64url DER) under `cert`,
/// the way records travel to gates.
fn with_cert(record: &impl serde::Serialize, cert: &str) -> Result<serde_json::Value, StoreError> {
    let mut value = serde_json::to_value(record).map_err(|e| StoreError::Signing(e.to_string()))?;
    if let Some(o) = value.as_object_mut() {
        o.insert("cert".into(), cert.into());
    }
    Ok(value)
}

impl Signers {
    /// [`Signers::get`], for records the server relays.
    fn for_relay(&self, data: &Path, eid: &EventId) -> Result<Arc<(Signer, String)>, StoreError> {
        self.get(data, eid)
            .map_err(|e| StoreError::Signing(format!("{e:#}")))
    }
}

/// Fills in the ledger record of each admission stored without a gate's record (taken
/// online, or from the organizer's journal): the admission as a redemption by the server's
/// identity, with its certificate, signed deterministically, so the record made again each
/// time it is relayed is the very record gates already hold. Nothing is signed or stored on
/// the request path: most online requests are duplicates, whose records nobody relays.
pub(crate) fn relayed(
    signers: &Signers,
    data: &Path,
    eid: &EventId,
    tid: &TicketId,
    admissions: &mut [Admission],
) -> Result<(), StoreError> {
    if admissions.iter().all(|a| a.record.is_some()) {
        return Ok(());
    }
    let made = signers.for_relay(data, eid)?;
    let (signer, cert) = &*made;
    for a in admissions.iter_mut().filter(|a| a.record.is_none()) {
        let at_ms = a.at.ms();
        let mut record = Redemption {
            manual: None,
            id: a.redemption_id.clone(),
            tid: tid.clone(),
            direction: gatemesh_ledger::Direction::Entry,
            node: signer.node().clone(),
            gate: a.gate.to_string(),
            scanner: a.scanner.to_string(),
            at_ms,
            hlc: Hlc {
                wall_ms: at_ms,
                counter: 0,
                node: signer.node().clone(),
            },
            seen: Vec::new(),
            unlisted: false,
            scope: None,
            sig: None,
        };
        signer
            .sign_redemption_again(eid, &mut record)
            .map_err(|e| StoreError::Signing(e.to_string()))?;
        a.record = Some(with_cert(&record, cert)?);
    }
    Ok(())
}

/// Now, as the server's identity `signer` stamps a record it makes: wall time (ms since
/// 1970) and its clock reading, in its own name.
fn now_as(signer: &Signer) -> (i64, Hlc) {
    let at_ms = gatemesh_wire::Timestamp::now().ms();
    let hlc = Hlc {
        wall_ms: at_ms,
        counter: 0,
        node: signer.node().clone(),
    };
    (at_ms, hlc)
}

/// A ticket's new standing (a void, a transfer) as the ledger record gates write: a status
/// by the server's identity, at this moment, signed, with its certificate under `cert`
/// (JSON). Made when the standing changes and stored with the ticket, so every relay of it
/// is the same record; only the server writes standings into gates' ledgers.
pub(crate) fn standing_record(
    signers: &Signers,
    data: &Path,
    eid: &EventId,
    tid: &TicketId,
    standing: gatemesh_wire::Standing,
) -> Result<String, StoreError> {
    let made = signers.for_relay(data, eid)?;
    let (signer, cert) = &*made;
    let (at_ms, hlc) = now_as(signer);
    let mut status = gatemesh_ledger::Status {
        tid: tid.clone(),
        standing,
        by: "server".into(),
        at_ms,
        hlc,
        sig: None,
    };
    signer
        .sign_status(eid, &mut status)
        .map_err(|e| StoreError::Signing(e.to_string()))?;
    Ok(with_cert(&status, cert)?.to_string())
}

/// A release of the event's check-in lists as the ledger record gates write: version
/// `version` by the server's identity, now, signed, with its certificate under `cert`
/// (JSON). Made once, when the lists are released, and stored, so every relay of it is the
/// same record.
pub(crate) fn lists_record(
    signers: &Signers,
    data: &Path,
    eid: &EventId,
    version: u64,
    lists: &gatemesh_wire::ListsFile,
    by: &str,
) -> Result<String, StoreError> {
    let made = signers.for_relay(data, eid)?;
    let (signer, cert) = &*made;
    let (at_ms, hlc) = now_as(signer);
    let mut record = gatemesh_ledger::ListsRecord {
        version,
        lists: lists.clone(),
        by: by.to_owned(),
        at_ms,
        hlc,
        sig: None,
    };
    signer
        .sign_lists(eid, &mut record)
        .map_err(|e| StoreError::Signing(e.to_string()))?;
    Ok(with_cert(&record, cert)?.to_string())
}

/// A decision taken at the server now (staff's on a flag, the organizer's revert), with the
/// ledger record gates write: a resolution by the server's identity, signed, with its
/// certificate under `cert`. Made when the decision is taken and stored with it, so every
/// relay is the same record.
pub(crate) fn signed_decision(
    signers: &Signers,
    data: &Path,
    eid: &EventId,
    tid: &TicketId,
    (action, staff, note): (
        gatemesh_wire::Action,
        gatemesh_wire::Label,
        gatemesh_wire::Note,
    ),
    covers: Vec<gatemesh_wire::RedemptionId>,
) -> Result<gatemesh_wire::ServerResolution, StoreError> {
    let mut decision = gatemesh_wire::ServerResolution {
        action,
        staff,
        note,
        covers,
        at: gatemesh_wire::Timestamp::now(),
        record: None,
    };
    decision.record = Some(decision_record(signers, data, eid, tid, &decision)?);
    Ok(decision)
}

fn decision_record(
    signers: &Signers,
    data: &Path,
    eid: &EventId,
    tid: &TicketId,
    decision: &gatemesh_wire::ServerResolution,
) -> Result<serde_json::Value, StoreError> {
    let made = signers.for_relay(data, eid)?;
    let (signer, cert) = &*made;
    let at_ms = decision.at.ms();
    let mut r = gatemesh_ledger::Resolution {
        id: gatemesh_wire::ResolutionId::random(),
        tid: tid.clone(),
        action: decision.action,
        staff: decision.staff.to_string(),
        note: decision.note.to_string(),
        node: signer.node().clone(),
        at_ms,
        hlc: Hlc {
            wall_ms: at_ms,
            counter: 0,
            node: signer.node().clone(),
        },
        covers: decision.covers.clone(),
        from_server: true,
        sig: None,
    };
    signer
        .sign_resolution(eid, &mut r)
        .map_err(|e| StoreError::Signing(e.to_string()))?;
    with_cert(&r, cert)
}
