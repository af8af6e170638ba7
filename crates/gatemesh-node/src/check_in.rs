//! Which check-in lists a gate checks against, and where they come from.
//!
//! A gate is told at start which lists it checks in (`--list vip`, or none for all of
//! them) and, for an event with no server, the event's lists file. A gate told neither
//! checks in without lists (every use of a ticket counts against every other) until the
//! server releases the event's lists; then it checks in all of them. The server releases the
//! event's lists into the ledger (signed by its identity, see `gatemesh-ledger`); a release
//! reaches a gate through its uplink or through any peer, and from then on the latest one the
//! ledger holds is what the gate checks with, in place of the file — a list changed mid-event
//! takes effect at the next scan. A gate told to check in lists it has no lists for yet
//! refuses every ticket `not_on_list` until they come; a release that no longer has one of the
//! gate's lists leaves the gate on the lists it had, and says so on its status.

use std::sync::{Arc, RwLock};

use gatemesh_ledger::ReleasedLists;
use gatemesh_ticket::{EventId, Product};
use gatemesh_wire::{GateLists, ListAdmission, ListId, ListRefusal, Lists};
use serde::Serialize;

/// What a gate checks in against, as it was started.
#[derive(Debug, Clone, Default)]
pub struct CheckIn {
    /// The lists it checks, in the order it checks them (none: every list of the event).
    pub lists: Vec<ListId>,
    /// The event's lists from a file, until the server releases its own (or for an event
    /// with no server).
    pub file: Option<Lists>,
}

impl From<GateLists> for CheckIn {
    fn from(g: GateLists) -> Self {
        Self {
            lists: g.asked().to_vec(),
            file: Some(g.lists().clone()),
        }
    }
}

/// Where the lists a gate checks with came from, for its status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum ListsSource {
    /// None yet, and the gate was told lists to check: every ticket is refused until the
    /// server's lists come.
    Awaiting,
    /// None: the gate checks in without lists, as before lists existed.
    None,
    /// The file the gate was started with.
    File,
    /// The server's release of this version.
    Release {
        /// Its version.
        version: u64,
        /// Who released it.
        by: String,
    },
}

/// The gate's check-in lists as they stand, for `/v1/status`.
#[derive(Debug, Clone, Serialize)]
pub struct CheckInStatus {
    /// Where they came from.
    #[serde(flatten)]
    pub source: ListsSource,
    /// The lists this gate checks, by id.
    pub lists: Vec<ListId>,
    /// Why the latest release is not what the gate checks with, when it is not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

struct Current {
    /// The lists the gate was told to check (none: all of them).
    asked: Vec<ListId>,
    lists: Option<Arc<GateLists>>,
    source: ListsSource,
    /// The version of the latest release looked at (taken or not).
    seen: Option<u64>,
    problem: Option<String>,
}

/// A gate's check-in lists, shared by the writer (which follows the ledger's releases) and
/// the scans (which check against them before the writer).
pub(crate) struct GateCheckIn {
    current: RwLock<Current>,
}

impl GateCheckIn {
    /// The check-in of a gate of `event` started with `config` (its ledger's releases are
    /// taken up by [`GateCheckIn::follow`]). A file of another event, or one without a list
    /// the gate asks for, is refused.
    pub(crate) fn start(config: CheckIn, event: &EventId) -> anyhow::Result<Self> {
        let file = match &config.file {
            Some(lists) => {
                lists.check_event(event)?;
                Some(Arc::new(lists.for_gate(&config.lists)?))
            }
            None => None,
        };
        let source = if file.is_some() {
            ListsSource::File
        } else if config.lists.is_empty() {
            ListsSource::None
        } else {
            ListsSource::Awaiting
        };
        Ok(Self {
            current: RwLock::new(Current {
                asked: config.lists,
                lists: file,
                source,
                seen: None,
                problem: None,
            }),
        })
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Current> {
        // A panic while holding the lock leaves a value that was whole before it.
        self.current
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The lists the gate checks with now, if it has any yet.
    pub(crate) fn lists(&self) -> Option<Arc<GateLists>> {
        self.read().lists.clone()
    }

    /// Takes up `released` when it is a release not looked at yet: the gate's lists chosen
    /// from it, or, when it lacks one of them, a problem to show (the gate keeps what it had).
    /// Says whether the lists changed.
    pub(crate) fn follow(&self, released: Option<&Arc<ReleasedLists>>) -> bool {
        let Some(released) = released else {
            return false;
        };
        let version = released.record.version;
        if self.read().seen == Some(version) {
            return false;
        }
        let mut current = self.write();
        current.seen = Some(version);
        match released.lists.for_gate(&current.asked) {
            Ok(lists) => {
                tracing::info!(
                    "checking in with the event's lists of release {version} (by {})",
                    released.record.by
                );
                current.lists = Some(Arc::new(lists));
                current.source = ListsSource::Release {
                    version,
                    by: released.record.by.clone(),
                };
                current.problem = None;
                true
            }
            Err(e) => {
                let problem = format!(
                    "release {version} of the event's lists is not taken up: {e}; this gate \
                     goes on with the lists it had"
                );
                tracing::warn!("{problem}");
                current.problem = Some(problem);
                false
            }
        }
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Current> {
        self.current
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Makes `ids` the lists the gate checks (none: all of them), from the next scan, out of
    /// the event's lists it has (a file or the latest release). Refused, changing nothing,
    /// when the event has no such list.
    pub(crate) fn choose(&self, ids: Vec<ListId>) -> Result<(), gatemesh_wire::ListsError> {
        let mut current = self.write();
        if let Some(lists) = &current.lists {
            let chosen = lists.lists().for_gate(&ids)?;
            current.lists = Some(Arc::new(chosen));
        }
        if current.lists.is_none() {
            current.source = if ids.is_empty() {
                ListsSource::None
            } else {
                ListsSource::Awaiting
            };
        }
        current.asked = ids;
        current.problem = None;
        Ok(())
    }

    /// The event's lists this gate could check (its file's or the latest release's), by id
    /// and name, with whether it checks each.
    pub(crate) fn available(&self) -> Vec<(ListId, String, bool)> {
        let current = self.read();
        let Some(lists) = &current.lists else {
            return Vec::new();
        };
        let chosen: Vec<&ListId> = lists.chosen().map(|l| &l.id).collect();
        lists
            .lists()
            .file()
            .lists
            .iter()
            .map(|l| (l.id.clone(), l.name.to_string(), chosen.contains(&&l.id)))
            .collect()
    }

    /// The lists' word on a ticket of `product` at `at_ms`: admitted under a list, or
    /// refused; `not_on_list` while the gate has no lists yet but was told some to check.
    /// `None` at a gate without lists.
    pub(crate) fn check(
        &self,
        product: Option<&Product>,
        at_ms: i64,
    ) -> Option<Result<ListAdmission, ListRefusal>> {
        let current = self.read();
        match &current.lists {
            Some(lists) => Some(lists.check(product, at_ms)),
            None if current.asked.is_empty() => None,
            None => Some(Err(ListRefusal::NotOnList {
                product: product.map(ToString::to_string),
                lists: current.asked.iter().map(ToString::to_string).collect(),
            })),
        }
    }

    /// Where the lists came from, and any problem with the latest release; `None` at a gate
    /// without lists.
    pub(crate) fn status(&self) -> Option<CheckInStatus> {
        let current = self.read();
        if current.source == ListsSource::None && current.problem.is_none() {
            return None;
        }
        Some(CheckInStatus {
            source: current.source.clone(),
            lists: match &current.lists {
                Some(l) => l.chosen().map(|l| l.id.clone()).collect(),
                None => current.asked.clone(),
            },
            problem: current.problem.clone(),
        })
    }
}
