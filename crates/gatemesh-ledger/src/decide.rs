//! The scan decision: pure, deterministic, no I/O. Given what the signature check said and
//! what the ledger knows of the ticket, either answer at once or say which redemption to
//! record (the caller makes it durable before answering).

use gatemesh_ticket::{TicketId, Verified, VerifyError};
pub use gatemesh_wire::{Reason, Verdict};
use serde::{Deserialize, Serialize};

use crate::{
    model::{Direction, NodeId, Redemption, RedemptionId, Standing},
    state::TicketState,
};

/// Entry rules of an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryPolicy {
    /// One entry per ticket (the default).
    #[default]
    Single,
    /// Holders may leave through an exit scan and come back.
    Reentry,
}

/// What to do with a validly signed ticket that a loaded manifest does not list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnlistedPolicy {
    /// Admit, and mark the redemption `unlisted` for review (the default: a ticket sold after
    /// the manifest was pulled is still a paying guest).
    #[default]
    AdmitAndMark,
    /// Refuse as `unknown_ticket`.
    Reject,
}

/// How an event admits tickets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// Single entry or re-entry.
    pub entry: EntryPolicy,
    /// What to do with a ticket the loaded manifest does not list.
    pub unlisted: UnlistedPolicy,
    /// A scanner that sends the same ticket again within this window after its first answer
    /// gets that answer again: scanners double-fire and pages hang. (Not before it: an
    /// answer dated in the future repeats nothing.)
    pub repeat_window_ms: i64,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            entry: EntryPolicy::default(),
            unlisted: UnlistedPolicy::default(),
            repeat_window_ms: 10_000,
        }
    }
}

/// Whether a manifest is loaded, and whether it lists the ticket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listing {
    /// Signature-only mode: every validly signed ticket of the event counts.
    NoManifest,
    /// The manifest lists the ticket.
    Listed,
    /// A manifest is loaded and does not list the ticket.
    Unlisted,
}

/// The scan being decided.
#[derive(Debug, Clone, Copy)]
pub struct Scan<'a> {
    /// The node deciding.
    pub node: &'a NodeId,
    /// The scanner that read the code; the repeat window is per node and scanner.
    pub scanner: &'a str,
    /// Entry or exit.
    pub direction: Direction,
    /// Wall time now, ms since 1970.
    pub now_ms: i64,
    /// How late this node answered its own entries it could not answer at once (its writer
    /// behind), ms after their presentation, by redemption: the repeat window runs from the
    /// answer, so a scanner that asked again while it waited, or just after, gets the first
    /// answer. `None`: every answer came at once.
    pub answered_late: Option<&'a std::collections::HashMap<RedemptionId, i64>>,
}

/// The earlier use a `duplicate` points at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FirstUse {
    /// The admitting redemption.
    pub redemption_id: RedemptionId,
    /// Its gate's human name.
    pub gate: String,
    /// The node that recorded it.
    pub node: NodeId,
    /// The scanner that read it.
    pub scanner: String,
    /// Wall time at that gate, ms since 1970.
    pub at_ms: i64,
}

impl From<&Redemption> for FirstUse {
    fn from(r: &Redemption) -> Self {
        Self {
            redemption_id: r.id.clone(),
            gate: r.gate.clone(),
            node: r.node.clone(),
            scanner: r.scanner.clone(),
            at_ms: r.at_ms,
        }
    }
}

/// A decision that needs no write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// Admit, duplicate or reject.
    pub verdict: Verdict,
    /// Why.
    pub reason: Reason,
    /// For a duplicate: the admission it repeats.
    pub first: Option<FirstUse>,
    /// For a repeated admit: the redemption that admitted.
    pub redemption_id: Option<RedemptionId>,
    /// For `transferred`: the ticket that replaced this one.
    pub transferred_to: Option<TicketId>,
}

impl Answer {
    fn reject(reason: Reason) -> Self {
        Self {
            verdict: Verdict::Reject,
            reason,
            first: None,
            redemption_id: None,
            transferred_to: None,
        }
    }
}

/// The outcome of a scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Answer now; nothing to record.
    Answer(Answer),
    /// Record a redemption in this direction, then answer `admit` with `reason`.
    Record {
        /// The redemption's direction.
        direction: Direction,
        /// `valid`, `reentry`, `unlisted` or `exit`.
        reason: Reason,
        /// Mark the redemption `unlisted`: the loaded manifest does not list the ticket.
        unlisted: bool,
    },
}

/// This scanner's own entry of the ticket within the repeat window, with no exit after it:
/// a scanner that fired twice, or a holder who held the code up again.
///
/// The window is the `repeat_window_ms` up to now, `0 <= now - at <= window`, from the
/// entry's answer: as much longer as this node took to answer it ([`Scan::answered_late`]).
/// A record dated after now (forged, or written before this node's clock was stepped back)
/// is no repeat, or it would turn every copy green without recording anything.
fn repeat<'s>(state: &'s TicketState, policy: &Policy, scan: &Scan<'_>) -> Option<&'s Redemption> {
    let window = |r: &Redemption| {
        let late = scan
            .answered_late
            .and_then(|late| late.get(&r.id))
            .map_or(0, |&ms| ms.max(0));
        0..=policy.repeat_window_ms.saturating_add(late)
    };
    // One pass, in HLC order: the latest own entry in the window, forgotten at any exit after.
    state.effective().fold(None, |own, r| match r.direction {
        Direction::Exit => None,
        Direction::Entry
            if &r.node == scan.node
                && r.scanner == scan.scanner
                && window(r).contains(&scan.now_ms.saturating_sub(r.at_ms)) =>
        {
            Some(r)
        }
        Direction::Entry => own,
    })
}

/// Decides one scan. `state` is the ticket's history (`None` when the code did not verify or
/// the ledger has never heard of the ticket).
pub fn decide(
    verified: &Result<Verified, VerifyError>,
    state: Option<&TicketState>,
    listing: Listing,
    policy: &Policy,
    scan: &Scan<'_>,
) -> Outcome {
    if let Err(e) = verified {
        return Outcome::Answer(Answer::reject(e.reason().into()));
    }
    let empty = TicketState::default();
    let state = state.unwrap_or(&empty);
    if state.denied() {
        return Outcome::Answer(Answer::reject(Reason::Denied));
    }
    // The same scanner again within the window: the same green answer. Also when another
    // gate's concurrent entry has arrived in between (the ticket is flagged then), or a
    // refund or a transfer has: the holder in front of this scanner was admitted a moment
    // ago under the standing the gate knew, and the server learns of both.
    if scan.direction == Direction::Entry
        && let Some(r) = repeat(state, policy, scan)
    {
        return Outcome::Answer(Answer {
            verdict: Verdict::Admit,
            reason: if r.unlisted {
                Reason::Unlisted
            } else {
                Reason::Valid
            },
            first: None,
            redemption_id: Some(r.id.clone()),
            transferred_to: None,
        });
    }
    match state.standing() {
        Standing::Active => {}
        Standing::Void { .. } => return Outcome::Answer(Answer::reject(Reason::Void)),
        Standing::Transferred { to } => {
            return Outcome::Answer(Answer {
                transferred_to: Some(to),
                ..Answer::reject(Reason::Transferred)
            });
        }
    }
    let unlisted = listing == Listing::Unlisted;
    if unlisted && policy.unlisted == UnlistedPolicy::Reject {
        return Outcome::Answer(Answer::reject(Reason::UnknownTicket));
    }

    let holding = match policy.entry {
        EntryPolicy::Single => state.first_entry(),
        EntryPolicy::Reentry => state.inside_since(),
    };
    match scan.direction {
        Direction::Exit => match (policy.entry, holding) {
            (EntryPolicy::Single, _) => Outcome::Answer(Answer::reject(Reason::ExitNotAllowed)),
            (EntryPolicy::Reentry, None) => Outcome::Answer(Answer::reject(Reason::NotInside)),
            (EntryPolicy::Reentry, Some(_)) => Outcome::Record {
                direction: Direction::Exit,
                reason: Reason::Exit,
                unlisted,
            },
        },
        // A repeat within the window was answered above.
        Direction::Entry => match holding {
            None => {
                let reason = if unlisted {
                    Reason::Unlisted
                } else if state.effective().any(|r| r.direction == Direction::Exit) {
                    Reason::Reentry
                } else {
                    Reason::Valid
                };
                Outcome::Record {
                    direction: Direction::Entry,
                    reason,
                    unlisted,
                }
            }
            Some(r) => Outcome::Answer(Answer {
                verdict: Verdict::Duplicate,
                reason: Reason::AlreadyAdmitted,
                first: Some(FirstUse::from(r)),
                redemption_id: None,
                transferred_to: None,
            }),
        },
    }
}
