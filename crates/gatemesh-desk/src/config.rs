//! The app's set-up (`app.json` in its directory) and its staff: who may do what, and their
//! PINs as salted hashes.

use std::{net::SocketAddr, path::Path, path::PathBuf};

use anyhow::{Context, Result};
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

/// A staff member as the app knows them. The PIN is kept as a salted SHA-256.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StaffEntry {
    pub name: String,
    pub role: StaffRole,
    pub salt: String,
    pub pin_hash: String,
}

impl StaffEntry {
    /// A staff member named `name` (trimmed; the wire's [`Label`] rule, as every name staff
    /// decide under reaches the ledger and the server) with a PIN that keeps [`check_pin`].
    pub fn new(name: &str, role: StaffRole, pin: &str) -> Result<Self, DeskError> {
        let name = Label::parse(name.trim()).ok_or_else(|| {
            DeskError::BadInput(format!(
                "a name is 1-{} bytes of printable text",
                Label::MAX
            ))
        })?;
        check_pin(pin)?;
        let salt = random_hex(8);
        Ok(Self {
            name: name.into(),
            role,
            pin_hash: pin_hash(&salt, pin),
            salt,
        })
    }
}

pub(crate) fn pin_hash(salt: &str, pin: &str) -> String {
    hex(&Sha256::digest(format!("{salt}:{pin}").as_bytes()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn random_hex(n: usize) -> String {
    use rand_core::{OsRng, RngCore};
    let mut bytes = vec![0u8; n];
    OsRng.fill_bytes(&mut bytes);
    hex(&bytes)
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
    #[serde(default)]
    pub reentry: bool,
    #[serde(default)]
    pub reject_unlisted: bool,
    pub staff: Vec<StaffEntry>,
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
            reentry: false,
            reject_unlisted: false,
            staff,
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
    fn pins_are_salted_and_roles_ordered() {
        let a = StaffEntry::new("A", StaffRole::Staff, "1234").unwrap();
        let b = StaffEntry::new("B", StaffRole::Staff, "1234").unwrap();
        assert_ne!(a.pin_hash, b.pin_hash);
        assert!(StaffRole::Manager > StaffRole::Supervisor);
        assert!(StaffRole::Supervisor > StaffRole::Staff);
    }
}
