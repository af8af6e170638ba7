//! The app's set-up (`app.json` in its directory) and its staff: who may do what, and their
//! PINs as Argon2id hashes.

use std::{net::SocketAddr, path::Path, path::PathBuf};

use anyhow::{Context, Result};
use argon2::{Argon2, PasswordHash, PasswordHasher, PasswordVerifier, password_hash::SaltString};
use gatemesh_mesh::fs::write_private;
use gatemesh_wire::Label;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use ts_rs::TS;

use crate::DeskError;

/// What a signed-in person may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum StaffRole {
    /// Scans tickets.
    Staff,
    /// Also resolves flagged tickets.
    Supervisor,
    /// Everything, set-up included.
    Manager,
}

impl StaffRole {
    /// Every role, least allowed first (the order roles compare in).
    pub const ALL: [Self; 3] = [Self::Staff, Self::Supervisor, Self::Manager];
}

/// The fewest digits in a staff PIN.
pub const PIN_MIN_DIGITS: usize = 4;
/// The most digits in a staff PIN.
pub const PIN_MAX_DIGITS: usize = 12;

/// The staff PIN rule, the one place it is written: [`PIN_MIN_DIGITS`] to [`PIN_MAX_DIGITS`]
/// ASCII digits. Every [`StaffEntry`] is made through it, at set-up as in the settings; the
/// UI gets the bounds and this function's answers for sample PINs from the bindings, and its
/// own check is tested against those answers.
pub fn check_pin(pin: &str) -> Result<(), DeskError> {
    let ok = (PIN_MIN_DIGITS..=PIN_MAX_DIGITS).contains(&pin.len())
        && pin.bytes().all(|b| b.is_ascii_digit());
    if ok {
        Ok(())
    } else {
        Err(DeskError::BadInput(format!(
            "a PIN is {PIN_MIN_DIGITS}-{PIN_MAX_DIGITS} digits"
        )))
    }
}

/// The longest gate name, in bytes.
pub const GATE_NAME_MAX: usize = 63;

/// A gate's name as people give it (trimmed): 1 to [`GATE_NAME_MAX`] bytes, no control
/// characters. The set-up and the settings both check it here.
pub fn check_gate_name(name: &str) -> Result<String, DeskError> {
    let name = name.trim();
    if name.is_empty() || name.len() > GATE_NAME_MAX || name.chars().any(char::is_control) {
        return Err(DeskError::BadInput(format!(
            "a gate name is 1-{GATE_NAME_MAX} printable characters"
        )));
    }
    Ok(name.to_owned())
}

/// A staff member as the app knows them. The PIN is kept as an Argon2id PHC string (its
/// own random salt inside). An entry written before Argon2id holds a salted SHA-256 instead
/// (`salt` set); its first successful sign-in replaces it by an Argon2id hash.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StaffEntry {
    pub name: String,
    pub role: StaffRole,
    /// Argon2id, as a PHC string; before: hex SHA-256 of `salt:PIN`.
    pub pin_hash: String,
    /// Only in an entry from before Argon2id: the SHA-256 salt.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub salt: String,
    /// Wrong PINs given for this name since its last sign-in.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub failures: u32,
    /// Too many wrong PINs: refused until a manager unlocks it (or gives a new PIN).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub locked: bool,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// What a PIN given at sign-in is to a [`StaffEntry`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PinMatch {
    No,
    Yes,
    /// It matches a hash from before Argon2id: rehash it.
    YesLegacy,
}

impl StaffEntry {
    /// A staff member named `name` (trimmed; the wire's [`Label::person`] rule, as every
    /// name staff decide under reaches the ledger and the server) with a PIN that keeps
    /// [`check_pin`].
    pub fn new(name: &str, role: StaffRole, pin: &str) -> Result<Self, DeskError> {
        let name = Label::person(name.trim()).ok_or_else(|| {
            DeskError::BadInput(format!(
                "a name is 1-{} bytes of printable text, without /",
                Label::MAX
            ))
        })?;
        check_pin(pin)?;
        Ok(Self {
            name: name.into(),
            role,
            pin_hash: hash_pin(pin)?,
            salt: String::new(),
            failures: 0,
            locked: false,
        })
    }

    pub(crate) fn matches(&self, pin: &str) -> PinMatch {
        if !self.salt.is_empty() {
            let given = legacy_pin_hash(&self.salt, pin);
            // The same time whatever the two share.
            let same = given.len() == self.pin_hash.len()
                && given
                    .bytes()
                    .zip(self.pin_hash.bytes())
                    .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                    == 0;
            return if same {
                PinMatch::YesLegacy
            } else {
                PinMatch::No
            };
        }
        let Ok(stored) = PasswordHash::new(&self.pin_hash) else {
            return PinMatch::No;
        };
        match Argon2::default().verify_password(pin.as_bytes(), &stored) {
            Ok(()) => PinMatch::Yes,
            Err(_) => PinMatch::No,
        }
    }

    /// Keeps `pin` (which just matched) as an Argon2id hash.
    pub(crate) fn rehash(&mut self, pin: &str) -> Result<(), DeskError> {
        self.pin_hash = hash_pin(pin)?;
        self.salt.clear();
        Ok(())
    }
}

/// Argon2id with its default cost (19 MiB, 2 passes) and a fresh random salt, as a PHC
/// string.
fn hash_pin(pin: &str) -> Result<String, DeskError> {
    let salt = SaltString::generate(&mut rand_core::OsRng);
    Argon2::default()
        .hash_password(pin.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| DeskError::Other(anyhow::anyhow!("hashing a PIN: {e}")))
}

/// How PINs were kept before Argon2id (read only, to move them over).
pub(crate) fn legacy_pin_hash(salt: &str, pin: &str) -> String {
    hex(&Sha256::digest(format!("{salt}:{pin}").as_bytes()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// How long the app keeps someone signed in without a command of theirs, by default.
pub const IDLE_SIGN_OUT_DEFAULT_MIN: u32 = 15;
/// The longest idle time a manager may set.
pub const IDLE_SIGN_OUT_MAX_MIN: u32 = 240;

/// The idle sign-out rule: 1 to [`IDLE_SIGN_OUT_MAX_MIN`] minutes.
pub fn check_idle_minutes(minutes: u32) -> Result<u32, DeskError> {
    if (1..=IDLE_SIGN_OUT_MAX_MIN).contains(&minutes) {
        Ok(minutes)
    } else {
        Err(DeskError::BadInput(format!(
            "the idle sign-out is 1-{IDLE_SIGN_OUT_MAX_MIN} minutes"
        )))
    }
}

fn idle_default() -> u32 {
    IDLE_SIGN_OUT_DEFAULT_MIN
}

/// The app's set-up, kept as `app.json` in its directory.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DeskConfig {
    pub event: String,
    pub gate_name: String,
    /// Issuer public keys (SPKI PEM).
    pub issuer_pems: Vec<String>,
    #[serde(default)]
    pub capacity: Option<u32>,
    /// The device's mesh identity (from `gatemesh enroll` or a pairing); none: no mesh.
    #[serde(default)]
    pub identity_dir: Option<PathBuf>,
    #[serde(default = "any_addr")]
    pub mesh_bind: SocketAddr,
    #[serde(default)]
    pub peers: Vec<SocketAddr>,
    /// Find the event's other gates by mDNS.
    #[serde(default)]
    pub discovery: bool,
    #[serde(default)]
    pub server: Option<String>,
    /// The server's certificate, pinned at pairing: the only one the uplink accepts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_fingerprint: Option<gatemesh_wire::CertFingerprint>,
    #[serde(default)]
    pub server_token: Option<String>,
    /// The gate's local HTTP API, for scanners on the network and for tests.
    #[serde(default = "local_api")]
    pub api: SocketAddr,
    /// Serve the local API beyond this machine (an `api` address that is not loopback).
    #[serde(default)]
    pub api_public: bool,
    #[serde(default)]
    pub reentry: bool,
    #[serde(default)]
    pub reject_unlisted: bool,
    /// The event's check-in lists (a lists file, as `gatemesh gate --lists` reads it); none:
    /// every product at any time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_in: Option<gatemesh_wire::lists::ListsFile>,
    /// The lists of `check_in` this gate checks against (none: all of them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lists: Vec<gatemesh_wire::ListId>,
    /// The event's ticket list (`tickets.csv` from `gatemesh issue`, or a JSON manifest), for
    /// an event with no server: which tickets exist and, where it names holders and orders,
    /// the guests staff may find by them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest: Option<PathBuf>,
    pub staff: Vec<StaffEntry>,
    /// Minutes without a command of the signed-in person before the app signs them out.
    #[serde(default = "idle_default")]
    pub idle_sign_out_min: u32,
    /// Set up by `--demo`: the sign-in screen shows the demo PINs.
    #[serde(default)]
    pub demo: bool,
}

fn any_addr() -> SocketAddr {
    SocketAddr::from(([0, 0, 0, 0], 0))
}

fn local_api() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

const CONFIG_FILE: &str = "app.json";

/// A new set-up may be written in `root`: none is there yet, and someone can manage it.
pub(crate) fn ready_for_set_up(root: &Path, staff: &[StaffEntry]) -> Result<(), DeskError> {
    if DeskConfig::load(root)?.is_some() {
        return Err(DeskError::AlreadySetUp);
    }
    if !staff.iter().any(|s| s.role == StaffRole::Manager) {
        return Err(DeskError::BadInput(
            "set up at least one manager PIN".into(),
        ));
    }
    Ok(())
}

impl DeskConfig {
    /// A gate of `event` with the defaults of a real event: no mesh identity or server yet,
    /// discovery on, the local API on a free loopback port, single entry, unlisted tickets
    /// admitted and marked.
    pub fn new_event(
        event: String,
        gate_name: String,
        issuer_pems: Vec<String>,
        staff: Vec<StaffEntry>,
    ) -> Self {
        Self {
            event,
            gate_name,
            issuer_pems,
            capacity: None,
            identity_dir: None,
            mesh_bind: any_addr(),
            peers: Vec::new(),
            discovery: true,
            server: None,
            server_fingerprint: None,
            server_token: None,
            api: local_api(),
            api_public: false,
            reentry: false,
            reject_unlisted: false,
            check_in: None,
            lists: Vec::new(),
            manifest: None,
            staff,
            idle_sign_out_min: IDLE_SIGN_OUT_DEFAULT_MIN,
            demo: false,
        }
    }

    pub fn load(root: &Path) -> Result<Option<Self>> {
        let path = root.join(CONFIG_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(Some(
                serde_json::from_str(&text)
                    .with_context(|| format!("reading {}", path.display()))?,
            )),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
        }
    }

    /// Writes the set-up (readable by its owner only: it holds the server credential).
    pub fn save(&self, root: &Path) -> Result<()> {
        std::fs::create_dir_all(root)?;
        let aside = root.join(format!("{CONFIG_FILE}.new"));
        write_private(&aside, &serde_json::to_string_pretty(self)?)?;
        std::fs::rename(&aside, root.join(CONFIG_FILE))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_roles_are_listed_in_rank_order() {
        // A new role fails to compile here until `ALL` is looked at.
        let rank = |r: StaffRole| match r {
            StaffRole::Staff => 0,
            StaffRole::Supervisor => 1,
            StaffRole::Manager => 2,
        };
        for (i, r) in StaffRole::ALL.iter().enumerate() {
            assert_eq!(rank(*r), i);
        }
        assert!(StaffRole::ALL.is_sorted());
    }

    #[test]
    fn one_pin_rule_for_every_staff_entry() {
        for ok in ["1234", "0000", "123456789012"] {
            assert!(check_pin(ok).is_ok(), "{ok}");
            assert!(StaffEntry::new("Jo", StaffRole::Manager, ok).is_ok());
        }
        // The 13-digit PIN is the one set-up used to take and the settings refused.
        for bad in ["", "123", "1234567890123", "12a4", " 1234", "１２３４"] {
            assert!(check_pin(bad).is_err(), "{bad:?}");
            assert!(StaffEntry::new("Jo", StaffRole::Manager, bad).is_err());
        }
        assert!(StaffEntry::new("  ", StaffRole::Staff, "1234").is_err());
        assert!(StaffEntry::new(&"x".repeat(65), StaffRole::Staff, "1234").is_err());
        assert!(StaffEntry::new("a\tb", StaffRole::Staff, "1234").is_err());
        // A name that would pass for a device's decision at the server (`DEVICE / NAME`).
        assert!(StaffEntry::new("North-1 / Ann", StaffRole::Staff, "1234").is_err());
        assert_eq!(
            StaffEntry::new(" Jo ", StaffRole::Staff, "1234")
                .unwrap()
                .name,
            "Jo"
        );
    }

    #[test]
    fn gate_names_keep_one_rule() {
        assert_eq!(check_gate_name(" North 1 ").unwrap(), "North 1");
        for bad in ["", "  ", "a\tb", &"x".repeat(64)] {
            assert!(check_gate_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn pins_are_argon2id_with_their_own_salt_and_roles_ordered() {
        let a = StaffEntry::new("A", StaffRole::Staff, "1234").unwrap();
        let b = StaffEntry::new("B", StaffRole::Staff, "1234").unwrap();
        assert_ne!(a.pin_hash, b.pin_hash);
        assert!(a.pin_hash.starts_with("$argon2id$"), "{}", a.pin_hash);
        assert_eq!(a.matches("1234"), PinMatch::Yes);
        assert_eq!(a.matches("1235"), PinMatch::No);
        assert!(StaffRole::Manager > StaffRole::Supervisor);
        assert!(StaffRole::Supervisor > StaffRole::Staff);
    }

    #[test]
    fn a_sha256_pin_from_before_matches_once_and_is_rehashed() {
        let mut old = StaffEntry {
            name: "Old".into(),
            role: StaffRole::Staff,
            salt: "0011223344556677".into(),
            pin_hash: legacy_pin_hash("0011223344556677", "4321"),
            failures: 0,
            locked: false,
        };
        assert_eq!(old.matches("1234"), PinMatch::No);
        assert_eq!(old.matches("4321"), PinMatch::YesLegacy);
        old.rehash("4321").unwrap();
        assert!(old.salt.is_empty() && old.pin_hash.starts_with("$argon2id$"));
        assert_eq!(old.matches("4321"), PinMatch::Yes);
    }
}
