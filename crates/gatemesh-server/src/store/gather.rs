//! Gathering online redemptions: requests that arrive while the database is busy wait in a
//! queue, and a storage thread takes every one waiting into one transaction, so they share one
//! round trip and one durable write. No timer: under light load a gathering is one request
//! and waits for nothing.

use std::sync::{Arc, Mutex, mpsc};

use gatemesh_ticket::EventId;

use super::{RedemptionAnswer, RedemptionRequest, StoreError, Submitted};

/// Most requests in one gathering.
pub(crate) const GATHER_MAX: usize = 128;

/// One online redemption waiting to be gathered, and where its answer goes.
pub(crate) struct Job {
    pub(crate) eid: EventId,
    pub(crate) req: RedemptionRequest,
    reply: tokio::sync::oneshot::Sender<Result<RedemptionAnswer, StoreError>>,
}

/// The storage's end of the queue; dropping it closes the queue, and the gatherers end.
pub(crate) type Queue = mpsc::Sender<Job>;
/// The gatherers' end, shared between them.
pub(crate) type Waiting = Arc<Mutex<mpsc::Receiver<Job>>>;

pub(crate) fn queue() -> (Queue, Waiting) {
    let (tx, rx) = mpsc::channel();
    (tx, Arc::new(Mutex::new(rx)))
}

/// Queues one request; `None` when the queue is closed (the storage is closing).
pub(crate) fn submit(
    queue: Option<&Queue>,
    eid: &EventId,
    req: &RedemptionRequest,
) -> Option<Submitted> {
    let (reply, answer) = tokio::sync::oneshot::channel();
    let job = Job {
        eid: eid.clone(),
        req: req.clone(),
        reply,
    };
    queue?.send(job).ok()?;
    Some(answer)
}

/// Waits for a request, then takes every other one waiting (up to [`GATHER_MAX`]); `None`
/// once the queue is closed and empty.
pub(crate) fn take_waiting(waiting: &Mutex<mpsc::Receiver<Job>>) -> Option<Vec<Job>> {
    let rx = waiting.lock().ok()?;
    let first = rx.recv().ok()?;
    let mut jobs = vec![first];
    while jobs.len() < GATHER_MAX {
        match rx.try_recv() {
            Ok(job) => jobs.push(job),
            Err(_) => break,
        }
    }
    Some(jobs)
}

/// Sends each job its answer (a request whose client went away is skipped).
pub(crate) fn answer(
    jobs: Vec<Job>,
    answers: impl IntoIterator<Item = Result<RedemptionAnswer, StoreError>>,
) {
    for (job, answer) in jobs.into_iter().zip(answers) {
        let _ = job.reply.send(answer);
    }
}
