//! The server's HTTP API (JSON). Organizer and gate calls need `Authorization: Bearer
//! <admin token>` for now (per-gate credentials come with enrollment); `/v1/health` and
//! `/v1/keys` are open. Client input never causes a 5xx.

use std::future::Future;

use axum::{
    Json, Router,
    extract::{
        DefaultBodyLimit, FromRequest, Path, Query, Request, State, rejection::JsonRejection,
    },
    http::{HeaderMap, StatusCode, header},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::{get, post},
};
use gatemesh_ticket::{Claims, EventId, Format, Seat, TicketId};
use serde::{Deserialize, de::DeserializeOwned};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::{
    Server,
    store::{Event, FirstUse, Origin, RedemptionRequest, ServerResolution, StoreError, Ticket},
};

const BODY_LIMIT: usize = 64 * 1024;
const JOURNAL_LIMIT: usize = 8 * 1024 * 1024;
/// Most tickets one request issues (a purchase webhook sends 1; print runs batch).
pub const MAX_ISSUE: usize = 10_000;
/// Most redemptions one journal upload carries.
pub const MAX_JOURNAL: usize = 10_000;

#[derive(Debug)]
pub(crate) struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
}

pub(crate) fn err(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
    ApiError {
        status,
        code,
        message: message.into(),
    }
}

pub(crate) fn bad(message: impl Into<String>) -> ApiError {
    err(StatusCode::BAD_REQUEST, "bad_request", message)
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (
            self.status,
            Json(json!({ "error": { "code": self.code, "message": self.message } })),
        )
            .into_response()
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match &e {
            StoreError::Exists(_) | StoreError::Conflict(_) => {
                err(StatusCode::CONFLICT, "conflict", e.to_string())
            }
            StoreError::NotFound(_) => err(StatusCode::NOT_FOUND, "not_found", e.to_string()),
            StoreError::Sqlite(_)
            | StoreError::Postgres(_)
            | StoreError::Pool(_)
            | StoreError::Corrupt(_) => {
                tracing::error!("storage: {e}");
                err(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "unavailable",
                    "the database failed",
                )
            }
        }
    }
}

impl From<JsonRejection> for ApiError {
    fn from(r: JsonRejection) -> Self {
        let status = match r.status() {
            StatusCode::UNPROCESSABLE_ENTITY => StatusCode::BAD_REQUEST,
            s => s,
        };
        err(
            status,
            if status == StatusCode::PAYLOAD_TOO_LARGE {
                "too_large"
            } else {
                "bad_request"
            },
            r.body_text(),
        )
    }
}

pub(crate) struct Body<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Body<T> {
    type Rejection = ApiError;
    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let Json(v) = Json::<T>::from_request(req, state).await?;
        Ok(Self(v))
    }
}

/// Runs storage work off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    server: &Server,
    f: impl FnOnce(&dyn crate::store::Storage) -> Result<T, StoreError> + Send + 'static,
) -> Result<T, ApiError> {
    let store = server.store.clone();
    tokio::task::spawn_blocking(move || f(store.as_ref()))
        .await
        .map_err(|e| err(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()))?
        .map_err(ApiError::from)
}

fn digest(s: &str) -> [u8; 32] {
    Sha256::digest(s.as_bytes()).into()
}

/// Who is calling.
#[derive(Debug, Clone)]
pub(crate) enum Caller {
    /// The organizer's token: everything.
    Admin,
    /// A paired device: its own event's gate endpoints.
    Device(crate::store::Device),
}

fn bearer(headers: &HeaderMap) -> &str {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("")
}

fn is_admin(s: &Server, given: &str) -> bool {
    // Comparing digests takes the same time whatever the token shares with the real one.
    digest(given) == digest(&s.admin_token)
}

fn unauthorized(what: &str) -> Response {
    err(StatusCode::UNAUTHORIZED, "unauthorized", what).into_response()
}

/// Organizer calls: the admin token only.
async fn require_admin(
    State(s): State<Server>,
    headers: HeaderMap,
    mut req: Request,
    next: Next,
) -> Response {
    if !is_admin(&s, bearer(&headers)) {
        return unauthorized("an admin token is needed: Authorization: Bearer <token>");
    }
    req.extensions_mut().insert(Caller::Admin);
    next.run(req).await
}

/// Gate calls under `/v1/events/{eid}/…`: the admin token, or the credential of a device
/// paired to that event.
async fn require_gate(
    State(s): State<Server>,
    Path(params): Path<std::collections::HashMap<String, String>>,
    headers: HeaderMap,
    mut req: Request,
    next: Next,
) -> Response {
    let given = bearer(&headers);
    let caller = if is_admin(&s, given) {
        Caller::Admin
    } else if given.is_empty() {
        return unauthorized("a gate credential or the admin token is needed");
    } else {
        match s.credentials.lookup(&s, given).await {
            Ok(Some(d)) if params.get("eid").is_some_and(|e| e == d.eid.as_str()) => {
                Caller::Device(d)
            }
            Ok(Some(_)) => {
                return err(
                    StatusCode::FORBIDDEN,
                    "forbidden",
                    "this device belongs to another event",
                )
                .into_response();
            }
            Ok(None) => return unauthorized("unknown credential (pair the device again)"),
            Err(e) => return e.into_response(),
        }
    };
    req.extensions_mut().insert(caller);
    next.run(req).await
}

pub(crate) fn rfc3339_ms(ms: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_default()
}

pub fn router(server: Server) -> Router {
    let organizer = Router::new()
        .route("/v1/events", post(create_event).get(list_events))
        .route("/v1/events/{eid}/tickets", post(issue))
        .route("/v1/events/{eid}/tickets/{tid}", get(get_ticket))
        .route("/v1/events/{eid}/tickets/{tid}/void", post(void))
        .route("/v1/events/{eid}/tickets/{tid}/transfer", post(transfer))
        .route("/v1/events/{eid}/tickets/{tid}/revert", post(revert))
        .route("/v1/events/{eid}/tickets/{tid}/chain", get(chain))
        .route("/v1/events/{eid}/audit", get(audit))
        .route("/v1/events/{eid}/stats", get(stats))
        .route("/v1/events/{eid}/devices", post(crate::devices::create))
        .route("/v1/events/{eid}/gates", get(crate::devices::gates))
        .route("/metrics", get(metrics))
        .route_layer(middleware::from_fn_with_state(
            server.clone(),
            require_admin,
        ));
    let gates = Router::new()
        .route("/v1/events/{eid}/manifest", get(manifest))
        .route("/v1/events/{eid}/changes", get(changes))
        .route(
            "/v1/events/{eid}/redemptions",
            post(redeem).layer(DefaultBodyLimit::max(JOURNAL_LIMIT)),
        )
        .route(
            "/v1/events/{eid}/heartbeat",
            post(crate::devices::heartbeat),
        )
        .route("/v1/events/{eid}/flags", get(flags))
        .route("/v1/events/{eid}/flags/{tid}/resolve", post(resolve))
        .route_layer(middleware::from_fn_with_state(server.clone(), require_gate));
    Router::new()
        .route("/v1/health", get(|| async { Json(json!({ "ok": true })) }))
        .route("/v1/keys", get(keys))
        .route("/v1/pair", post(crate::devices::pair))
        .merge(organizer)
        .merge(gates)
        .fallback(|| async { err(StatusCode::NOT_FOUND, "not_found", "no such endpoint") })
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(server)
}

async fn metrics(State(s): State<Server>) -> Result<Response, ApiError> {
    let gates = blocking(&s, |st| {
        let mut out = Vec::new();
        for e in st.events()? {
            for g in st.gates(&e.id)? {
                let backlog = g
                    .heartbeat
                    .as_ref()
                    .and_then(|h| h["uplink"]["backlog"].as_i64());
                out.push((e.id.to_string(), g.name, backlog, g.last_seen_ms));
            }
        }
        Ok(out)
    })
    .await?;
    let text = s.metrics.render(&gates);
    Ok((
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        text,
    )
        .into_response())
}

/// Serves until `shutdown` completes.
pub async fn serve(
    listener: tokio::net::TcpListener,
    server: Server,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let stopping = server.stopping.clone();
    axum::serve(listener, router(server))
        .with_graceful_shutdown(async move {
            shutdown.await;
            stopping.send_replace(true);
        })
        .await
}

async fn keys(State(s): State<Server>) -> Json<Value> {
    Json(json!({ "keys": [{ "kid": s.key.kid(), "pem": s.issuer_public_pem() }] }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewEvent {
    id: String,
    name: String,
    #[serde(default)]
    capacity: Option<u32>,
    #[serde(default)]
    starts_at: Option<String>,
    #[serde(default)]
    ends_at: Option<String>,
}

fn rfc3339_ok(s: &Option<String>) -> bool {
    s.as_deref().is_none_or(|t| {
        time::OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339).is_ok()
    })
}

async fn create_event(
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
    };
    let stored = event.clone();
    blocking(&s, move |st| st.create_event(&stored)).await?;
    Ok((StatusCode::CREATED, Json(event)).into_response())
}

async fn list_events(State(s): State<Server>) -> Result<Json<Value>, ApiError> {
    let events = blocking(&s, |st| st.events()).await?;
    Ok(Json(json!({ "events": events })))
}

pub(crate) fn event_id(raw: &str) -> Result<EventId, ApiError> {
    EventId::new(raw).map_err(|e| bad(e.to_string()))
}

fn ticket_id(raw: &str) -> Result<TicketId, ApiError> {
    TicketId::new(raw).map_err(|e| bad(e.to_string()))
}

pub(crate) async fn known_event(s: &Server, eid: &EventId) -> Result<Event, ApiError> {
    let id = eid.clone();
    blocking(s, move |st| st.event(&id)).await?.ok_or_else(|| {
        err(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no event {eid}"),
        )
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IssueRequest {
    count: usize,
    #[serde(default = "default_format")]
    format: Format,
    #[serde(default)]
    seat_prefix: Option<String>,
    #[serde(default)]
    seats: Option<Vec<String>>,
}

fn default_format() -> Format {
    Format::Gm1
}

/// A new active ticket with a fresh id, signed with the server's key.
fn signed_ticket(
    key: &gatemesh_ticket::IssuerKey,
    eid: &EventId,
    seat: Option<Seat>,
    format: Format,
    iat: i64,
    transferred_from: Option<TicketId>,
    holder: Option<String>,
) -> Result<Ticket, StoreError> {
    let claims = Claims {
        tid: TicketId::generate(),
        eid: eid.clone(),
        seat,
        iat: Some(iat),
        nbf: None,
        exp: None,
    };
    let code = key
        .sign(&claims, format)
        .map_err(|e| StoreError::Conflict(e.to_string()))?;
    Ok(Ticket {
        tid: claims.tid,
        eid: eid.clone(),
        seat: claims.seat.map(|s| s.to_string()),
        format,
        code,
        status: crate::store::Status::Active,
        transferred_to: None,
        transferred_from,
        holder,
        void_reason: None,
        reverted: Vec::new(),
        flagged: false,
        resolution: None,
        seq: 0,
    })
}

fn no_ticket(tid: &TicketId) -> ApiError {
    err(
        StatusCode::NOT_FOUND,
        "not_found",
        format!("no ticket {tid}"),
    )
}

fn ticket_json(t: &Ticket) -> Value {
    json!({
        "tid": t.tid, "eid": t.eid, "seat": t.seat, "format": t.format, "code": t.code,
        "status": t.status, "transferred_to": t.transferred_to,
        "transferred_from": t.transferred_from, "holder": t.holder,
    })
}

async fn issue(
    State(s): State<Server>,
    Path(eid): Path<String>,
    Body(req): Body<IssueRequest>,
) -> Result<Response, ApiError> {
    let eid = event_id(&eid)?;
    if !(1..=MAX_ISSUE).contains(&req.count) {
        return Err(bad(format!("count must be 1 to {MAX_ISSUE}")));
    }
    let seats: Vec<Option<Seat>> = match (&req.seats, &req.seat_prefix) {
        (Some(_), Some(_)) => return Err(bad("give seats or seat_prefix, not both")),
        (Some(list), None) if list.len() != req.count => {
            return Err(bad("seats must list one seat per ticket"));
        }
        (Some(list), None) => list
            .iter()
            .map(|l| Seat::new(l.clone()).map(Some))
            .collect::<Result<_, _>>()
            .map_err(|e| bad(e.to_string()))?,
        (None, Some(p)) => (1..=req.count)
            .map(|i| Seat::new(format!("{p}{i}")).map(Some))
            .collect::<Result<_, _>>()
            .map_err(|e| bad(e.to_string()))?,
        (None, None) => vec![None; req.count],
    };
    known_event(&s, &eid).await?;
    let key = s.key.clone();
    let format = req.format;
    let iat = time::OffsetDateTime::now_utc().unix_timestamp();
    // Fresh random ids; the primary key refuses a repeat, and the batch is drawn again.
    let tickets = blocking(&s, move |st| {
        for _ in 0..3 {
            let tickets: Vec<Ticket> = seats
                .iter()
                .map(|seat| signed_ticket(&key, &eid, seat.clone(), format, iat, None, None))
                .collect::<Result<_, StoreError>>()?;
            match st.insert_tickets(&tickets) {
                Err(StoreError::Exists(_)) => continue,
                other => return other.map(|()| tickets),
            }
        }
        Err(StoreError::Conflict(
            "could not draw unused ticket ids".into(),
        ))
    })
    .await?;
    let list: Vec<Value> = tickets.iter().map(ticket_json).collect();
    Ok((StatusCode::CREATED, Json(json!({ "tickets": list }))).into_response())
}

async fn get_ticket(
    State(s): State<Server>,
    Path((eid, tid)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    let (eid, tid) = (event_id(&eid)?, ticket_id(&tid)?);
    let t = tid.clone();
    let (ticket, admissions) = blocking(&s, move |st| {
        let Some(ticket) = st.ticket(&eid, &t)? else {
            return Ok(None);
        };
        let admissions = st.admissions(&eid, &t)?;
        Ok(Some((ticket, admissions)))
    })
    .await?
    .ok_or_else(|| no_ticket(&tid))?;
    let mut body = ticket_json(&ticket);
    body["admissions"] = json!(admissions);
    body["flagged"] = json!(ticket.flagged);
    body["resolution"] = json!(ticket.resolution);
    Ok(Json(body))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct VoidRequest {
    reason: String,
    #[serde(default = "default_actor")]
    actor: String,
}

fn default_actor() -> String {
    "admin".into()
}

async fn void(
    State(s): State<Server>,
    Path((eid, tid)): Path<(String, String)>,
    Body(req): Body<VoidRequest>,
) -> Result<Json<Value>, ApiError> {
    let (eid, tid) = (event_id(&eid)?, ticket_id(&tid)?);
    if req.reason.trim().is_empty()
        || req.reason.len() > 500
        || req.actor.is_empty()
        || req.actor.len() > 64
    {
        return Err(bad(
            "a void needs a reason (1-500 bytes) and an actor (1-64)",
        ));
    }
    let ticket = blocking(&s, move |st| st.void(&eid, &tid, &req.actor, &req.reason)).await?;
    Ok(Json(ticket_json(&ticket)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ManifestQuery {
    #[serde(default)]
    since: Option<i64>,
}

async fn manifest(
    State(s): State<Server>,
    Path(eid): Path<String>,
    query: Result<Query<ManifestQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let Query(q) = query.map_err(|e| bad(e.body_text()))?;
    let eid = event_id(&eid)?;
    known_event(&s, &eid).await?;
    let (cursor, tickets) = blocking(&s, move |st| manifest_read(st, &eid, q.since)).await?;
    let list: Vec<Value> = tickets.iter().map(|(t, a)| manifest_entry(t, a)).collect();
    Ok(Json(json!({ "cursor": cursor, "tickets": list })))
}

/// A ticket and, when it is flagged or resolved, the admissions involved.
type WithAdmissions = (Ticket, Vec<FirstUse>);

/// The manifest (or a delta), with the admissions of every flagged or resolved ticket, so
/// gates can write them into their ledgers.
fn manifest_read(
    st: &dyn crate::store::Storage,
    eid: &EventId,
    since: Option<i64>,
) -> Result<(i64, Vec<WithAdmissions>), StoreError> {
    let (cursor, tickets) = st.manifest(eid, since)?;
    let with = tickets
        .into_iter()
        .map(|t| {
            let admissions = if t.flagged || t.resolution.is_some() {
                st.admissions(eid, &t.tid)?
            } else {
                Vec::new()
            };
            Ok((t, admissions))
        })
        .collect::<Result<_, StoreError>>()?;
    Ok((cursor, with))
}

/// A ticket as gates need it: its standing, the admissions staff reverted, and for a flag
/// the admissions involved and staff's decision.
fn manifest_entry(t: &Ticket, admissions: &[FirstUse]) -> Value {
    let mut entry = json!({ "tid": t.tid, "seat": t.seat, "status": t.status });
    if let Some(to) = &t.transferred_to {
        entry["to"] = json!(to);
    }
    if let Some(reason) = &t.void_reason {
        entry["reason"] = json!(reason);
    }
    if !t.reverted.is_empty() {
        entry["reverted"] = json!(t.reverted);
    }
    if t.flagged {
        entry["flagged"] = json!(true);
    }
    if let Some(r) = &t.resolution {
        entry["resolution"] = json!(r);
    }
    if !admissions.is_empty() {
        entry["admissions"] = json!(admissions);
    }
    entry
}

/// Most tickets in one change-stream event (a stream from the start sends the whole
/// manifest in pieces of this size, each with a cursor to resume from).
const CHANGES_CHUNK: usize = 2000;

/// The manifest as a live stream: what changed after `since` (or after the SSE
/// `Last-Event-ID`), then every change as it commits, each event with its cursor as id.
async fn changes(
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
            wake.mark_unchanged();
            let e = eid.clone();
            let read = blocking(&s, move |st| manifest_read(st, &e, Some(cursor))).await;
            let Ok((now, tickets)) = read else {
                // The database is away: tell the client, which reconnects from its cursor.
                let _ = tx
                    .send(
                        SseEvent::default()
                            .event("error")
                            .data("the database failed"),
                    )
                    .await;
                return;
            };
            let chunks: Vec<&[WithAdmissions]> = tickets.chunks(CHANGES_CHUNK).collect();
            for (i, chunk) in chunks.iter().enumerate() {
                let id = if i + 1 == chunks.len() {
                    now
                } else {
                    chunk.last().map_or(now, |(t, _)| t.seq)
                };
                let list: Vec<Value> = chunk.iter().map(|(t, a)| manifest_entry(t, a)).collect();
                let data = json!({ "cursor": id, "tickets": list }).to_string();
                let event = SseEvent::default()
                    .event("tickets")
                    .id(id.to_string())
                    .data(data);
                if tx.send(event).await.is_err() {
                    return;
                }
            }
            if tickets.is_empty() && first {
                // Live from here: the client learns the cursor even when nothing changed.
                let data = json!({ "cursor": now, "tickets": [] }).to_string();
                let event = SseEvent::default()
                    .event("tickets")
                    .id(now.to_string())
                    .data(data);
                if tx.send(event).await.is_err() {
                    return;
                }
            }
            first = false;
            cursor = now;
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

/// One redemption, or a gate's journal of them.
#[derive(Deserialize)]
#[serde(untagged)]
enum RedeemBody {
    Journal { redemptions: Vec<RedemptionRequest> },
    One(RedemptionRequest),
}

fn check(r: &RedemptionRequest) -> Result<(), ApiError> {
    let ok_text = |s: &str| (1..=128).contains(&s.len()) && !s.chars().any(char::is_control);
    if !ok_text(&r.redemption_id) || !ok_text(&r.gate) || !ok_text(&r.scanner) {
        return Err(bad(
            "redemption_id, gate and scanner are 1-128 printable characters",
        ));
    }
    if time::OffsetDateTime::parse(&r.at, &time::format_description::well_known::Rfc3339).is_err() {
        return Err(bad("at is an RFC 3339 time"));
    }
    if let Some(record) = &r.record {
        // Other gates will write this record into their ledgers as it is: it must be a
        // gate's redemption of this very ticket under this very id, and small.
        let fits = serde_json::to_vec(record).is_ok_and(|b| b.len() <= 4096);
        let parsed = serde_json::from_value::<gatemesh_ledger::Redemption>(record.clone());
        match parsed {
            Ok(red) if fits && red.id.as_str() == r.redemption_id && red.tid == r.tid => {}
            _ => {
                return Err(bad(
                    "record is the gate ledger's redemption with this redemption_id and tid (at most 4 KiB)",
                ));
            }
        }
    }
    Ok(())
}

async fn redeem(
    State(s): State<Server>,
    caller: axum::Extension<Caller>,
    Path(eid): Path<String>,
    Body(body): Body<RedeemBody>,
) -> Result<Json<Value>, ApiError> {
    let eid = event_id(&eid)?;
    if matches!(&caller.0, Caller::Device(d) if d.role == "observer") {
        return Err(err(
            StatusCode::FORBIDDEN,
            "observer",
            "an observer admits no one",
        ));
    }
    known_event(&s, &eid).await?;
    match body {
        RedeemBody::One(r) => {
            check(&r)?;
            let metrics = s.metrics.clone();
            let answer = blocking(&s, move |st| {
                timed(&metrics, &eid, &r, |r| st.redeem(&eid, r, Origin::Online))
            })
            .await?;
            Ok(Json(serde_json::to_value(answer).unwrap_or_default()))
        }
        RedeemBody::Journal { redemptions } => {
            if redemptions.len() > MAX_JOURNAL {
                return Err(bad(format!(
                    "a journal upload holds at most {MAX_JOURNAL} redemptions"
                )));
            }
            redemptions.iter().try_for_each(check)?;
            let metrics = s.metrics.clone();
            let answers = blocking(&s, move |st| {
                redemptions
                    .iter()
                    .map(|r| timed(&metrics, &eid, r, |r| st.redeem(&eid, r, Origin::Journal)))
                    .collect::<Result<Vec<_>, _>>()
            })
            .await?;
            Ok(Json(json!({ "answers": answers })))
        }
    }
}

/// One redemption through storage, counted and timed for `/metrics`.
fn timed(
    metrics: &crate::metrics::Metrics,
    eid: &EventId,
    r: &RedemptionRequest,
    f: impl FnOnce(&RedemptionRequest) -> Result<crate::store::RedemptionAnswer, StoreError>,
) -> Result<crate::store::RedemptionAnswer, StoreError> {
    let started = std::time::Instant::now();
    let answer = f(r)?;
    let verdict = match answer.verdict {
        gatemesh_ledger::Verdict::Admit => "admit",
        gatemesh_ledger::Verdict::Duplicate => "duplicate",
        gatemesh_ledger::Verdict::Reject => "reject",
    };
    metrics.redemption(
        eid.as_str(),
        &r.gate,
        verdict,
        started.elapsed().as_secs_f64(),
    );
    Ok(answer)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TransferRequest {
    #[serde(default)]
    holder: Option<String>,
    #[serde(default = "default_actor")]
    actor: String,
}

/// Issues a new ticket for the same seat and makes the old one `transferred` to it.
async fn transfer(
    State(s): State<Server>,
    Path((eid, tid)): Path<(String, String)>,
    Body(req): Body<TransferRequest>,
) -> Result<Response, ApiError> {
    let (eid, old) = (event_id(&eid)?, ticket_id(&tid)?);
    if req
        .holder
        .as_deref()
        .is_some_and(|h| h.len() > 200 || h.chars().any(char::is_control))
        || req.actor.is_empty()
        || req.actor.len() > 64
    {
        return Err(bad("holder is at most 200 printable bytes; actor 1-64"));
    }
    let (e, o) = (eid.clone(), old.clone());
    let current = blocking(&s, move |st| st.ticket(&e, &o))
        .await?
        .ok_or_else(|| no_ticket(&old))?;
    let key = s.key.clone();
    let iat = time::OffsetDateTime::now_utc().unix_timestamp();
    let new = blocking(&s, move |st| {
        for _ in 0..3 {
            let seat = current
                .seat
                .clone()
                .map(Seat::new)
                .transpose()
                .map_err(|e| StoreError::Conflict(e.to_string()))?;
            let new = signed_ticket(
                &key,
                &eid,
                seat,
                current.format,
                iat,
                Some(old.clone()),
                req.holder.clone(),
            )?;
            match st.transfer(&old, &new, &req.actor) {
                Err(StoreError::Exists(_)) => continue,
                other => return other.map(|()| new),
            }
        }
        Err(StoreError::Conflict(
            "could not draw an unused ticket id".into(),
        ))
    })
    .await?;
    Ok((StatusCode::CREATED, Json(ticket_json(&new))).into_response())
}

/// The ticket's lineage, oldest first: every ticket it replaced and every one that replaced it.
async fn chain(
    State(s): State<Server>,
    Path((eid, tid)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    let (eid, tid) = (event_id(&eid)?, ticket_id(&tid)?);
    let t = tid.clone();
    let chain = blocking(&s, move |st| {
        let Some(start) = st.ticket(&eid, &t)? else {
            return Ok(None);
        };
        let mut back = Vec::new();
        let mut cursor = start.transferred_from.clone();
        // Bounded: a chain can never be longer than the tickets issued, but a damaged
        // database must not loop forever.
        while let Some(prev) = cursor.take() {
            if back.len() > 1000 {
                break;
            }
            if let Some(p) = st.ticket(&eid, &prev)? {
                cursor = p.transferred_from.clone();
                back.push(p);
            }
        }
        back.reverse();
        let mut forward = vec![start];
        while let Some(next) = forward.last().and_then(|t| t.transferred_to.clone()) {
            if forward.len() > 1000 {
                break;
            }
            match st.ticket(&eid, &next)? {
                Some(n) => forward.push(n),
                None => break,
            }
        }
        back.extend(forward);
        Ok(Some(back))
    })
    .await?
    .ok_or_else(|| no_ticket(&tid))?;
    let list: Vec<Value> = chain
        .iter()
        .map(|t| json!({ "tid": t.tid, "status": t.status, "holder": t.holder }))
        .collect();
    Ok(Json(json!({ "chain": list })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RevertRequest {
    actor: String,
    reason: String,
}

async fn revert(
    State(s): State<Server>,
    Path((eid, tid)): Path<(String, String)>,
    Body(req): Body<RevertRequest>,
) -> Result<Json<Value>, ApiError> {
    let (eid, tid) = (event_id(&eid)?, ticket_id(&tid)?);
    if req.actor.trim().is_empty()
        || req.actor.len() > 64
        || req.reason.trim().is_empty()
        || req.reason.len() > 500
    {
        return Err(bad(
            "a revert needs an actor (1-64 bytes) and a reason (1-500)",
        ));
    }
    let n = blocking(&s, move |st| st.revert(&eid, &tid, &req.actor, &req.reason)).await?;
    Ok(Json(json!({ "reverted": n })))
}

async fn audit(State(s): State<Server>, Path(eid): Path<String>) -> Result<Json<Value>, ApiError> {
    let eid = event_id(&eid)?;
    known_event(&s, &eid).await?;
    let lines = blocking(&s, move |st| st.audit(&eid)).await?;
    Ok(Json(json!({ "audit": lines })))
}

async fn stats(State(s): State<Server>, Path(eid): Path<String>) -> Result<Json<Value>, ApiError> {
    let eid = event_id(&eid)?;
    known_event(&s, &eid).await?;
    let counts = blocking(&s, move |st| st.counts(&eid)).await?;
    Ok(Json(json!(counts)))
}

/// Flagged tickets, each with the admissions that made the flag.
async fn flags(State(s): State<Server>, Path(eid): Path<String>) -> Result<Json<Value>, ApiError> {
    let eid = event_id(&eid)?;
    known_event(&s, &eid).await?;
    let flags = blocking(&s, move |st| {
        st.flags(&eid)?
            .into_iter()
            .map(|t| {
                let a = st.admissions(&eid, &t.tid)?;
                Ok((t, a))
            })
            .collect::<Result<Vec<_>, StoreError>>()
    })
    .await?;
    let list: Vec<Value> = flags
        .iter()
        .map(|(t, a)| json!({ "tid": t.tid, "seat": t.seat, "status": t.status, "admissions": a }))
        .collect();
    Ok(Json(json!({ "flags": list })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ResolveRequest {
    action: gatemesh_ledger::Action,
    staff: String,
    #[serde(default)]
    note: String,
}

/// Staff's decision on a flag: `accept` (same person), `deny` (the ticket is refused from
/// now on) or `revert` (its admissions are undone). Audited; gates learn it.
async fn resolve(
    State(s): State<Server>,
    Path((eid, tid)): Path<(String, String)>,
    Body(req): Body<ResolveRequest>,
) -> Result<Json<Value>, ApiError> {
    let (eid, tid) = (event_id(&eid)?, ticket_id(&tid)?);
    if req.staff.trim().is_empty() || req.staff.len() > 64 || req.note.len() > 500 {
        return Err(bad(
            "a resolution needs staff (1-64 bytes) and a note of at most 500",
        ));
    }
    let resolved = blocking(&s, move |st| {
        let covers = st
            .admissions(&eid, &tid)?
            .into_iter()
            .map(|a| a.redemption_id)
            .collect();
        let resolution = ServerResolution {
            action: req.action,
            staff: req.staff,
            note: req.note,
            covers,
            at: crate::store::now(),
        };
        st.resolve(&eid, &tid, &resolution)
    })
    .await?;
    Ok(Json(ticket_json(&resolved)))
}
