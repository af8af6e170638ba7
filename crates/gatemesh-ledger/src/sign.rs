//! Who wrote each record, provably. Every record a device writes carries, in its `sig`
//! field, an ECDSA P-256 signature by the device's mesh key over the record's canonical
//! bytes; the device's certificate, issued by the event's mesh CA, travels in the ledger
//! once per device (the `devices` map, keyed by node id). So anyone holding the CA
//! certificate can tell, for any record wherever it came from, which device wrote it and
//! whether that device's role may write it.
//!
//! - A node id is derived from the device's public key ([`node_of_key`]): a certificate
//!   proves its own node id, and nobody can claim another device's.
//! - The canonical bytes of a record ([`message`]): a domain tag, the event, the map and
//!   the record's JSON without its `sig` field, as this crate writes it. A record read back
//!   is serialised again to check it, so a record altered in any field, replayed into
//!   another event or another map, fails.
//! - Roles ([`may_write`]): a gate writes redemptions, resolutions and audit lines; an
//!   observer writes resolutions and audit lines only; the server writes any record, and is
//!   the only writer of standings (voids, transfers), which gates take as it signed them.
//! - Changes (`authored.rs`): each change is signed by its author too, so nobody makes a
//!   change in another device's name; a record whose writer is its change's author is
//!   vouched for by the change.
//! - Seals (`seal.rs`): a writer's signed audit line naming its newest change vouches for
//!   every change of its own beneath it; a batch that carries the seal takes those changes,
//!   and their author's records in them, without verifying their signatures one by one.

use std::sync::Arc;

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD as B64};
use gatemesh_mesh::identity::PeerId;
use gatemesh_ticket::EventId;
use ring::{
    rand::SystemRandom,
    signature::{
        ECDSA_P256_SHA256_ASN1, ECDSA_P256_SHA256_FIXED, ECDSA_P256_SHA256_FIXED_SIGNING,
        EcdsaKeyPair, KeyPair, UnparsedPublicKey,
    },
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use x509_parser::prelude::{FromDer, X509Certificate};

use crate::{
    LedgerError,
    model::{NodeId, Role},
};

/// ecdsa-with-SHA256, the only certificate signature the mesh CA makes.
const ECDSA_SHA256: &str = "1.2.840.10045.4.3.2";
/// id-ecPublicKey with the P-256 curve.
const EC_PUBLIC_KEY: &str = "1.2.840.10045.2.1";
const P256: &str = "1.2.840.10045.3.1.7";
/// Separates record signatures from anything else a mesh key might sign.
const DOMAIN: &[u8] = b"gatemesh-record-v1";
/// Separates the CA's revocations from anything else its key signs (certificates are DER
/// structures, never this tag).
const REVOCATION_DOMAIN: &[u8] = b"gatemesh-revocation-v1";

/// The node id of the device whose public key (a SEC1 point) is `public_key`: 26 base32
/// characters of its SHA-256 — the form of a random node id, and as unguessable.
pub fn node_of_key(public_key: &[u8]) -> NodeId {
    const ALPHABET: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";
    let digest = Sha256::digest(public_key);
    let mut bits = [0u8; 16];
    bits.copy_from_slice(&digest[..16]);
    let value = u128::from_be_bytes(bits);
    let id: String = (0..26)
        .map(|i| ALPHABET[((value >> (5 * (25 - i))) & 0x1f) as usize] as char)
        .collect();
    // 26 characters of the node id alphabet always parse.
    NodeId::parse(&id).unwrap_or_else(NodeId::random)
}

/// A device the event's CA vouches for, as its certificate says.
#[derive(Debug, Clone)]
pub struct Device {
    /// Derived from its key.
    pub node: NodeId,
    /// Event, role and name, from the certificate's SAN URI.
    pub peer: PeerId,
    /// Its public key, a SEC1 point.
    key: Vec<u8>,
    /// The certificate's validity, ms since 1970.
    pub not_before_ms: i64,
    /// The end of it.
    pub not_after_ms: i64,
    /// The certificate, DER.
    pub cert_der: Vec<u8>,
}

/// Signatures found good already (off the thread that decides scans, for a catch-up), each
/// as one digest of the device's certificate, the message and the signature: a check that
/// finds its digest here is as good as the ECDSA check it stands for. And the changes whose
/// own writers' seals vouch for them (`seal.rs`), with their writers.
#[derive(Debug, Default)]
pub(crate) struct Checked {
    facts: std::collections::HashSet<[u8; 32]>,
    sealed: std::collections::HashMap<automerge::ChangeHash, NodeId>,
    /// How many records those changes hold, written by their authors.
    sealed_records: usize,
}

impl Checked {
    /// What a good signature `sig` of `message` by `device` is kept as.
    pub(crate) fn fact(device: &Device, message: &[u8], sig: &str) -> [u8; 32] {
        let mut h = Sha256::new();
        for part in [&device.cert_der[..], message, sig.as_bytes()] {
            h.update((part.len() as u64).to_be_bytes());
            h.update(part);
        }
        h.finalize().into()
    }

    /// What a good author's signature of the change `hash` is kept as (`authored.rs`): the
    /// hash fixes the change's bytes, so it stands for what the signature covers.
    pub(crate) fn change_fact(device: &Device, hash: &automerge::ChangeHash) -> [u8; 32] {
        Self::fact(device, b"gatemesh-change-v1", &hash.to_string())
    }

    pub(crate) fn contains(&self, fact: &[u8; 32]) -> bool {
        self.facts.contains(fact)
    }

    pub(crate) fn insert(&mut self, fact: [u8; 32]) {
        self.facts.insert(fact);
    }

    pub(crate) fn facts(&self) -> impl Iterator<Item = &[u8; 32]> {
        self.facts.iter()
    }

    pub(crate) fn extend(&mut self, other: Checked) {
        self.facts.extend(other.facts);
        self.sealed.extend(other.sealed);
        self.sealed_records += other.sealed_records;
    }

    /// Signatures found good (not counting the records seals vouch for).
    pub(crate) fn len(&self) -> usize {
        self.facts.len()
    }

    /// The writer whose seal vouches for `change`, if one does.
    pub(crate) fn sealed_by(&self, change: &automerge::ChangeHash) -> Option<&NodeId> {
        self.sealed.get(change)
    }

    /// Keeps that their writers' seals vouch for `sealed`, holding `records` of theirs.
    pub(crate) fn seal(
        &mut self,
        sealed: std::collections::HashMap<automerge::ChangeHash, NodeId>,
        records: usize,
    ) {
        self.sealed.extend(sealed);
        self.sealed_records += records;
    }

    /// How many records seals vouched for.
    pub(crate) fn sealed_records(&self) -> usize {
        self.sealed_records
    }
}

impl Device {
    /// Whether `sig` (base64url) is this device's signature of `message`, found good in
    /// `checked` or checked now.
    pub(crate) fn verifies_with(&self, message: &[u8], sig: &str, checked: &Checked) -> bool {
        (!checked.facts.is_empty() && checked.facts.contains(&Checked::fact(self, message, sig)))
            || self.verifies(message, sig)
    }

    /// Whether `sig` (base64url) is this device's signature of `message`.
    pub(crate) fn verifies(&self, message: &[u8], sig: &str) -> bool {
        let Ok(sig) = B64.decode(sig) else {
            return false;
        };
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &self.key)
            .verify(message, &sig)
            .is_ok()
    }

    /// Its role.
    pub fn role(&self) -> Role {
        self.peer.role
    }
}

/// The event's mesh CA, as a checker of device certificates.
#[derive(Debug, Clone)]
pub struct Trust {
    event: EventId,
    ca_key: Vec<u8>,
    ca_subject: Vec<u8>,
    /// Certificates found good, by their DER, shared by every clone: whether the CA signed
    /// a certificate never changes, and each check is an ECDSA verification (the server
    /// checked the writer's certificate beside every redemption of every upload).
    known: Arc<std::sync::Mutex<std::collections::HashMap<Vec<u8>, Device>>>,
}

/// Most certificates a [`Trust`] remembers; past it, it starts over (an event has a few
/// dozen devices).
const KNOWN_DEVICES: usize = 1024;

impl Trust {
    /// The CA's public key (SEC1).
    pub(crate) fn ca_key(&self) -> &[u8] {
        &self.ca_key
    }

    /// Trusts devices of `event` whose certificates the CA in `ca_cert_der` signed.
    pub fn new(ca_cert_der: &[u8], event: &EventId) -> Result<Self, LedgerError> {
        let (_, ca) = X509Certificate::from_der(ca_cert_der)
            .map_err(|e| LedgerError::Identity(format!("the mesh CA certificate: {e}")))?;
        if !ca.is_ca() {
            return Err(LedgerError::Identity(
                "the mesh CA certificate is no CA".into(),
            ));
        }
        Ok(Self {
            event: event.clone(),
            ca_key: ca.public_key().subject_public_key.data.to_vec(),
            ca_subject: ca.subject().as_raw().to_vec(),
            known: Arc::default(),
        })
    }

    /// Trusts devices of `event` under the CA certificate in `ca_pem`.
    pub fn from_pem(ca_pem: &str, event: &EventId) -> Result<Self, LedgerError> {
        use rustls_pki_types::{CertificateDer, pem::PemObject};
        let der = CertificateDer::from_pem_slice(ca_pem.as_bytes())
            .map_err(|e| LedgerError::Identity(format!("the mesh CA certificate: {e}")))?;
        Self::new(der.as_ref(), event)
    }

    /// The device a certificate names, if the CA signed it for this event; says why not.
    /// A certificate found good before is not checked again.
    pub fn device(&self, cert_der: &[u8]) -> Result<Device, String> {
        if let Some(device) = self
            .known
            .lock()
            .ok()
            .and_then(|k| k.get(cert_der).cloned())
        {
            return Ok(device);
        }
        let device = self.check_device(cert_der)?;
        if let Ok(mut known) = self.known.lock() {
            if known.len() >= KNOWN_DEVICES {
                known.clear();
            }
            known.insert(cert_der.to_vec(), device.clone());
        }
        Ok(device)
    }

    fn check_device(&self, cert_der: &[u8]) -> Result<Device, String> {
        let (rest, cert) = X509Certificate::from_der(cert_der)
            .map_err(|e| format!("a certificate that does not read: {e}"))?;
        if !rest.is_empty() {
            return Err("a certificate with trailing bytes".into());
        }
        if cert.signature_algorithm.algorithm.to_id_string() != ECDSA_SHA256
            || cert.tbs_certificate.signature.algorithm.to_id_string() != ECDSA_SHA256
        {
            return Err("a certificate not signed with ECDSA P-256".into());
        }
        if cert.issuer().as_raw() != self.ca_subject.as_slice() {
            return Err("a certificate from another CA".into());
        }
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_ASN1, &self.ca_key)
            .verify(cert.tbs_certificate.as_ref(), &cert.signature_value.data)
            .map_err(|_| "a certificate the event's mesh CA did not sign".to_string())?;
        if cert.is_ca() {
            return Err("a CA certificate as a device".into());
        }
        let spki = cert.public_key();
        let curve = spki
            .algorithm
            .parameters
            .as_ref()
            .and_then(|p| p.as_oid().ok())
            .map(|o| o.to_id_string());
        if spki.algorithm.algorithm.to_id_string() != EC_PUBLIC_KEY
            || curve.as_deref() != Some(P256)
        {
            return Err("a device key that is not ECDSA P-256".into());
        }
        let peer = PeerId::from_cert(&rustls_pki_types::CertificateDer::from(cert_der))
            .map_err(|e| format!("a certificate naming no device: {e}"))?;
        if peer.event != self.event.as_str() {
            return Err(format!("a device of event {:?}", peer.event));
        }
        let key = spki.subject_public_key.data.to_vec();
        let validity = cert.validity();
        Ok(Device {
            node: node_of_key(&key),
            peer,
            key,
            not_before_ms: validity.not_before.timestamp().saturating_mul(1000),
            not_after_ms: validity.not_after.timestamp().saturating_mul(1000),
            cert_der: cert_der.to_vec(),
        })
    }

    /// The event.
    pub fn event(&self) -> &EventId {
        &self.event
    }

    /// Whether the event's CA signed this revocation; says why not.
    pub fn check_revocation(&self, r: &gatemesh_wire::Revocation) -> Result<(), String> {
        let Some(sig) = r.sig.as_deref() else {
            return Err(format!("an unsigned revocation of node {}", r.node));
        };
        let Ok(sig) = B64.decode(sig) else {
            return Err("a revocation whose signature is not base64url".into());
        };
        let unsigned = r.unsigned_json().map_err(|e| e.to_string())?;
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &self.ca_key)
            .verify(&revocation_message(&self.event, &unsigned), &sig)
            .map_err(|_| {
                format!(
                    "a revocation of node {} that the event's mesh CA did not sign",
                    r.node
                )
            })
    }
}

/// The bytes the CA's signature of a revocation covers.
fn revocation_message(event: &EventId, unsigned_json: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(REVOCATION_DOMAIN.len() + unsigned_json.len() + 32);
    for part in [REVOCATION_DOMAIN, event.as_str().as_bytes()] {
        out.extend_from_slice(part);
        out.push(0);
    }
    out.extend_from_slice(unsigned_json.as_bytes());
    out
}

/// The event's mesh CA as a signer of revocations: only where the CA key is kept (the
/// server). The key never leaves this value.
pub struct CaSigner {
    event: EventId,
    key: EcdsaKeyPair,
    rng: SystemRandom,
}

impl std::fmt::Debug for CaSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CaSigner")
            .field("event", &self.event)
            .finish_non_exhaustive()
    }
}

impl CaSigner {
    /// The signer of the CA whose certificate and PKCS#8 key are in these PEM texts; the
    /// key must be the certificate's.
    pub fn from_pem(event: &EventId, ca_pem: &str, key_pem: &str) -> Result<Self, LedgerError> {
        use rustls_pki_types::{PrivatePkcs8KeyDer, pem::PemObject};
        let trust = Trust::from_pem(ca_pem, event)?;
        let key = PrivatePkcs8KeyDer::from_pem_slice(key_pem.as_bytes())
            .map_err(|e| LedgerError::Identity(format!("the mesh CA key: {e}")))?;
        let rng = SystemRandom::new();
        let key = EcdsaKeyPair::from_pkcs8(
            &ECDSA_P256_SHA256_FIXED_SIGNING,
            key.secret_pkcs8_der(),
            &rng,
        )
        .map_err(|e| LedgerError::Identity(format!("the mesh CA key: {e}")))?;
        if key.public_key().as_ref() != trust.ca_key.as_slice() {
            return Err(LedgerError::Identity(
                "the mesh CA key does not belong to its certificate".into(),
            ));
        }
        Ok(Self {
            event: event.clone(),
            key,
            rng,
        })
    }

    /// Signs `r` (sets its `sig`).
    pub fn sign(&self, r: &mut gatemesh_wire::Revocation) -> Result<(), LedgerError> {
        r.sig = None;
        let unsigned = r
            .unsigned_json()
            .map_err(|e| LedgerError::Corrupt(e.to_string()))?;
        let sig = self
            .key
            .sign(&self.rng, &revocation_message(&self.event, &unsigned))
            .map_err(|_| LedgerError::Identity("signing failed".into()))?;
        r.sig = Some(B64.encode(sig.as_ref()));
        Ok(())
    }
}

/// What this device signs its records with.
pub struct Signer {
    device: Arc<Device>,
    key: EcdsaKeyPair,
    rng: SystemRandom,
    /// The same key for deterministic signatures (RFC 6979, see
    /// [`Signer::sign_redemption_again`]).
    again: p256::ecdsa::SigningKey,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer")
            .field("node", &self.device.node)
            .field("peer", &self.device.peer)
            .finish_non_exhaustive()
    }
}

impl Signer {
    /// The signer of the device with this certificate (DER) and PKCS#8 key, which must be
    /// the certificate's and vouched for by `trust`.
    pub fn new(trust: &Trust, cert_der: &[u8], pkcs8: &[u8]) -> Result<Self, LedgerError> {
        let device = trust
            .device(cert_der)
            .map_err(|why| LedgerError::Identity(format!("this device's certificate: {why}")))?;
        let rng = SystemRandom::new();
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8, &rng)
            .map_err(|e| LedgerError::Identity(format!("this device's key: {e}")))?;
        if key.public_key().as_ref() != device.key.as_slice() {
            return Err(LedgerError::Identity(
                "this device's key does not belong to its certificate".into(),
            ));
        }
        use p256::pkcs8::DecodePrivateKey;
        let again = p256::ecdsa::SigningKey::from_pkcs8_der(pkcs8)
            .map_err(|e| LedgerError::Identity(format!("this device's key: {e}")))?;
        Ok(Self {
            device: Arc::new(device),
            key,
            rng,
            again,
        })
    }

    /// The signer of a device certificate and PKCS#8 key in PEM form.
    pub fn from_pem(trust: &Trust, cert_pem: &str, key_pem: &str) -> Result<Self, LedgerError> {
        use rustls_pki_types::{CertificateDer, PrivatePkcs8KeyDer, pem::PemObject};
        let cert = CertificateDer::from_pem_slice(cert_pem.as_bytes())
            .map_err(|e| LedgerError::Identity(format!("the device certificate: {e}")))?;
        let key = PrivatePkcs8KeyDer::from_pem_slice(key_pem.as_bytes())
            .map_err(|e| LedgerError::Identity(format!("the device key: {e}")))?;
        Self::new(trust, cert.as_ref(), key.secret_pkcs8_der())
    }

    /// The signer and the trust of a device identity as `gatemesh_mesh` loads it.
    pub fn from_identity(
        identity: &gatemesh_mesh::pki::Identity,
        event: &EventId,
    ) -> Result<(Self, Trust), LedgerError> {
        let trust = Trust::new(identity.ca.as_ref(), event)?;
        let cert = identity
            .creds
            .chain
            .first()
            .ok_or_else(|| LedgerError::Identity("no device certificate".into()))?;
        let rustls_pki_types::PrivateKeyDer::Pkcs8(key) = &identity.creds.key else {
            return Err(LedgerError::Identity("the device key is not PKCS#8".into()));
        };
        let signer = Self::new(&trust, cert.as_ref(), key.secret_pkcs8_der())?;
        Ok((signer, trust))
    }

    /// This device's node id, derived from its key.
    pub fn node(&self) -> &NodeId {
        &self.device.node
    }

    /// This device, as its certificate says.
    pub fn device(&self) -> &Arc<Device> {
        &self.device
    }

    /// Makes `r` a record of this device and returns the bytes its signature covers.
    fn prepare<R: crate::model::Record>(
        &self,
        event: &EventId,
        r: &mut R,
    ) -> Result<Vec<u8>, LedgerError> {
        r.set_writer(&self.device.node);
        *r.sig_mut() = None;
        let unsigned = r
            .unsigned_json()
            .map_err(|e| LedgerError::Corrupt(e.to_string()))?;
        Ok(message(event, R::MAP, &unsigned))
    }

    /// Signs `r` as a record of this device, written outside any ledger.
    fn sign_as<R: crate::model::Record>(
        &self,
        event: &EventId,
        r: &mut R,
    ) -> Result<(), LedgerError> {
        let message = self.prepare(event, r)?;
        *r.sig_mut() = Some(self.sign(&message)?);
        Ok(())
    }

    /// Signs a redemption this device writes outside any ledger (the server's admissions
    /// taken online): sets its writer to this device and its `sig`.
    pub fn sign_redemption(
        &self,
        event: &EventId,
        r: &mut crate::model::Redemption,
    ) -> Result<(), LedgerError> {
        self.sign_as(event, r)
    }

    /// Signs, as [`Signer::sign_redemption`] does, a redemption made from what the server
    /// stored (an admission it took without a gate's record), deterministically (RFC 6979):
    /// the same record always gets the same signature, so the record can be made again
    /// each time it is relayed instead of signed and stored on every request, and two
    /// gates given it at different times write the very same value.
    pub fn sign_redemption_again(
        &self,
        event: &EventId,
        r: &mut crate::model::Redemption,
    ) -> Result<(), LedgerError> {
        use p256::ecdsa::signature::Signer as _;
        let message = self.prepare(event, r)?;
        let sig: p256::ecdsa::Signature = self
            .again
            .try_sign(&message)
            .map_err(|_| LedgerError::Identity("signing failed".into()))?;
        r.sig = Some(B64.encode(sig.to_bytes()));
        Ok(())
    }

    /// Signs a ticket's standing this device writes outside any ledger (the server's word on
    /// a void or a transfer, which gates write into their ledgers as it is). Only the
    /// server's identity may write standings.
    pub fn sign_status(
        &self,
        event: &EventId,
        s: &mut crate::model::Status,
    ) -> Result<(), LedgerError> {
        use crate::model::Record;
        if !may_write(self.device.role(), crate::model::Status::MAP) {
            return Err(LedgerError::Refused(format!(
                "a {} does not write standings",
                self.device.role().as_str()
            )));
        }
        self.sign_as(event, s)
    }

    /// Signs a release of the event's check-in lists (the server's, which gates write into
    /// their ledgers as it is). Only the server's identity may release lists.
    pub fn sign_lists(
        &self,
        event: &EventId,
        l: &mut crate::model::ListsRecord,
    ) -> Result<(), LedgerError> {
        use crate::model::Record;
        if !may_write(self.device.role(), crate::model::ListsRecord::MAP) {
            return Err(LedgerError::Refused(format!(
                "a {} does not release check-in lists",
                self.device.role().as_str()
            )));
        }
        self.sign_as(event, l)
    }

    /// Signs a decision on a flag this device writes outside any ledger (staff's decision
    /// taken at the server, which gates write into their ledgers as it is).
    pub fn sign_resolution(
        &self,
        event: &EventId,
        r: &mut crate::model::Resolution,
    ) -> Result<(), LedgerError> {
        self.sign_as(event, r)
    }

    /// The signature (base64url of the 64-byte r‖s) of `message`.
    pub(crate) fn sign(&self, message: &[u8]) -> Result<String, LedgerError> {
        Ok(B64.encode(self.sign_raw(message)?))
    }

    /// The signature of `message`, the 64 bytes r‖s (s in either form).
    pub(crate) fn sign_raw(&self, message: &[u8]) -> Result<Vec<u8>, LedgerError> {
        let sig = self
            .key
            .sign(&self.rng, message)
            .map_err(|_| LedgerError::Identity("signing failed".into()))?;
        Ok(sig.as_ref().to_vec())
    }
}

/// Checks a redemption that travels outside any ledger (a gate's journal item at the server)
/// against the certificate (DER) that came with it: the CA vouches for the device, the
/// device is the record's writer, signed it, and may write redemptions. Says why not.
pub fn check_redemption(
    trust: &Trust,
    cert_der: &[u8],
    r: &crate::model::Redemption,
) -> Result<Device, String> {
    let device = trust.device(cert_der)?;
    crate::admit::signed_by(r, &device, &trust.event)?;
    Ok(device)
}

/// [`check_redemption`] for a redemption that may come again (every gate uploads every
/// admission it holds, its peers' too): a signature `vouched` found good before costs a
/// digest, not an ECDSA verification, and one found good now joins it. Every other check
/// is made each time.
pub fn check_redemption_vouched(
    trust: &Trust,
    cert_der: &[u8],
    r: &crate::model::Redemption,
    vouched: &crate::admit::Vouched,
) -> Result<Device, String> {
    use crate::model::Record;
    let device = trust.device(cert_der)?;
    let fact = r.unsigned_json().ok().zip(r.sig()).map(|(unsigned, sig)| {
        Checked::fact(
            &device,
            &message(&trust.event, crate::model::Redemption::MAP, &unsigned),
            sig,
        )
    });
    let mut checked = Checked::default();
    let seen = fact.is_some_and(|f| vouched.contains(&f));
    if let (true, Some(f)) = (seen, fact) {
        checked.insert(f);
    }
    crate::admit::signed_by_checked(r, &device, &trust.event, &checked)?;
    if let (false, Some(f)) = (seen, fact) {
        vouched.keep(f);
    }
    Ok(device)
}

/// The bytes a record's signature covers.
pub(crate) fn message(event: &EventId, map: &str, unsigned_json: &str) -> Vec<u8> {
    let mut out =
        Vec::with_capacity(DOMAIN.len() + event.as_str().len() + unsigned_json.len() + 16);
    for part in [DOMAIN, event.as_str().as_bytes(), map.as_bytes()] {
        out.extend_from_slice(part);
        out.push(0);
    }
    out.extend_from_slice(unsigned_json.as_bytes());
    out
}

/// Whether a device of `role` may write records of `map`.
pub(crate) fn may_write(role: Role, map: &str) -> bool {
    match role {
        Role::Server => true,
        Role::Gate => matches!(map, "redemptions" | "resolutions" | "audit"),
        Role::Observer => matches!(map, "resolutions" | "audit"),
    }
}

/// A device's certificate as the `devices` map holds it, under its node id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceRecord {
    /// Derived from the certificate's key.
    pub node: NodeId,
    /// The certificate, base64url DER.
    pub cert: String,
}

impl DeviceRecord {
    /// The record of `device`.
    pub fn of(device: &Device) -> Self {
        Self {
            node: device.node.clone(),
            cert: B64.encode(&device.cert_der),
        }
    }

    /// The device it names, if `trust` vouches for it under this very node id.
    pub fn device(&self, trust: &Trust) -> Result<Device, String> {
        let der = B64
            .decode(&self.cert)
            .map_err(|_| "a device certificate that is not base64url".to_string())?;
        let device = trust.device(&der)?;
        if device.node != self.node {
            return Err(format!(
                "a certificate under node id {}, whose key makes it {}",
                self.node, device.node
            ));
        }
        Ok(device)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_ids_from_keys_are_node_ids_and_differ() {
        let a = node_of_key(b"one key");
        let b = node_of_key(b"another key");
        assert_eq!(a.as_str().len(), 26);
        assert_ne!(a, b);
        assert_eq!(a, node_of_key(b"one key"));
    }

    #[test]
    fn the_message_separates_event_map_and_record() {
        let e = EventId::new("E").unwrap();
        let f = EventId::new("F").unwrap();
        assert_ne!(message(&e, "audit", "{}"), message(&f, "audit", "{}"));
        assert_ne!(message(&e, "audit", "{}"), message(&e, "status", "{}"));
    }
}
