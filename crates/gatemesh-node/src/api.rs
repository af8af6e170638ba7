//! The gate's local HTTP API (JSON). Only this layer knows the wire DTOs.
//!
//! Every request needs the gate's token (`Authorization: Bearer`, [`ApiToken`]) and a `Host`
//! naming the bound address; a browser `Origin` other than the app's is refused, and a body
//! must carry its type (`application/json`; a ledger file `application/octet-stream`), so
//! no web page the laptop opens can call it ([`access`]). What is done with the token is
//! recorded as such: a resolution's staff reads "NAME (api token)".
//!
//! Client input never causes a 5xx: bad JSON, unknown fields, oversized bodies (64 KiB; the
//! ledger import takes up to 256 MiB) and invalid ids get a 4xx with
//! `{"error":{"code","message"}}`.

mod access;

use std::{convert::Infallible, future::Future, sync::Arc, time::Duration};

pub use access::{APP_ORIGINS, ApiConfig, ApiToken, TOKEN_FILE, TokenError, is_public};

use axum::{
    Json, Router,
    body::Bytes,
    extract::{
        DefaultBodyLimit, FromRequest, Path, Query, Request, State, rejection::JsonRejection,
    },
    http::{HeaderMap, StatusCode, header},
    response::{
        IntoResponse, Response,
        sse::{Event, KeepAlive, Sse},
    },
    routing::{get, post},
};
use futures_util::{Stream, StreamExt, stream};
use gatemesh_ledger::{Action, Direction, Reason, RedemptionId, Verdict};
use gatemesh_ticket::TicketId;
use gatemesh_wire::{ErrorBody, Role, time::format_ms};
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use serde_json::json;
use tokio::sync::{broadcast, watch};

use crate::{Node, NodeError, NodeEvent, ScanResult};

const BODY_LIMIT: usize = 64 * 1024;
const IMPORT_LIMIT: usize = 256 * 1024 * 1024;

/// An error as the API reports it.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
}

impl ApiError {
    fn bad_request(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            code: "bad_request",
            message: message.into(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(ErrorBody::new(self.code, self.message))).into_response()
    }
}

impl From<NodeError> for ApiError {
    fn from(e: NodeError) -> Self {
        let (status, code) = match &e {
            NodeError::BadInput(_) => (StatusCode::BAD_REQUEST, "bad_request"),
            NodeError::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
            NodeError::Conflict(_) => (StatusCode::CONFLICT, "conflict"),
            NodeError::Storage(_) | NodeError::Stopped => {
                (StatusCode::SERVICE_UNAVAILABLE, "unavailable")
            }
            NodeError::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        };
        Self {
            status,
            code,
            message: e.to_string(),
        }
    }
}

impl From<JsonRejection> for ApiError {
    fn from(r: JsonRejection) -> Self {
        let status = r.status();
        let code = match status {
            StatusCode::PAYLOAD_TOO_LARGE => "too_large",
            StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
            _ => "bad_request",
        };
        // 422 (well-formed JSON of the wrong shape) is reported as 400 like any bad body.
        let status = if status == StatusCode::UNPROCESSABLE_ENTITY {
            StatusCode::BAD_REQUEST
        } else {
            status
        };
        Self {
            status,
            code,
            message: r.body_text(),
        }
    }
}

/// `Json` whose rejections are our JSON errors.
struct Body<T>(T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Body<T> {
    type Rejection = ApiError;
    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let Json(value) = Json::<T>::from_request(req, state).await?;
        Ok(Self(value))
    }
}

fn tid(raw: &str) -> Result<TicketId, ApiError> {
    TicketId::new(raw).map_err(|e| ApiError::bad_request(e.to_string()))
}

#[derive(Clone)]
struct AppState {
    node: Node,
    stop: watch::Receiver<bool>,
}

/// The API's routes over `node`, guarded for an API bound to `bound`.
fn router(node: Node, stop: watch::Receiver<bool>, guard: access::Guard) -> Router {
    Router::new()
        .route("/v1/scan", post(scan))
        .route("/v1/tickets/{tid}", get(ticket))
        .route("/v1/status", get(status))
        .route("/v1/guests", get(guests))
        .route("/v1/guests/{tid}/check-in", post(check_in_guest))
        .route("/v1/flags", get(flags))
        .route("/v1/flags/{tid}/resolve", post(resolve))
        .route("/v1/stream", get(live))
        .route("/v1/export", get(export))
        .route(
            "/v1/import",
            post(import).layer(DefaultBodyLimit::max(IMPORT_LIMIT)),
        )
        .fallback(|| async {
            ApiError {
                status: StatusCode::NOT_FOUND,
                code: "not_found",
                message: "no such endpoint".into(),
            }
        })
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(AppState { node, stop })
        .layer(axum::middleware::from_fn_with_state(
            Arc::new(guard),
            access::guard,
        ))
}

/// Serves the API on `listener`, guarded by `config`, until `shutdown` completes; live
/// streams end then too.
pub async fn serve(
    listener: tokio::net::TcpListener,
    node: Node,
    config: ApiConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let (stop_tx, stop_rx) = watch::channel(false);
    let guard = access::Guard::new(config, listener.local_addr()?);
    let app = router(node, stop_rx, guard);
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            shutdown.await;
            let _ = stop_tx.send(true);
        })
        .await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScanRequest {
    code: String,
    scanner: String,
    #[serde(default)]
    direction: Direction,
    /// The scanner's name for this presentation, sent again with each ask of it: every ask
    /// gets the first one's answer (`crate::presented`).
    #[serde(default)]
    presentation: Option<String>,
}

#[derive(Serialize)]
struct TicketDto {
    tid: String,
    eid: String,
    seat: Option<String>,
    /// The ticket's product as it carries it (`VIP`, or `#2` for a GM1 number).
    #[serde(skip_serializing_if = "Option::is_none")]
    product: Option<String>,
}

#[derive(Serialize)]
struct FirstDto {
    gate: String,
    scanner: String,
    node: String,
    at: String,
    ago_s: i64,
    redemption_id: RedemptionId,
}

#[derive(Serialize)]
struct ScanResponse {
    verdict: Verdict,
    reason: Reason,
    ticket: Option<TicketDto>,
    first: Option<FirstDto>,
    redemption_id: Option<RedemptionId>,
    transferred_to: Option<TicketId>,
    at: String,
    /// For a code refused for itself: what was wrong, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<String>,
    /// At a gate with check-in lists: the list the ticket was taken under.
    #[serde(skip_serializing_if = "Option::is_none")]
    list: Option<gatemesh_wire::ListId>,
    /// And who is inside it now, against its capacity.
    #[serde(skip_serializing_if = "Option::is_none")]
    occupancy: Option<gatemesh_wire::ListOccupancy>,
}

impl From<ScanResult> for ScanResponse {
    fn from(r: ScanResult) -> Self {
        Self {
            verdict: r.verdict,
            reason: r.reason,
            ticket: r.ticket.map(|c| TicketDto {
                tid: c.tid.to_string(),
                eid: c.eid.to_string(),
                seat: c.seat.map(|s| s.to_string()),
                product: c.product.map(|p| p.to_string()),
            }),
            first: r.first.map(|f| FirstDto {
                ago_s: (r.at_ms - f.at_ms).max(0) / 1000,
                at: format_ms(f.at_ms),
                gate: f.gate,
                scanner: f.scanner,
                node: f.node.to_string(),
                redemption_id: f.redemption_id,
            }),
            redemption_id: r.redemption_id,
            transferred_to: r.transferred_to,
            at: format_ms(r.at_ms),
            detail: r.detail,
            list: r.list,
            occupancy: r.occupancy,
        }
    }
}

async fn scan(
    State(s): State<AppState>,
    Body(req): Body<ScanRequest>,
) -> Result<Json<ScanResponse>, ApiError> {
    let result = s
        .node
        .scan_presented(
            &req.code,
            &req.scanner,
            req.direction,
            req.presentation.as_deref(),
        )
        .await?;
    Ok(Json(result.into()))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GuestQuery {
    q: String,
}

/// Guests found by part of their name, their order, ticket id or seat, with whether and
/// where they came in; `search: false` when this gate has no one to search.
async fn guests(
    State(s): State<AppState>,
    query: Result<axum::extract::Query<GuestQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let axum::extract::Query(q) =
        query.map_err(|e| ApiError::bad_request(format!("{}: give ?q=", e.body_text())))?;
    if q.q.len() > 200 {
        return Err(ApiError::bad_request("a search is at most 200 bytes"));
    }
    let Some(found) = s.node.search_guests(&q.q).await? else {
        return Ok(Json(json!({ "search": false, "guests": [] })));
    };
    let guests: Vec<_> = found
        .into_iter()
        .map(|f| {
            let g = &f.guest;
            json!({
                "tid": g.tid, "seat": g.seat, "holder": g.holder,
                "order": g.order, "product": g.product.as_ref().map(ToString::to_string),
                "standing": f.standing,
                "entries": f.entries,
                "first": f.first_gate.as_ref().zip(f.first_at_ms)
                    .map(|(gate, at)| json!({ "gate": gate, "at": format_ms(at) })),
            })
        })
        .collect();
    Ok(Json(json!({ "search": true, "guests": guests })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GuestCheckIn {
    /// Who checks the guest in (1-64 bytes), recorded with the admission.
    staff: String,
    #[serde(default = "default_desk")]
    scanner: String,
}

fn default_desk() -> String {
    "search".to_owned()
}

/// Checks in a guest found by search: the verdict a scan of their code would get, recorded
/// (when admitted) as a manual admission naming the staff member.
async fn check_in_guest(
    State(s): State<AppState>,
    Path(raw): Path<String>,
    Body(req): Body<GuestCheckIn>,
) -> Result<Json<ScanResponse>, ApiError> {
    let tid = tid(&raw)?;
    let staff = through_the_token(&req.staff)?;
    let result = s.node.check_in_guest(&tid, &staff, &req.scanner).await?;
    Ok(Json(result.into()))
}

async fn ticket(State(s): State<AppState>, Path(raw): Path<String>) -> Result<Response, ApiError> {
    let tid = tid(&raw)?;
    let (state, flagged) = s.node.ticket(tid.clone()).await?;
    if state.is_empty() {
        return Err(ApiError {
            status: StatusCode::NOT_FOUND,
            code: "not_found",
            message: format!("this gate knows nothing of ticket {tid}"),
        });
    }
    Ok(Json(json!({
        "tid": tid,
        "standing": state.standing(),
        "flagged": flagged,
        "redemptions": state.redemptions,
        "resolutions": state.resolutions,
    }))
    .into_response())
}

async fn status(State(s): State<AppState>) -> Result<Json<serde_json::Value>, ApiError> {
    let snap = s.node.snapshot().await?;
    let info = s.node.info();
    let peers: Vec<_> = s
        .node
        .peer_report()
        .await?
        .into_iter()
        .map(|(p, seen)| {
            json!({
                "name": p.name, "role": p.role, "address": p.address, "connected": p.connected,
                "rtt_ms": p.rtt_ms, "last_sync": p.last_sync_ms.map(format_ms), "behind": seen.behind,
                "already_held": seen.books.sent_twice(),
                "relayed_by": seen.relayed_by,
                "books": seen.books, "waiting": seen.waiting,
                "messages": p.messages, "bytes_sent": p.bytes_sent, "bytes_received": p.bytes_received,
                "pushes": p.pushes, "push_backlog_max": p.push_backlog_max,
                "fell_behind": p.fell_behind, "rounds": p.rounds, "relayed": p.relayed,
            })
        })
        .collect();
    let revocations = s.node.revocations().await?;
    let lists = s.node.occupancy().await?;
    let ended = snap.peers_ended;
    Ok(Json(json!({
        "node_id": info.node_id,
        "name": info.name,
        "event": info.event,
        "role": if s.node.is_observer() { Role::Observer } else { Role::Gate },
        "counts": snap.counts,
        "refusals": snap.refusals,
        "redemptions": snap.redemptions,
        "ledger_digest": snap.ledger_digest,
        "peers_ended": {
            "already_held": ended.books.sent_twice(),
            "relayed_by": ended.relayed_by,
            "waiting_dropped": ended.waiting_dropped,
            "books": ended.books,
        },
        "flagged": snap.flagged,
        "manifest_tickets": snap.manifest_tickets,
        "peers": peers,
        "lists": lists,
        "check_in": s.node.check_in(),
        "refused_peers": s.node.refusals(),
        "revoked": revocations.revoked,
        "revocations": revocations.revocations,
        "set_aside": revocations.set_aside,
        "uplink": match s.node.uplink_status() {
            Some(u) => json!(u),
            None => json!(null),
        },
    })))
}

async fn flags(State(s): State<AppState>) -> Result<Json<serde_json::Value>, ApiError> {
    let flags = s.node.flags().await?;
    let list: Vec<_> = flags
        .into_iter()
        .map(|(tid, state)| {
            let flagged: Vec<_> = state.flagged().into_iter().cloned().collect();
            json!({ "tid": tid, "redemptions": flagged, "resolutions": state.resolutions })
        })
        .collect();
    // Records of revoked devices count for nothing, and staff should see them.
    let set_aside = s.node.revocations().await?.set_aside;
    Ok(Json(json!({ "flags": list, "set_aside": set_aside })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ResolveRequest {
    action: Action,
    staff: String,
    #[serde(default)]
    note: String,
}

async fn resolve(
    State(s): State<AppState>,
    Path(raw): Path<String>,
    Body(req): Body<ResolveRequest>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let tid = tid(&raw)?;
    let staff = through_the_token(&req.staff)?;
    let resolution = s.node.resolve(tid, req.action, &staff, &req.note).await?;
    Ok(Json(json!({ "resolution": resolution })))
}

/// What a resolution made with the API token records as its staff: the name given, marked
/// as made with the token (the API cannot tell who holds it).
const TOKEN_MARK: &str = " (api token)";

fn through_the_token(given: &str) -> Result<String, ApiError> {
    let name = given.trim();
    if gatemesh_wire::Label::parse(name).is_none() {
        // The node says what a staff name must be.
        return Ok(given.to_owned());
    }
    let marked = format!("{name}{TOKEN_MARK}");
    if gatemesh_wire::Label::parse(&marked).is_none() {
        return Err(ApiError::bad_request(format!(
            "staff is at most {} bytes through the API: it is recorded as \"NAME{TOKEN_MARK}\"",
            gatemesh_wire::Label::MAX - TOKEN_MARK.len()
        )));
    }
    Ok(marked)
}

async fn live(State(s): State<AppState>) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let rx = s.node.subscribe();
    let mut stop = s.stop.clone();
    let events = stream::unfold(rx, |mut rx| async move {
        loop {
            match rx.recv().await {
                Ok(event) => {
                    let kind = match &event {
                        NodeEvent::Verdict(_) => "verdict",
                        NodeEvent::Flagged { .. } => "flagged",
                        NodeEvent::Resolved { .. } => "resolved",
                        NodeEvent::Imported { .. } => "imported",
                        NodeEvent::CaughtUp { .. } => "caught_up",
                        NodeEvent::Standing { .. } => "standing",
                    };
                    let data = match &event {
                        NodeEvent::Verdict(r) => {
                            serde_json::to_string(&ScanResponse::from((**r).clone()))
                        }
                        other => serde_json::to_string(other),
                    }
                    .unwrap_or_default();
                    return Some((Ok(Event::default().event(kind).data(data)), rx));
                }
                // A slow viewer missed some events; it carries on with the next.
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    });
    let until_stop = async move {
        let _ = stop.wait_for(|stopped| *stopped).await;
    };
    Sse::new(events.take_until(until_stop))
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExportQuery {
    #[serde(default)]
    format: Option<String>,
}

/// `GET /v1/export?format=json`: every record the ledger holds.
#[derive(Serialize)]
struct Export<'a> {
    audit: &'a [gatemesh_ledger::AuditEntry],
    redemptions: &'a [gatemesh_ledger::Redemption],
}

async fn export(
    State(s): State<AppState>,
    query: Result<Query<ExportQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(query) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let (redemptions, audit) = s.node.records().await?;
    // Written straight from the records, never through a JSON tree or a table of rows: at
    // 20,000 redemptions a `serde_json::Value` of them held ~55 MB for a 12 MB answer, the
    // gate's largest allocation (`BENCHMARKS.md`, "Where a gate's memory goes").
    match query.format.as_deref().unwrap_or("json") {
        "json" => Ok(Json(Export {
            audit: &audit,
            redemptions: &redemptions,
        })
        .into_response()),
        "csv" => {
            let fail = |e: csv::Error| ApiError::from(NodeError::Internal(e.to_string()));
            let mut w = csv::Writer::from_writer(Vec::new());
            w.write_record([
                "record",
                "id",
                "tid",
                "at",
                "node",
                "gate",
                "scanner",
                "direction",
                "actor",
                "action",
                "detail",
            ])
            .map_err(fail)?;
            for r in &redemptions {
                let direction = match r.direction {
                    Direction::Entry => "entry",
                    Direction::Exit => "exit",
                };
                w.write_record([
                    "redemption",
                    r.id.as_ref(),
                    &r.tid.to_string(),
                    &format_ms(r.at_ms),
                    r.node.as_ref(),
                    &r.gate,
                    &r.scanner,
                    direction,
                    "",
                    "",
                    if r.unlisted { "unlisted" } else { "" },
                ])
                .map_err(fail)?;
            }
            for a in &audit {
                w.write_record([
                    "audit",
                    "",
                    &a.tid.as_ref().map(|t| t.to_string()).unwrap_or_default(),
                    &format_ms(a.at_ms),
                    a.node.as_ref(),
                    "",
                    "",
                    "",
                    &a.actor,
                    &a.action,
                    &a.detail,
                ])
                .map_err(fail)?;
            }
            let bytes = w
                .into_inner()
                .map_err(|e| ApiError::from(NodeError::Internal(e.to_string())))?;
            Ok(([(header::CONTENT_TYPE, "text/csv; charset=utf-8")], bytes).into_response())
        }
        other => Err(ApiError::bad_request(format!(
            "format must be csv or json, not {other:?}"
        ))),
    }
}

async fn import(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<serde_json::Value>, ApiError> {
    if access::media_type(&headers).as_deref() != Some("application/octet-stream") {
        return Err(ApiError {
            status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
            code: "unsupported_media_type",
            message: "a ledger file is sent as Content-Type: application/octet-stream".into(),
        });
    }
    let text_end = body.iter().take(200).position(|&b| b == b'\n');
    let header = text_end.and_then(|n| std::str::from_utf8(&body[..n]).ok());
    let Some(event) = header.and_then(|h| h.strip_prefix("gatemesh-ledger 1 ")) else {
        return Err(ApiError::bad_request(
            "the body is not a gatemesh ledger file",
        ));
    };
    if event != s.node.info().event.as_str() {
        return Err(ApiError::bad_request(format!(
            "the file holds the ledger of {event}, not {}",
            s.node.info().event
        )));
    }
    let start = text_end.map_or(0, |n| n + 1);
    let changes = s.node.import_ledger(body[start..].to_vec()).await?;
    Ok(Json(json!({ "new_changes": changes })))
}
