//! Presentations a scanner names: one answer for every ask of one presentation.
//!
//! A scanner that gets no answer in time (the gate's writer held by a catch-up, the Wi-Fi
//! dropping the reply) asks again. Without a name for the presentation the gate cannot tell
//! that ask from a new presentation of the same code: within the repeat window it answers
//! the first admission again, past it "already admitted" — a guest who was let in by the
//! gate turned away by the scanner that never heard so. A scanner that sends a presentation
//! id (any 1-64 printable bytes it makes up, the same with each ask of one presentation) gets
//! the answer of the first ask, whenever it asks, the first ask being decided once: an ask
//! that comes while the first is still being decided waits for that decision. A scanner
//! that sends none is answered as before.
//!
//! The answers are kept in memory for [`KEPT_FOR`], at most [`KEPT_MOST`] of them (the
//! oldest go first); a gate restarted forgets them (a scanner's retries then meet the repeat
//! window, which is derived from the ledger). An answer that is an error (a malformed code,
//! the gate shutting down) is not kept: it stored nothing, and the next ask decides afresh.

use std::{
    collections::{HashMap, VecDeque},
    sync::Mutex,
    time::{Duration, Instant},
};

use tokio::sync::watch;

use gatemesh_ledger::Direction;

use crate::{NodeError, ScanResult};

/// How long a presentation's answer is kept.
pub const KEPT_FOR: Duration = Duration::from_secs(10 * 60);

/// Most presentations' answers kept (each a few hundred bytes).
pub const KEPT_MOST: usize = 65_536;

/// A presentation: the scanner's name and the id it gave.
type Key = (String, String);

/// Its answer: `None` while the first ask is decided.
type Answer = watch::Receiver<Option<ScanResult>>;

struct Kept {
    /// The code presented, as sent, and which way.
    code: String,
    direction: Direction,
    answer: Answer,
    /// Which ask made it ([`Inner::order`]).
    seq: u64,
}

impl Kept {
    /// Its first ask ended in an error: nothing was kept, the next ask decides afresh.
    fn failed(&self) -> bool {
        self.answer.borrow().is_none() && self.answer.has_changed().is_err()
    }
}

/// The answers of presentations scanners named.
#[derive(Default)]
pub(crate) struct Presentations(Mutex<Inner>);

#[derive(Default)]
struct Inner {
    kept: HashMap<Key, Kept>,
    /// Every first ask, in order, with when and its number: what goes first.
    order: VecDeque<(Key, Instant, u64)>,
    seq: u64,
}

/// What to do with an ask of a named presentation ([`Presentations::ask`]).
pub(crate) enum Ask {
    /// The first ask: decide it, and hand the answer to [`decided`].
    First(watch::Sender<Option<ScanResult>>),
    /// Asked before: wait for its answer ([`answer_of`]).
    Again(Answer),
}

impl Presentations {
    /// An ask of presentation `id` of `scanner`, for `code` going `direction`. Refused when
    /// the scanner named another code's presentation so, or one the other way (its ids are
    /// not unique: a fault to see, not to paper over by answering another guest's answer).
    pub(crate) fn ask(
        &self,
        scanner: &str,
        id: &str,
        (code, direction): (&str, Direction),
        now: Instant,
    ) -> Result<Ask, NodeError> {
        let mut inner = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        inner.forget(now);
        let key = (scanner.to_owned(), id.to_owned());
        if let Some(kept) = inner.kept.get(&key).filter(|kept| !kept.failed()) {
            if kept.code != code || kept.direction != direction {
                return Err(NodeError::Conflict(format!(
                    "scanner {scanner} named another presentation {id}: a presentation id \
                     names one presentation of one code, one way"
                )));
            }
            return Ok(Ask::Again(kept.answer.clone()));
        }
        let (tx, answer) = watch::channel(None);
        inner.seq += 1;
        let seq = inner.seq;
        inner.kept.insert(
            key.clone(),
            Kept {
                code: code.to_owned(),
                direction,
                answer,
                seq,
            },
        );
        inner.order.push_back((key, now, seq));
        Ok(Ask::First(tx))
    }

    /// How many presentations' answers are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .kept
            .len()
    }
}

impl Inner {
    /// Forgets the answers kept for [`KEPT_FOR`], and the oldest past [`KEPT_MOST`].
    fn forget(&mut self, now: Instant) {
        while let Some((_, at, _)) = self.order.front() {
            let old = now.saturating_duration_since(*at) >= KEPT_FOR;
            if !old && self.order.len() < KEPT_MOST {
                break;
            }
            if let Some((key, _, seq)) = self.order.pop_front()
                && self.kept.get(&key).is_some_and(|kept| kept.seq == seq)
            {
                self.kept.remove(&key);
            }
        }
    }
}

/// The first ask of a presentation was decided: an answer is kept, and every ask waiting for
/// it gets it; an error is not (those waiting, and the next ask, decide for themselves).
pub(crate) fn decided(
    tx: watch::Sender<Option<ScanResult>>,
    result: &Result<ScanResult, NodeError>,
) {
    if let Ok(answer) = result {
        tx.send_replace(Some(answer.clone()));
    }
}

/// Waits for the answer of a presentation asked before; `None` when its first ask ended in
/// an error (nothing kept: this ask decides for itself).
pub(crate) async fn answer_of(mut answer: Answer) -> Option<ScanResult> {
    match answer.wait_for(Option::is_some).await {
        Ok(got) => got.clone(),
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer() -> ScanResult {
        ScanResult {
            verdict: gatemesh_ledger::Verdict::Admit,
            reason: gatemesh_ledger::Reason::Valid,
            ticket: None,
            first: None,
            redemption_id: None,
            transferred_to: None,
            scanner: "s1".into(),
            at_ms: 0,
            detail: None,
            list: None,
            occupancy: None,
        }
    }

    #[test]
    fn kept_answers_go_after_a_while_and_past_the_most() {
        let (p, t0) = (Presentations::default(), Instant::now());
        let Ok(Ask::First(tx)) = p.ask("s1", "a", ("CODE", Direction::Entry), t0) else {
            panic!("first ask")
        };
        decided(tx, &Ok(answer()));
        assert!(matches!(
            p.ask("s1", "a", ("CODE", Direction::Entry), t0),
            Ok(Ask::Again(_))
        ));
        assert!(matches!(
            p.ask("s1", "a", ("OTHER", Direction::Entry), t0),
            Err(NodeError::Conflict(_))
        ));
        assert!(matches!(
            p.ask("s1", "a", ("CODE", Direction::Exit), t0),
            Err(NodeError::Conflict(_))
        ));
        assert!(matches!(
            p.ask("s1", "a", ("CODE", Direction::Entry), t0 + KEPT_FOR),
            Ok(Ask::First(_))
        ));
        // Past the most kept, the oldest go first.
        let p = Presentations::default();
        for i in 0..KEPT_MOST + 10 {
            if let Ok(Ask::First(tx)) = p.ask("s1", &i.to_string(), ("CODE", Direction::Entry), t0)
            {
                decided(tx, &Ok(answer()));
            }
        }
        assert!(p.len() <= KEPT_MOST, "{}", p.len());
        assert!(matches!(
            p.ask("s1", "0", ("CODE", Direction::Entry), t0),
            Ok(Ask::First(_))
        ));
        assert!(matches!(
            p.ask(
                "s1",
                &(KEPT_MOST + 9).to_string(),
                ("CODE", Direction::Entry),
                t0
            ),
            Ok(Ask::Again(_))
        ));
    }

    #[tokio::test]
    async fn a_first_ask_that_failed_leaves_the_next_to_decide() {
        let (p, t0) = (Presentations::default(), Instant::now());
        let Ok(Ask::First(tx)) = p.ask("s1", "a", ("CODE", Direction::Entry), t0) else {
            panic!("first ask")
        };
        let Ok(Ask::Again(waiting)) = p.ask("s1", "a", ("CODE", Direction::Entry), t0) else {
            panic!("second ask")
        };
        decided(tx, &Err(NodeError::Stopped));
        assert!(
            answer_of(waiting).await.is_none(),
            "the waiting ask decides"
        );
        let Ok(Ask::First(tx)) = p.ask("s1", "a", ("CODE", Direction::Entry), t0) else {
            panic!("nothing kept of the failed one")
        };
        let Ok(Ask::Again(waiting)) = p.ask("s1", "a", ("CODE", Direction::Entry), t0) else {
            panic!("second ask")
        };
        decided(tx, &Ok(answer()));
        assert!(answer_of(waiting).await.is_some());
        assert_eq!(p.len(), 1);
    }
}
