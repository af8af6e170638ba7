//! Events: creating and listing them, and what happened at one (its audit trail and
//! counts). Also the id parsers and the known-event check every area uses.

use axum::{
    Json,
    extract::{Path, State},
    http::StatusCode,
    response::{IntoResponse, Response},
};
use gatemesh_ticket::{EventId, TicketId};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{ApiError, Body, EID, ErrorBody, bad, blocking, err};
use crate::{
    Server,
    store::{AuditLine, Counts, Event},
};

/// An event as the API shows it.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct EventView {
    #[schema(value_type = String, example = "ROCK-2026")]
    id: EventId,
    name: String,
    capacity: Option<u32>,
    /// RFC 3339.
    starts_at: Option<String>,
    /// RFC 3339.
    ends_at: Option<String>,
    /// Gates may find guests by name and order (the manifest carries them).
    guest_search: bool,
}

impl From<Event> for EventView {
    fn from(e: Event) -> Self {
        Self {
            id: e.id,
            name: e.name,
            capacity: e.capacity,
            starts_at: e.starts_at,
            ends_at: e.ends_at,
            guest_search: e.guest_search,
        }
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NewEvent {
    /// 1-64 characters of A-Z a-z 0-9 . _ -
    #[schema(example = "ROCK-2026")]
    id: String,
    /// 1-200 bytes.
    name: String,
    #[serde(default)]
    capacity: Option<u32>,
    /// RFC 3339.
    #[serde(default)]
    starts_at: Option<String>,
    /// RFC 3339.
    #[serde(default)]
    ends_at: Option<String>,
    /// Lets gates find a guest by name or order reference: the manifest then carries each
    /// ticket's holder and order. Off by default, when no attendee's name reaches a gate.
    #[serde(default)]
    guest_search: bool,
}

fn rfc3339_ok(s: &Option<String>) -> bool {
    s.as_deref()
        .is_none_or(|t| gatemesh_wire::time::parse_ms(t).is_ok())
}

/// Creates an event.
#[utoipa::path(
    post, path = "/v1/events", tag = "organizer",
    request_body = NewEvent,
    responses(
        (status = 201, description = "Created", body = EventView),
        (status = 400, description = "Bad input", body = ErrorBody),
        (status = 401, description = "No admin token", body = ErrorBody),
        (status = 409, description = "The id is taken", body = ErrorBody),
    ),
    security(("admin" = [])),
)]
pub(crate) async fn create(
    State(s): State<Server>,
    Body(e): Body<NewEvent>,
) -> Result<Response, ApiError> {
    let id = EventId::new(e.id).map_err(|e| bad(e.to_string()))?;
    if e.name.trim().is_empty() || e.name.len() > 200 {
        return Err(bad("name must be 1-200 bytes"));
    }
    if !rfc3339_ok(&e.starts_at) || !rfc3339_ok(&e.ends_at) {
        return Err(bad("starts_at and ends_at are RFC 3339 times"));
    }
    let event = Event {
        id,
        name: e.name,
        capacity: e.capacity,
        starts_at: e.starts_at,
        ends_at: e.ends_at,
        guest_search: e.guest_search,
    };
    let stored = event.clone();
    blocking(&s, move |st| st.create_event(&stored)).await?;
    Ok((StatusCode::CREATED, Json(EventView::from(event))).into_response())
}

#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct EventList {
    events: Vec<EventView>,
}

/// Every event.
#[utoipa::path(
    get, path = "/v1/events", tag = "organizer",
    responses(
        (status = 200, description = "The events", body = EventList),
        (status = 401, description = "No admin token", body = ErrorBody),
    ),
    security(("admin" = [])),
)]
pub(crate) async fn list(State(s): State<Server>) -> Result<Json<EventList>, ApiError> {
    let events = blocking(&s, |st| st.events()).await?;
    Ok(Json(EventList {
        events: events.into_iter().map(EventView::from).collect(),
    }))
}

pub(crate) fn event_id(raw: &str) -> Result<EventId, ApiError> {
    EventId::new(raw).map_err(|e| bad(e.to_string()))
}

pub(crate) fn ticket_id(raw: &str) -> Result<TicketId, ApiError> {
    TicketId::new(raw).map_err(|e| bad(e.to_string()))
}

pub(crate) async fn known_event(s: &Server, eid: &EventId) -> Result<(), ApiError> {
    if s.known_events.read().is_ok_and(|known| known.contains(eid)) {
        return Ok(());
    }
    let id = eid.clone();
    if blocking(s, move |st| st.event(&id)).await?.is_none() {
        return Err(err(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no event {eid}"),
        ));
    }
    if let Ok(mut known) = s.known_events.write() {
        known.insert(eid.clone());
    }
    Ok(())
}

#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Audit {
    /// Oldest first.
    audit: Vec<AuditEntry>,
}

/// Who did what to which ticket, when and why.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct AuditEntry {
    tid: Option<String>,
    actor: String,
    action: String,
    reason: String,
    /// RFC 3339.
    at: String,
}

impl From<AuditLine> for AuditEntry {
    fn from(a: AuditLine) -> Self {
        Self {
            tid: a.tid,
            actor: a.actor,
            action: a.action,
            reason: a.reason,
            at: a.at,
        }
    }
}

/// What happened at an event, in numbers.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Stats {
    tickets: i64,
    void: i64,
    transferred: i64,
    /// Tickets with an admission that counts.
    admitted: i64,
    /// Redemption requests answered, by verdict.
    answered_admit: i64,
    answered_duplicate: i64,
    answered_reject: i64,
    flagged: i64,
}

impl From<Counts> for Stats {
    fn from(c: Counts) -> Self {
        Self {
            tickets: c.tickets,
            void: c.void,
            transferred: c.transferred,
            admitted: c.admitted,
            answered_admit: c.answered_admit,
            answered_duplicate: c.answered_duplicate,
            answered_reject: c.answered_reject,
            flagged: c.flagged,
        }
    }
}

/// Who did what to which ticket, when and why.
#[utoipa::path(
    get, path = "/v1/events/{eid}/audit", tag = "organizer",
    params(("eid" = String, Path, description = EID)),
    responses(
        (status = 200, description = "The audit trail", body = Audit),
        (status = 400, description = "Bad id", body = ErrorBody),
        (status = 401, description = "No admin token", body = ErrorBody),
        (status = 404, description = "No such event", body = ErrorBody),
    ),
    security(("admin" = [])),
)]
pub(crate) async fn audit(
    State(s): State<Server>,
    Path(eid): Path<String>,
) -> Result<Json<Audit>, ApiError> {
    let eid = event_id(&eid)?;
    known_event(&s, &eid).await?;
    let audit = blocking(&s, move |st| st.audit(&eid)).await?;
    Ok(Json(Audit {
        audit: audit.into_iter().map(AuditEntry::from).collect(),
    }))
}

/// What happened at an event, in numbers.
#[utoipa::path(
    get, path = "/v1/events/{eid}/stats", tag = "organizer",
    params(("eid" = String, Path, description = EID)),
    responses(
        (status = 200, description = "The counts", body = Stats),
        (status = 400, description = "Bad id", body = ErrorBody),
        (status = 401, description = "No admin token", body = ErrorBody),
        (status = 404, description = "No such event", body = ErrorBody),
    ),
    security(("admin" = [])),
)]
pub(crate) async fn stats(
    State(s): State<Server>,
    Path(eid): Path<String>,
) -> Result<Json<Stats>, ApiError> {
    let eid = event_id(&eid)?;
    known_event(&s, &eid).await?;
    let counts = blocking(&s, move |st| st.counts(&eid)).await?;
    Ok(Json(Stats::from(counts)))
}
