//! The manifest, whole or as a delta since a cursor, and the same as a live change stream:
//! the server's word on each ticket, for gates to take into their ledgers.

use std::{collections::HashMap, sync::Arc};

use axum::{
    Json,
    extract::{Path, Query, State},
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
};
use gatemesh_ticket::EventId;
use gatemesh_wire::{Admission, Manifest, ManifestEntry, Revocation, change};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use super::{ApiError, EID, ErrorBody, bad, blocking, err, event_id, known_event};
use crate::{
    Server,
    store::{StoreError, Ticket},
};

#[derive(Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct ManifestQuery {
    /// A cursor from an earlier answer: only the tickets changed after it.
    #[serde(default)]
    since: Option<i64>,
}

/// The manifest whole, or as a delta since a cursor.
#[utoipa::path(
    get, path = "/v1/events/{eid}/manifest", tag = "gate",
    params(("eid" = String, Path, description = EID), ManifestQuery),
    responses(
        (status = 200, description = "The manifest or the delta", body = Manifest),
        (status = 400, description = "Bad cursor", body = ErrorBody),
        (status = 401, description = "No credential", body = ErrorBody),
        (status = 403, description = "A device of another event", body = ErrorBody),
        (status = 404, description = "No such event", body = ErrorBody),
    ),
    security(("admin" = []), ("device" = [])),
)]
pub(crate) async fn manifest(
    State(s): State<Server>,
    Path(eid): Path<String>,
    query: Result<Query<ManifestQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Manifest>, ApiError> {
    let Query(q) = query.map_err(|e| bad(e.body_text()))?;
    let eid = event_id(&eid)?;
    known_event(&s, &eid).await?;
    let (signers, data) = (s.signers.clone(), s.data.clone());
    let read = blocking(&s, move |st| {
        manifest_read(st, &signers, &data, &eid, q.since)
    })
    .await?;
    let tickets = read
        .tickets
        .iter()
        .map(|(t, a)| manifest_entry(t, a, read.guest_search))
        .collect();
    Ok(Json(Manifest {
        cursor: read.cursor,
        tickets,
        revocations: read.revocations,
        lists: read.lists,
    }))
}

/// What changed after a cursor, as read in one go.
pub(crate) struct ManifestRead {
    /// Up to where.
    pub(crate) cursor: i64,
    pub(crate) tickets: Vec<WithAdmissions>,
    pub(crate) revocations: Vec<Revocation>,
    /// The latest release of the event's lists, when it is among what changed.
    pub(crate) lists: Option<serde_json::Value>,
    /// The event lets gates find guests: entries carry holders and orders.
    pub(crate) guest_search: bool,
}

/// A ticket and, when it is flagged or resolved, the admissions involved.
type WithAdmissions = (Ticket, Vec<Admission>);

/// The manifest (or a delta), with the admissions of every flagged or resolved ticket, so
/// gates can write them into their ledgers, the devices revoked in it, and the event's
/// lists when they were released in it.
pub(crate) fn manifest_read(
    st: &dyn crate::store::Storage,
    signers: &crate::signer::Signers,
    data: &std::path::Path,
    eid: &EventId,
    since: Option<i64>,
) -> Result<ManifestRead, StoreError> {
    let guest_search = st.event(eid)?.is_some_and(|e| e.guest_search);
    let (cursor, tickets) = st.manifest(eid, since)?;
    let revocations = crate::signer::stored_revocations(st, eid, since.unwrap_or(0), cursor)?;
    let lists = st
        .lists(eid, since.unwrap_or(0), cursor)?
        .map(|json| {
            serde_json::from_str(&json)
                .map_err(|e| StoreError::Corrupt(format!("the stored lists: {e}")))
        })
        .transpose()?;
    let with = tickets
        .into_iter()
        .map(|t| {
            let admissions = if t.flagged || t.resolution.is_some() {
                let mut a = st.admissions(eid, &t.tid)?;
                crate::signer::relayed(signers, data, eid, &t.tid, &mut a)?;
                a
            } else {
                Vec::new()
            };
            Ok((t, admissions))
        })
        .collect::<Result<_, StoreError>>()?;
    Ok(ManifestRead {
        cursor,
        tickets: with,
        revocations,
        lists,
        guest_search,
    })
}

/// A ticket as gates get it; its holder and order only when the event lets gates find
/// guests (`guest_search`), so that otherwise no attendee's name reaches a gate.
fn manifest_entry(t: &Ticket, admissions: &[Admission], guest_search: bool) -> ManifestEntry {
    ManifestEntry {
        tid: t.tid.clone(),
        seat: t.seat.clone(),
        holder: t.holder.clone().filter(|_| guest_search),
        order: t.order_ref.clone().filter(|_| guest_search),
        product: t.product.clone().filter(|_| guest_search),
        status: t.status,
        to: t.transferred_to.clone(),
        reason: t.void_reason.clone(),
        record: t
            .status_record
            .as_deref()
            .and_then(|r| serde_json::from_str(r).ok()),
        reverted: t.reverted.clone(),
        flagged: t.flagged,
        resolution: t.resolution.clone(),
        admissions: admissions.to_vec(),
    }
}

/// Most tickets in one change-stream event (a stream from the start sends the whole
/// manifest in pieces of this size, each with a cursor to resume from).
const CHANGES_CHUNK: usize = 2000;

/// One event of the change stream, as `text/event-stream` carries it.
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub(crate) struct ChangeEvent {
    /// `tickets`; or `error` when the database failed (its data is text, and the client
    /// reconnects from its last cursor).
    #[schema(value_type = ChangeEventKind)]
    event: String,
    /// The event's cursor (`tickets` only): reconnect with it as `Last-Event-ID`.
    id: Option<String>,
    /// A `tickets` event's data: a manifest delta, JSON on one line.
    data: Manifest,
}

#[derive(Debug, ToSchema)]
#[schema(rename_all = "snake_case")]
#[allow(dead_code)]
pub(crate) enum ChangeEventKind {
    Tickets,
    Error,
}

/// The manifest as a live stream.
///
/// Server-sent events: what changed after `since` (or after the `Last-Event-ID`), then every
/// change as it commits, each event with its cursor as id. A stream from the start sends the
/// whole manifest in pieces of 2,000 tickets.
#[utoipa::path(
    get, path = "/v1/events/{eid}/changes", tag = "gate", operation_id = "manifest_changes",
    params(
        ("eid" = String, Path, description = EID),
        ManifestQuery,
        ("Last-Event-ID" = Option<i64>, Header,
            description = "The last cursor seen; resumes after it (wins over `since`)"),
    ),
    responses(
        (status = 200, description = "A stream of `tickets` events (a keep-alive comment \
            every 15 s)", content_type = "text/event-stream", body = ChangeEvent),
        (status = 400, description = "Bad cursor", body = ErrorBody),
        (status = 401, description = "No credential", body = ErrorBody),
        (status = 403, description = "A device of another event", body = ErrorBody),
        (status = 404, description = "No such event", body = ErrorBody),
    ),
    security(("admin" = []), ("device" = [])),
)]
pub(crate) async fn changes(
    State(s): State<Server>,
    Path(eid): Path<String>,
    headers: HeaderMap,
    query: Result<Query<ManifestQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
    let Query(q) = query.map_err(|e| bad(e.body_text()))?;
    let eid = event_id(&eid)?;
    known_event(&s, &eid).await?;
    let resume = match headers.get("last-event-id") {
        Some(v) => Some(
            v.to_str()
                .ok()
                .and_then(|v| v.parse::<i64>().ok())
                .ok_or_else(|| bad("Last-Event-ID is a cursor"))?,
        ),
        None => None,
    };
    let since = resume.or(q.since).unwrap_or(0);
    let mut wake = s.store.changes();
    let mut stopping = s.stopping.subscribe();
    let (tx, rx) = tokio::sync::mpsc::channel::<SseEvent>(4);
    tokio::spawn(async move {
        let mut cursor = since;
        let mut first = true;
        loop {
            let seen = *wake.borrow_and_update();
            let Ok(delta) = s.deltas.read(&s, &eid, cursor, seen).await else {
                // The database is away: tell the client, which reconnects from its cursor.
                let _ = tx
                    .send(
                        SseEvent::default()
                            .event(change::ERROR)
                            .data("the database failed"),
                    )
                    .await;
                return;
            };
            let mut events = delta.events.clone();
            if first && events.is_empty() {
                // Live from here: the client learns the cursor even when nothing changed.
                let Some(event) = tickets_event(Manifest {
                    cursor: delta.now,
                    tickets: Vec::new(),
                    revocations: Vec::new(),
                    lists: None,
                }) else {
                    return;
                };
                events.push(event);
            }
            for event in events {
                if tx.send(event).await.is_err() {
                    return;
                }
            }
            first = false;
            cursor = delta.now;
            tokio::select! {
                changed = wake.changed() => if changed.is_err() { return },
                _ = stopping.wait_for(|stop| *stop) => return,
                () = tx.closed() => return,
            }
        }
    });
    let events = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|e| (Ok::<_, std::convert::Infallible>(e), rx))
    });
    Ok(Sse::new(events)
        .keep_alive(KeepAlive::new().interval(std::time::Duration::from_secs(15)))
        .into_response())
}

/// What the change stream sends for the tickets changed after a cursor: its events, and the
/// cursor to ask from next.
pub(crate) struct Delta {
    since: i64,
    /// The change count ([`crate::store::Storage::changes`]) before it was read: it holds
    /// every commit counted up to there.
    version: u64,
    now: i64,
    events: Vec<axum::response::sse::Event>,
}

/// The last delta the change streams of each event read. A commit wakes every gate's stream
/// at once, all at the same cursor: the first reads the delta and makes its events, the
/// others send the same ones, where each would otherwise read the database and write the
/// JSON again (32 reads for every refund at a 32-gate venue).
#[derive(Default)]
pub(crate) struct Deltas(std::sync::Mutex<HashMap<EventId, Slot>>);

type Slot = Arc<tokio::sync::Mutex<Option<Arc<Delta>>>>;

impl Deltas {
    /// The delta of `eid` after `since` that holds at least the commits counted up to
    /// `seen`: the one read last when it does, else read now (one stream at a time per
    /// event, so the others wait for it and take it).
    async fn read(
        &self,
        s: &Server,
        eid: &EventId,
        since: i64,
        seen: u64,
    ) -> Result<Arc<Delta>, ApiError> {
        let slot = {
            let mut slots = self
                .0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            slots.entry(eid.clone()).or_default().clone()
        };
        let mut last = slot.lock().await;
        if let Some(d) = last
            .as_ref()
            .filter(|d| d.since == since && d.version >= seen)
        {
            return Ok(d.clone());
        }
        // Counted before reading: the read holds at least this much.
        let version = *s.store.changes().borrow();
        let (signers, data, e) = (s.signers.clone(), s.data.clone(), eid.clone());
        let read = blocking(s, move |st| {
            manifest_read(st, &signers, &data, &e, Some(since))
        })
        .await?;
        let delta = Arc::new(Delta {
            since,
            version,
            now: read.cursor,
            events: delta_events(read)?,
        });
        *last = Some(delta.clone());
        Ok(delta)
    }
}

/// The change stream's events of one read: its tickets in pieces of [`CHANGES_CHUNK`], each
/// with the cursor to resume from (the devices revoked and the lists released go with the
/// first piece, or alone when no ticket changed).
fn delta_events(read: ManifestRead) -> Result<Vec<axum::response::sse::Event>, ApiError> {
    let ManifestRead {
        cursor: now,
        tickets,
        mut revocations,
        mut lists,
        guest_search,
    } = read;
    let failed = || {
        err(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "a change event",
        )
    };
    let mut events = Vec::new();
    let chunks: Vec<&[WithAdmissions]> = tickets.chunks(CHANGES_CHUNK).collect();
    for (i, chunk) in chunks.iter().enumerate() {
        let id = if i + 1 == chunks.len() {
            now
        } else {
            chunk.last().map_or(now, |(t, _)| t.seq)
        };
        let tickets = chunk
            .iter()
            .map(|(t, a)| manifest_entry(t, a, guest_search))
            .collect();
        events.push(
            tickets_event(Manifest {
                cursor: id,
                tickets,
                // With the first piece: a client that resumes after it got them.
                revocations: std::mem::take(&mut revocations),
                lists: lists.take(),
            })
            .ok_or_else(failed)?,
        );
    }
    if tickets.is_empty() && (!revocations.is_empty() || lists.is_some()) {
        // Only devices revoked or lists released: the client learns them and the cursor.
        events.push(
            tickets_event(Manifest {
                cursor: now,
                tickets: Vec::new(),
                revocations,
                lists,
            })
            .ok_or_else(failed)?,
        );
    }
    Ok(events)
}

/// A `tickets` event of the change stream: the delta as JSON, its cursor as id.
fn tickets_event(delta: Manifest) -> Option<axum::response::sse::Event> {
    let id = delta.cursor.to_string();
    axum::response::sse::Event::default()
        .event(change::TICKETS)
        .id(id)
        .json_data(delta)
        .map_err(|e| tracing::error!("a change event: {e}"))
        .ok()
}
