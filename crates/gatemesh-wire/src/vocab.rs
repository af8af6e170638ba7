//! The words every part of gatemesh shares: verdicts and their reasons, staff's actions on
//! a flag, device roles, scan directions, a ticket's standing. Their serde names are the
//! names on every wire (HTTP bodies, ledger records, the app's bindings).

use gatemesh_ticket::TicketId;
use serde::{Deserialize, Serialize};

use crate::WireError;

/// Green, yellow, red.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum Verdict {
    /// Let the holder in.
    Admit,
    /// Already used: show when and where, so staff can tell a re-scan from a copy.
    Duplicate,
    /// Refused, with a reason.
    Reject,
}

impl Verdict {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Admit => "admit",
            Self::Duplicate => "duplicate",
            Self::Reject => "reject",
        }
    }
}

/// Why, for every verdict. Stable names on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[non_exhaustive]
pub enum Reason {
    // admit
    /// A first entry.
    Valid,
    /// Admitted although the manifest does not list the ticket (policy `admit_and_mark`).
    Unlisted,
    /// Back in after an exit scan (re-entry policy).
    Reentry,
    /// An exit scan (re-entry policy): the holder may come back.
    Exit,
    // duplicate
    /// Already inside: another use of the same ticket.
    AlreadyAdmitted,
    // reject, from the ticket itself
    /// Not a ticket code at all, or a damaged one.
    Unreadable,
    /// The signature does not match: forged or altered.
    BadSignature,
    /// Signed by a key this gate does not hold.
    UnknownKey,
    /// A ticket of another event.
    WrongEvent,
    /// Past its validity.
    Expired,
    /// Before its validity.
    NotYetValid,
    // reject, from the ledger
    /// Refunded or annulled.
    Void,
    /// Replaced by another ticket (see `transferred_to`).
    Transferred,
    /// Not in the manifest, and the event refuses unlisted tickets.
    UnknownTicket,
    /// Staff denied it after a flag.
    Denied,
    /// An exit scan for a ticket that is not inside.
    NotInside,
    /// An exit scan where the event allows a single entry only.
    ExitNotAllowed,
    // reject, from the writer
    /// A record that a device wrote after it was revoked (a journal relays it): set aside,
    /// not counted.
    RevokedDevice,
    // reject, from the gate's check-in lists
    /// None of the gate's lists admits the ticket's product (a GA ticket at the VIP door).
    NotOnList,
    /// A list of the gate admits the product, but not now (a Friday ticket on Saturday).
    NotValidNow,
}

impl Reason {
    /// Every reason, in the order above. A new reason goes here too: the app's plain words and
    /// the server's document are checked against this list.
    pub const ALL: [Self; 20] = [
        Self::Valid,
        Self::Unlisted,
        Self::Reentry,
        Self::Exit,
        Self::AlreadyAdmitted,
        Self::Unreadable,
        Self::BadSignature,
        Self::UnknownKey,
        Self::WrongEvent,
        Self::Expired,
        Self::NotYetValid,
        Self::Void,
        Self::Transferred,
        Self::UnknownTicket,
        Self::Denied,
        Self::NotInside,
        Self::ExitNotAllowed,
        Self::RevokedDevice,
        Self::NotOnList,
        Self::NotValidNow,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Valid => "valid",
            Self::Unlisted => "unlisted",
            Self::Reentry => "reentry",
            Self::Exit => "exit",
            Self::AlreadyAdmitted => "already_admitted",
            Self::Unreadable => "unreadable",
            Self::BadSignature => "bad_signature",
            Self::UnknownKey => "unknown_key",
            Self::WrongEvent => "wrong_event",
            Self::Expired => "expired",
            Self::NotYetValid => "not_yet_valid",
            Self::Void => "void",
            Self::Transferred => "transferred",
            Self::UnknownTicket => "unknown_ticket",
            Self::Denied => "denied",
            Self::NotInside => "not_inside",
            Self::ExitNotAllowed => "exit_not_allowed",
            Self::RevokedDevice => "revoked_device",
            Self::NotOnList => "not_on_list",
            Self::NotValidNow => "not_valid_now",
        }
    }
}

impl From<gatemesh_ticket::Reason> for Reason {
    fn from(r: gatemesh_ticket::Reason) -> Self {
        use gatemesh_ticket::Reason as T;
        match r {
            T::BadSignature => Self::BadSignature,
            T::UnknownKey => Self::UnknownKey,
            T::WrongEvent => Self::WrongEvent,
            T::Expired => Self::Expired,
            T::NotYetValid => Self::NotYetValid,
            _ => Self::Unreadable,
        }
    }
}

/// What staff decided about a flagged ticket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum Action {
    /// Same person: the admission stands and the flag is cleared.
    Accept,
    /// A second person: the ticket is refused (`denied`) from now on.
    Deny,
    /// Undo the redemptions: the ticket counts as unused again.
    Revert,
}

impl Action {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Accept => "accept",
            Self::Deny => "deny",
            Self::Revert => "revert",
        }
    }
}

/// What a device is, as its certificate and its pairing say.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum Role {
    /// Admits holders.
    #[default]
    Gate,
    /// Watches every gate and resolves flags; admits no one (a manager's laptop).
    Observer,
    /// The central server's own identity under the event's mesh CA: it signs what the
    /// server itself writes (admissions taken online). Never a paired device.
    Server,
}

impl Role {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Gate => "gate",
            Self::Observer => "observer",
            Self::Server => "server",
        }
    }
}

impl std::str::FromStr for Role {
    type Err = WireError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "gate" => Ok(Self::Gate),
            "observer" => Ok(Self::Observer),
            "server" => Ok(Self::Server),
            other => Err(WireError::Invalid {
                what: "role (gate, observer or server)",
                value: crate::error::shorten(other),
            }),
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which way a holder passed the scanner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum Direction {
    /// In (the default).
    #[default]
    Entry,
    /// Only under the re-entry policy: the holder left and may come back in.
    Exit,
}

/// A ticket's status at the server, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum TicketStatus {
    /// Good for entry.
    Active,
    /// Refunded or annulled.
    Void,
    /// Replaced by another ticket.
    Transferred,
}

impl TicketStatus {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Void => "void",
            Self::Transferred => "transferred",
        }
    }
}

impl std::str::FromStr for TicketStatus {
    type Err = WireError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "active" => Ok(Self::Active),
            "void" => Ok(Self::Void),
            "transferred" => Ok(Self::Transferred),
            other => Err(WireError::Invalid {
                what: "ticket status",
                value: crate::error::shorten(other),
            }),
        }
    }
}

/// A ticket's standing, with what goes with it: why it is void, or the ticket that replaced it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Standing {
    /// Good for entry.
    Active,
    /// Refunded or annulled.
    Void {
        /// Why, as the organizer said.
        reason: String,
    },
    /// Replaced by another ticket; the holder must show the new one.
    Transferred {
        /// The ticket that replaced it.
        to: TicketId,
    },
}

impl Standing {
    /// The status name of this standing.
    pub fn status(&self) -> TicketStatus {
        match self {
            Self::Active => TicketStatus::Active,
            Self::Void { .. } => TicketStatus::Void,
            Self::Transferred { .. } => TicketStatus::Transferred,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wire<T: Serialize>(v: T) -> String {
        serde_json::to_value(v)
            .unwrap()
            .as_str()
            .unwrap()
            .to_owned()
    }

    #[test]
    fn names_are_the_serde_names() {
        for r in Reason::ALL {
            assert_eq!(wire(r), r.as_str());
        }
        // `ALL` is complete: every reason's position is its own.
        for (i, r) in Reason::ALL.iter().enumerate() {
            assert_eq!(Reason::ALL.iter().position(|x| x == r), Some(i));
        }
        for v in [Verdict::Admit, Verdict::Duplicate, Verdict::Reject] {
            assert_eq!(wire(v), v.as_str());
        }
        for a in [Action::Accept, Action::Deny, Action::Revert] {
            assert_eq!(wire(a), a.as_str());
        }
        for r in [Role::Gate, Role::Observer, Role::Server] {
            assert_eq!(wire(r), r.as_str());
            assert_eq!(r.as_str().parse::<Role>().unwrap(), r);
        }
        for s in [
            TicketStatus::Active,
            TicketStatus::Void,
            TicketStatus::Transferred,
        ] {
            assert_eq!(wire(s), s.as_str());
            assert_eq!(s.as_str().parse::<TicketStatus>().unwrap(), s);
        }
    }
}
