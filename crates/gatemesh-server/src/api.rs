//! The server's HTTP API (JSON). Organizer calls need `Authorization: Bearer <admin token>`;
//! gate calls take the admin token or a paired device's credential; `/v1/health`,
//! `/v1/keys`, `/v1/pair` and `/v1/openapi.json` are open. Client input never causes a 5xx.
//!
//! Every handler carries its `#[utoipa::path]` and returns a typed body, so the OpenAPI
//! document ([`crate::openapi`]) is made from what the handlers really send.

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
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use sha2::{Digest, Sha256};
use utoipa::{IntoParams, ToSchema};

use crate::{
    Server,
    openapi::{ActionName, FormatName},
    store::{
        AuditLine, Counts, Event, FirstUse, Origin, RedemptionAnswer, RedemptionRequest,
        ServerResolution, Status, StoreError, Ticket,
    },
};

const BODY_LIMIT: usize = 64 * 1024;
const JOURNAL_LIMIT: usize = 8 * 1024 * 1024;
/// Most tickets one request issues (a purchase webhook sends 1; print runs batch).
pub const MAX_ISSUE: usize = 10_000;
/// Most redemptions one journal upload carries.
pub const MAX_JOURNAL: usize = 10_000;

/// The path parameters' descriptions, for the handlers' `#[utoipa::path]`.
pub(crate) const EID: &str = "The event id";
const TID: &str = "The ticket id";

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

/// Every error the API sends.
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({ "error": { "code": "not_found", "message": "no event NOPE" } }))]
pub(crate) struct ErrorBody {
    error: ErrorDetail,
}

#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ErrorDetail {
    /// Stable, for programs: `bad_request`, `too_large`, `unauthorized`, `forbidden`,
    /// `observer`, `not_found`, `unknown_code`, `conflict`, `too_many_attempts`,
    /// `unavailable`, `internal`.
    code: String,
    /// For people.
    message: String,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code.to_owned(),
                message: self.message,
            },
        };
        (self.status, Json(body)).into_response()
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

/// Every endpoint. Each route here has its `#[utoipa::path]` and is listed in
/// [`crate::openapi::ApiDoc`]; the server tests check the router and the document agree.
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
        .route("/v1/health", get(health))
        .route("/v1/keys", get(keys))
        .route("/v1/openapi.json", get(openapi_json))
        .route("/v1/pair", post(crate::devices::pair))
        .merge(organizer)
        .merge(gates)
        .fallback(|| async { err(StatusCode::NOT_FOUND, "not_found", "no such endpoint") })
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(server)
}

/// Metrics for Prometheus.
///
/// OpenMetrics text: redemptions by event, gate and verdict, their latency, and each gate's
/// upload backlog.
#[utoipa::path(
    get, path = "/metrics", tag = "organizer",
    responses(
        (status = 200, description = "OpenMetrics text",
            content_type = "application/openmetrics-text; version=1.0.0; charset=utf-8",
            body = String),
        (status = 401, description = "No admin token", body = ErrorBody),
        (status = 503, description = "The database failed", body = ErrorBody),
    ),
    security(("admin" = [])),
)]
pub(crate) async fn metrics(State(s): State<Server>) -> Result<Response, ApiError> {
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

#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Health {
    ok: bool,
}

/// Liveness: answers while the process serves.
#[utoipa::path(
    get, path = "/v1/health", tag = "open",
    responses((status = 200, description = "Serving", body = Health)),
)]
pub(crate) async fn health() -> Json<Health> {
    Json(Health { ok: true })
}

/// The OpenAPI 3 document of this API (this one included).
#[utoipa::path(
    get, path = "/v1/openapi.json", tag = "open",
    responses((status = 200, description = "The OpenAPI document", body = Object)),
)]
pub(crate) async fn openapi_json() -> Json<utoipa::openapi::OpenApi> {
    Json(crate::openapi::document())
}

/// A public key that signs tickets, for gates to verify them offline.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct IssuerKey {
    #[schema(value_type = String)]
    kid: gatemesh_ticket::KeyId,
    /// SPKI PEM.
    pem: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Keys {
    keys: Vec<IssuerKey>,
}

pub(crate) fn issuer_keys(s: &Server) -> Vec<IssuerKey> {
    vec![IssuerKey {
        kid: s.key.kid().clone(),
        pem: s.issuer_public_pem(),
    }]
}

/// The issuer keys that sign this server's tickets.
#[utoipa::path(
    get, path = "/v1/keys", tag = "open",
    responses((status = 200, description = "The issuer keys", body = Keys)),
)]
pub(crate) async fn keys(State(s): State<Server>) -> Json<Keys> {
    Json(Keys {
        keys: issuer_keys(&s),
    })
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
}

fn rfc3339_ok(s: &Option<String>) -> bool {
    s.as_deref().is_none_or(|t| {
        time::OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339).is_ok()
    })
}

/// Creates an event.
#[utoipa::path(
    post, path = "/v1/events", tag = "organizer",
    request_body = NewEvent,
    responses(
        (status = 201, description = "Created", body = Event),
        (status = 400, description = "Bad input", body = ErrorBody),
        (status = 401, description = "No admin token", body = ErrorBody),
        (status = 409, description = "The id is taken", body = ErrorBody),
    ),
    security(("admin" = [])),
)]
pub(crate) async fn create_event(
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

#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct EventList {
    events: Vec<Event>,
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
pub(crate) async fn list_events(State(s): State<Server>) -> Result<Json<EventList>, ApiError> {
    let events = blocking(&s, |st| st.events()).await?;
    Ok(Json(EventList { events }))
}

pub(crate) fn event_id(raw: &str) -> Result<EventId, ApiError> {
    EventId::new(raw).map_err(|e| bad(e.to_string()))
}

fn ticket_id(raw: &str) -> Result<TicketId, ApiError> {
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

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct IssueRequest {
    /// How many tickets, 1 to 10,000.
    #[schema(minimum = 1, maximum = 10_000)]
    count: usize,
    #[serde(default = "default_format")]
    #[schema(value_type = FormatName, default = "gm1")]
    format: Format,
    /// Seats are this prefix and 1, 2, 3…
    #[serde(default)]
    seat_prefix: Option<String>,
    /// One seat per ticket (not with `seat_prefix`).
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

/// A ticket as the organizer sees it, with its signed code.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct TicketView {
    #[schema(value_type = String)]
    tid: TicketId,
    #[schema(value_type = String)]
    eid: EventId,
    seat: Option<String>,
    #[schema(value_type = FormatName)]
    format: Format,
    /// The signed code to print as a QR symbol.
    code: String,
    status: Status,
    /// The ticket that replaced it, once transferred.
    #[schema(value_type = Option<String>)]
    transferred_to: Option<TicketId>,
    /// The ticket it replaced.
    #[schema(value_type = Option<String>)]
    transferred_from: Option<TicketId>,
    holder: Option<String>,
}

impl From<&Ticket> for TicketView {
    fn from(t: &Ticket) -> Self {
        Self {
            tid: t.tid.clone(),
            eid: t.eid.clone(),
            seat: t.seat.clone(),
            format: t.format,
            code: t.code.clone(),
            status: t.status,
            transferred_to: t.transferred_to.clone(),
            transferred_from: t.transferred_from.clone(),
            holder: t.holder.clone(),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Issued {
    tickets: Vec<TicketView>,
}

/// Issues tickets.
///
/// Signed with the server's issuer key; a purchase webhook sends 1, print runs batch.
#[utoipa::path(
    post, path = "/v1/events/{eid}/tickets", tag = "organizer", operation_id = "issue_tickets",
    params(("eid" = String, Path, description = EID)),
    request_body = IssueRequest,
    responses(
        (status = 201, description = "The new tickets", body = Issued),
        (status = 400, description = "Bad input", body = ErrorBody),
        (status = 401, description = "No admin token", body = ErrorBody),
        (status = 404, description = "No such event", body = ErrorBody),
    ),
    security(("admin" = [])),
)]
pub(crate) async fn issue(
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
    let tickets = tickets.iter().map(TicketView::from).collect();
    Ok((StatusCode::CREATED, Json(Issued { tickets })).into_response())
}

/// A ticket with its admissions and any flag.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct TicketDetail {
    #[serde(flatten)]
    ticket: TicketView,
    /// The admissions that count, first one first.
    admissions: Vec<FirstUse>,
    /// Gates' journals hold more than one admission of it: staff must look.
    flagged: bool,
    /// Staff's latest decision on a flag.
    resolution: Option<ServerResolution>,
}

/// A ticket, its admissions and its flag.
#[utoipa::path(
    get, path = "/v1/events/{eid}/tickets/{tid}", tag = "organizer",
    params(("eid" = String, Path, description = EID), ("tid" = String, Path, description = TID)),
    responses(
        (status = 200, description = "The ticket", body = TicketDetail),
        (status = 400, description = "Bad id", body = ErrorBody),
        (status = 401, description = "No admin token", body = ErrorBody),
        (status = 404, description = "No such ticket", body = ErrorBody),
    ),
    security(("admin" = [])),
)]
pub(crate) async fn get_ticket(
    State(s): State<Server>,
    Path((eid, tid)): Path<(String, String)>,
) -> Result<Json<TicketDetail>, ApiError> {
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
    Ok(Json(TicketDetail {
        ticket: TicketView::from(&ticket),
        admissions,
        flagged: ticket.flagged,
        resolution: ticket.resolution,
    }))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct VoidRequest {
    /// 1-500 bytes, e.g. `refund`.
    reason: String,
    /// Who voids it, for the audit (1-64 bytes).
    #[serde(default = "default_actor")]
    #[schema(default = "admin")]
    actor: String,
}

fn default_actor() -> String {
    "admin".into()
}

/// Voids a ticket.
///
/// A refund: every gate refuses the ticket from then on. Audited.
#[utoipa::path(
    post, path = "/v1/events/{eid}/tickets/{tid}/void", tag = "organizer",
    operation_id = "void_ticket",
    params(("eid" = String, Path, description = EID), ("tid" = String, Path, description = TID)),
    request_body = VoidRequest,
    responses(
        (status = 200, description = "The voided ticket", body = TicketView),
        (status = 400, description = "Bad input", body = ErrorBody),
        (status = 401, description = "No admin token", body = ErrorBody),
        (status = 404, description = "No such ticket", body = ErrorBody),
        (status = 409, description = "The ticket is not active", body = ErrorBody),
    ),
    security(("admin" = [])),
)]
pub(crate) async fn void(
    State(s): State<Server>,
    Path((eid, tid)): Path<(String, String)>,
    Body(req): Body<VoidRequest>,
) -> Result<Json<TicketView>, ApiError> {
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
    Ok(Json(TicketView::from(&ticket)))
}

#[derive(Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct ManifestQuery {
    /// A cursor from an earlier answer: only the tickets changed after it.
    #[serde(default)]
    since: Option<i64>,
}

/// The manifest, or what changed after a cursor.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Manifest {
    /// Ask with `since` set to this for the next delta.
    cursor: i64,
    tickets: Vec<ManifestEntry>,
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
    let (cursor, tickets) = blocking(&s, move |st| manifest_read(st, &eid, q.since)).await?;
    let tickets = tickets.iter().map(|(t, a)| manifest_entry(t, a)).collect();
    Ok(Json(Manifest { cursor, tickets }))
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
/// the admissions involved and staff's decision. Fields that do not apply are left out.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ManifestEntry {
    #[schema(value_type = String)]
    tid: TicketId,
    seat: Option<String>,
    status: Status,
    /// The ticket that replaced it (status `transferred`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String)]
    to: Option<TicketId>,
    /// Why it was voided (status `void`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String)]
    reason: Option<String>,
    /// Redemption ids staff reverted, oldest first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    reverted: Vec<String>,
    /// Present (and true) while staff must look at it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    flagged: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = ServerResolution)]
    resolution: Option<ServerResolution>,
    /// For a flagged or resolved ticket: the admissions involved.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    admissions: Vec<FirstUse>,
}

fn manifest_entry(t: &Ticket, admissions: &[FirstUse]) -> ManifestEntry {
    ManifestEntry {
        tid: t.tid.clone(),
        seat: t.seat.clone(),
        status: t.status,
        to: t.transferred_to.clone(),
        reason: t.void_reason.clone(),
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
                let tickets = chunk.iter().map(|(t, a)| manifest_entry(t, a)).collect();
                let Some(event) = tickets_event(Manifest {
                    cursor: id,
                    tickets,
                }) else {
                    return;
                };
                if tx.send(event).await.is_err() {
                    return;
                }
            }
            if tickets.is_empty() && first {
                // Live from here: the client learns the cursor even when nothing changed.
                let Some(event) = tickets_event(Manifest {
                    cursor: now,
                    tickets: Vec::new(),
                }) else {
                    return;
                };
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

/// A `tickets` event of the change stream: the delta as JSON, its cursor as id.
fn tickets_event(delta: Manifest) -> Option<axum::response::sse::Event> {
    let id = delta.cursor.to_string();
    axum::response::sse::Event::default()
        .event("tickets")
        .id(id)
        .json_data(delta)
        .map_err(|e| tracing::error!("a change event: {e}"))
        .ok()
}

/// One redemption, or a gate's journal of them.
#[derive(Deserialize, ToSchema)]
#[serde(untagged)]
pub(crate) enum RedeemBody {
    /// A gate's journal: redemptions it already admitted offline (at most 10,000).
    Journal { redemptions: Vec<RedemptionRequest> },
    /// A scanner asking before it lets someone in.
    One(RedemptionRequest),
}

/// The answer to a single redemption, or the answers to a journal, item by item.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub(crate) enum Redeemed {
    Journal { answers: Vec<RedemptionAnswer> },
    One(RedemptionAnswer),
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

/// Redeems a ticket, or takes a gate's journal.
///
/// Atomic and idempotent: concurrent requests for one ticket get exactly one `admit`, and a
/// repeated `redemption_id` gets the stored answer back. A second admission of a ticket in
/// gates' journals flags it for staff.
#[utoipa::path(
    post, path = "/v1/events/{eid}/redemptions", tag = "gate", operation_id = "redeem",
    params(("eid" = String, Path, description = EID)),
    request_body = RedeemBody,
    responses(
        (status = 200, description = "The answer, or one answer per journal item in order",
            body = Redeemed),
        (status = 400, description = "Bad input; nothing of the upload is stored",
            body = ErrorBody),
        (status = 401, description = "No credential", body = ErrorBody),
        (status = 403, description = "A device of another event, or an observer",
            body = ErrorBody),
        (status = 404, description = "No such event", body = ErrorBody),
        (status = 413, description = "Over 8 MiB", body = ErrorBody),
    ),
    security(("admin" = []), ("device" = [])),
)]
pub(crate) async fn redeem(
    State(s): State<Server>,
    caller: axum::Extension<Caller>,
    Path(eid): Path<String>,
    Body(body): Body<RedeemBody>,
) -> Result<Json<Redeemed>, ApiError> {
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
            let started = std::time::Instant::now();
            let answer = match s.store.submit_online(&eid, &r) {
                // Gathered by the storage: nothing blocks while it is at the database.
                Some(answer) => answer.await.unwrap_or_else(|_| {
                    Err(StoreError::Conflict("the storage is closing".into()))
                })?,
                None => {
                    let (eid, r) = (eid.clone(), r.clone());
                    blocking(&s, move |st| st.redeem(&eid, &r, Origin::Online)).await?
                }
            };
            s.metrics.redemption(
                eid.as_str(),
                &r.gate,
                verdict_name(answer.verdict),
                started.elapsed().as_secs_f64(),
            );
            Ok(Json(Redeemed::One(answer)))
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
                let started = std::time::Instant::now();
                let answers = st.redeem_journal(&eid, &redemptions)?;
                // One commit for the batch: each item is counted with its share of the time.
                let each = started.elapsed().as_secs_f64() / answers.len().max(1) as f64;
                for (r, a) in redemptions.iter().zip(&answers) {
                    metrics.redemption(eid.as_str(), &r.gate, verdict_name(a.verdict), each);
                }
                Ok(answers)
            })
            .await?;
            Ok(Json(Redeemed::Journal { answers }))
        }
    }
}

fn verdict_name(v: gatemesh_ledger::Verdict) -> &'static str {
    match v {
        gatemesh_ledger::Verdict::Admit => "admit",
        gatemesh_ledger::Verdict::Duplicate => "duplicate",
        gatemesh_ledger::Verdict::Reject => "reject",
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TransferRequest {
    /// The new holder's name (at most 200 printable bytes).
    #[serde(default)]
    holder: Option<String>,
    /// Who transfers it, for the audit (1-64 bytes).
    #[serde(default = "default_actor")]
    #[schema(default = "admin")]
    actor: String,
}

/// Transfers a ticket.
///
/// Issues a new ticket for the same seat and makes the old one `transferred` to it.
#[utoipa::path(
    post, path = "/v1/events/{eid}/tickets/{tid}/transfer", tag = "organizer",
    operation_id = "transfer_ticket",
    params(("eid" = String, Path, description = EID), ("tid" = String, Path, description = TID)),
    request_body = TransferRequest,
    responses(
        (status = 201, description = "The new ticket", body = TicketView),
        (status = 400, description = "Bad input", body = ErrorBody),
        (status = 401, description = "No admin token", body = ErrorBody),
        (status = 404, description = "No such ticket", body = ErrorBody),
        (status = 409, description = "The ticket is not active", body = ErrorBody),
    ),
    security(("admin" = [])),
)]
pub(crate) async fn transfer(
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
    Ok((StatusCode::CREATED, Json(TicketView::from(&new))).into_response())
}

#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Chain {
    /// Oldest first.
    chain: Vec<ChainLink>,
}

#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ChainLink {
    #[schema(value_type = String)]
    tid: TicketId,
    status: Status,
    holder: Option<String>,
}

/// A ticket's lineage.
///
/// Oldest first: every ticket it replaced and every one that replaced it.
#[utoipa::path(
    get, path = "/v1/events/{eid}/tickets/{tid}/chain", tag = "organizer",
    operation_id = "ticket_chain",
    params(("eid" = String, Path, description = EID), ("tid" = String, Path, description = TID)),
    responses(
        (status = 200, description = "The lineage (the same from any link)", body = Chain),
        (status = 400, description = "Bad id", body = ErrorBody),
        (status = 401, description = "No admin token", body = ErrorBody),
        (status = 404, description = "No such ticket", body = ErrorBody),
    ),
    security(("admin" = [])),
)]
pub(crate) async fn chain(
    State(s): State<Server>,
    Path((eid, tid)): Path<(String, String)>,
) -> Result<Json<Chain>, ApiError> {
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
    let chain = chain
        .into_iter()
        .map(|t| ChainLink {
            tid: t.tid,
            status: t.status,
            holder: t.holder,
        })
        .collect();
    Ok(Json(Chain { chain }))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RevertRequest {
    /// Who reverts, for the audit (1-64 bytes).
    actor: String,
    /// 1-500 bytes.
    reason: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Reverted {
    /// How many admissions were undone.
    reverted: usize,
}

/// Reverts a ticket's admissions.
///
/// For a mistaken scan: the ticket admits again. Audited.
#[utoipa::path(
    post, path = "/v1/events/{eid}/tickets/{tid}/revert", tag = "organizer",
    operation_id = "revert_ticket",
    params(("eid" = String, Path, description = EID), ("tid" = String, Path, description = TID)),
    request_body = RevertRequest,
    responses(
        (status = 200, description = "Reverted", body = Reverted),
        (status = 400, description = "Bad input", body = ErrorBody),
        (status = 401, description = "No admin token", body = ErrorBody),
        (status = 404, description = "No such ticket", body = ErrorBody),
        (status = 409, description = "No admission to revert", body = ErrorBody),
    ),
    security(("admin" = [])),
)]
pub(crate) async fn revert(
    State(s): State<Server>,
    Path((eid, tid)): Path<(String, String)>,
    Body(req): Body<RevertRequest>,
) -> Result<Json<Reverted>, ApiError> {
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
    Ok(Json(Reverted { reverted: n }))
}

#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Audit {
    /// Oldest first.
    audit: Vec<AuditLine>,
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
    Ok(Json(Audit { audit }))
}

/// What happened at an event, in numbers.
#[utoipa::path(
    get, path = "/v1/events/{eid}/stats", tag = "organizer",
    params(("eid" = String, Path, description = EID)),
    responses(
        (status = 200, description = "The counts", body = Counts),
        (status = 400, description = "Bad id", body = ErrorBody),
        (status = 401, description = "No admin token", body = ErrorBody),
        (status = 404, description = "No such event", body = ErrorBody),
    ),
    security(("admin" = [])),
)]
pub(crate) async fn stats(
    State(s): State<Server>,
    Path(eid): Path<String>,
) -> Result<Json<Counts>, ApiError> {
    let eid = event_id(&eid)?;
    known_event(&s, &eid).await?;
    let counts = blocking(&s, move |st| st.counts(&eid)).await?;
    Ok(Json(counts))
}

#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Flags {
    flags: Vec<Flag>,
}

/// A flagged ticket and the admissions that made the flag.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Flag {
    #[schema(value_type = String)]
    tid: TicketId,
    seat: Option<String>,
    status: Status,
    admissions: Vec<FirstUse>,
}

/// Flagged tickets, each with the admissions that made the flag.
#[utoipa::path(
    get, path = "/v1/events/{eid}/flags", tag = "gate", operation_id = "list_flags",
    params(("eid" = String, Path, description = EID)),
    responses(
        (status = 200, description = "The tickets staff must look at", body = Flags),
        (status = 400, description = "Bad id", body = ErrorBody),
        (status = 401, description = "No credential", body = ErrorBody),
        (status = 403, description = "A device of another event", body = ErrorBody),
        (status = 404, description = "No such event", body = ErrorBody),
    ),
    security(("admin" = []), ("device" = [])),
)]
pub(crate) async fn flags(
    State(s): State<Server>,
    Path(eid): Path<String>,
) -> Result<Json<Flags>, ApiError> {
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
    let flags = flags
        .into_iter()
        .map(|(t, admissions)| Flag {
            tid: t.tid,
            seat: t.seat,
            status: t.status,
            admissions,
        })
        .collect();
    Ok(Json(Flags { flags }))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ResolveRequest {
    #[schema(value_type = ActionName)]
    action: gatemesh_ledger::Action,
    /// Who decided (1-64 bytes).
    staff: String,
    /// At most 500 bytes.
    #[serde(default)]
    note: String,
}

/// Records staff's decision on a flag.
///
/// `accept` (same person), `deny` (the ticket is refused from now on) or `revert` (its
/// admissions are undone). Audited; gates learn it.
#[utoipa::path(
    post, path = "/v1/events/{eid}/flags/{tid}/resolve", tag = "gate",
    operation_id = "resolve_flag",
    params(("eid" = String, Path, description = EID), ("tid" = String, Path, description = TID)),
    request_body = ResolveRequest,
    responses(
        (status = 200, description = "The ticket after the decision", body = TicketView),
        (status = 400, description = "Bad input", body = ErrorBody),
        (status = 401, description = "No credential", body = ErrorBody),
        (status = 403, description = "A device of another event", body = ErrorBody),
        (status = 404, description = "No such ticket", body = ErrorBody),
        (status = 409, description = "Nothing to resolve", body = ErrorBody),
    ),
    security(("admin" = []), ("device" = [])),
)]
pub(crate) async fn resolve(
    State(s): State<Server>,
    Path((eid, tid)): Path<(String, String)>,
    Body(req): Body<ResolveRequest>,
) -> Result<Json<TicketView>, ApiError> {
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
    Ok(Json(TicketView::from(&resolved)))
}
