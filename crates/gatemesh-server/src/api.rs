//! The server's HTTP API (JSON), one module per area. Organizer calls need
//! `Authorization: Bearer <admin token>`; gate calls take the admin token or a paired
//! device's credential ([`auth`]); `/v1/health`, `/healthz`, `/readyz`, `/v1/keys`,
//! `/.well-known/jwks.json`, `/v1/pair` and `/v1/openapi.json` are open. Client input never causes a 5xx ([`errors`]).
//!
//! Every handler carries its `#[utoipa::path]` and returns a typed body (the gate-facing ones
//! from `gatemesh-wire`), so the OpenAPI document ([`crate::openapi`]) is made from what the
//! handlers really send.

pub(crate) mod auth;
pub(crate) mod devices;
pub(crate) mod errors;
pub(crate) mod events;
pub(crate) mod flags;
pub(crate) mod lists;
pub(crate) mod manifest;
pub(crate) mod redemptions;
pub(crate) mod revoke;
pub(crate) mod tickets;

use std::future::Future;

use axum::{
    Json, Router,
    extract::{DefaultBodyLimit, State},
    http::{StatusCode, header},
    middleware,
    response::{IntoResponse, Response},
    routing::{get, post},
};
use gatemesh_wire::{IssuerKey, Keys};
use serde::Serialize;
use utoipa::ToSchema;

pub(crate) use self::errors::{ApiError, Body, ErrorBody, bad, blocking, err};
pub(crate) use self::events::{event_id, known_event, ticket_id};
use crate::{
    Server,
    tls::{TlsIdentity, TlsListener},
};
use tokio::net::TcpListener;

const BODY_LIMIT: usize = 64 * 1024;
const JOURNAL_LIMIT: usize = 8 * 1024 * 1024;
/// A question of `MAX_JOURNAL` redemption ids (`/redemptions/held`).
const HELD_LIMIT: usize = 1024 * 1024;
/// Most tickets one request issues (a purchase webhook sends 1; print runs batch).
pub const MAX_ISSUE: usize = 10_000;
/// Most redemptions one journal upload carries.
pub const MAX_JOURNAL: usize = gatemesh_wire::MAX_JOURNAL;

/// The path parameters' descriptions, for the handlers' `#[utoipa::path]`.
pub(crate) const EID: &str = "The event id";
pub(crate) const TID: &str = "The ticket id";

/// Every endpoint. Each route here has its `#[utoipa::path]` and is listed in
/// [`crate::openapi::ApiDoc`]; the server tests check the router and the document agree.
pub fn router(server: Server) -> Router {
    let organizer = Router::new()
        .route("/v1/events", post(events::create).get(events::list))
        .route(
            "/v1/events/{eid}/tickets",
            post(tickets::issue).get(tickets::list),
        )
        .route("/v1/events/{eid}/tickets/{tid}", get(tickets::get))
        .route("/v1/events/{eid}/tickets/{tid}/void", post(tickets::void))
        .route(
            "/v1/events/{eid}/tickets/{tid}/transfer",
            post(tickets::transfer),
        )
        .route(
            "/v1/events/{eid}/tickets/{tid}/revert",
            post(tickets::revert),
        )
        .route("/v1/events/{eid}/tickets/{tid}/chain", get(tickets::chain))
        .route("/v1/events/{eid}/audit", get(events::audit))
        .route("/v1/events/{eid}/stats", get(events::stats))
        .route("/v1/events/{eid}/devices", post(devices::create))
        .route("/v1/events/{eid}/gates", get(devices::gates))
        .route("/metrics", get(metrics))
        .route_layer(middleware::from_fn_with_state(
            server.clone(),
            auth::require_admin,
        ));
    let gates = Router::new()
        .route("/v1/events/{eid}/manifest", get(manifest::manifest))
        .route("/v1/events/{eid}/changes", get(manifest::changes))
        .route(
            "/v1/events/{eid}/redemptions",
            post(redemptions::redeem).layer(DefaultBodyLimit::max(JOURNAL_LIMIT)),
        )
        .route(
            "/v1/events/{eid}/redemptions/held",
            post(redemptions::held).layer(DefaultBodyLimit::max(HELD_LIMIT)),
        )
        .route("/v1/events/{eid}/heartbeat", post(devices::heartbeat))
        // Organizer only, but behind the gate check so a device's credential gets 403.
        .route(
            "/v1/events/{eid}/devices/{name}/revoke",
            post(revoke::revoke),
        )
        // Releasing is the organizer's only, but behind the gate check so a device's
        // credential gets 403; reading is every gate's of the event.
        .route(
            "/v1/events/{eid}/lists",
            axum::routing::put(lists::release).get(lists::latest),
        )
        .route("/v1/events/{eid}/flags", get(flags::list))
        .route("/v1/events/{eid}/flags/{tid}/resolve", post(flags::resolve))
        .route_layer(middleware::from_fn_with_state(
            server.clone(),
            auth::require_gate,
        ));
    Router::new()
        .route("/v1/health", get(health))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/v1/keys", get(keys))
        .route("/.well-known/jwks.json", get(jwks))
        .route("/v1/openapi.json", get(openapi_json))
        .route("/v1/pair", post(devices::pair))
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
                let refusals = g
                    .heartbeat
                    .as_ref()
                    .map(|h| h.refusals.clone())
                    .unwrap_or_default();
                let uplink = g.heartbeat.and_then(|h| h.uplink);
                out.push(crate::metrics::GateReport {
                    event: e.id.to_string(),
                    gate: g.name.to_string(),
                    backlog: uplink.as_ref().map(|u| u.backlog),
                    skipped: uplink.as_ref().map(|u| u.skipped),
                    last_seen_ms: g.last_seen_ms,
                    refusals,
                });
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

/// Where devices reach this server and the certificate it presents.
#[derive(Debug)]
pub(crate) struct Edge {
    /// `https://HOST:PORT` (or `http://` for plain HTTP); `None` when the server listens on
    /// every address and was not told its public URL.
    pub(crate) url: Option<String>,
    pub(crate) fingerprint: Option<gatemesh_wire::CertFingerprint>,
}

/// A client's address, for the pairing limits; taken from the connection.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClientAddr(pub(crate) std::net::SocketAddr);

impl axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, TcpListener>>
    for ClientAddr
{
    fn connect_info(stream: axum::serve::IncomingStream<'_, TcpListener>) -> Self {
        Self(*stream.remote_addr())
    }
}

impl axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, TlsListener>>
    for ClientAddr
{
    fn connect_info(stream: axum::serve::IncomingStream<'_, TlsListener>) -> Self {
        Self(*stream.remote_addr())
    }
}

fn with_edge(
    mut server: Server,
    local: std::net::SocketAddr,
    fingerprint: Option<gatemesh_wire::CertFingerprint>,
) -> Server {
    let scheme = if fingerprint.is_some() {
        "https"
    } else {
        "http"
    };
    let url = match &server.public_url {
        Some(url) => Some(url.to_string()),
        None if local.ip().is_unspecified() => None,
        None => Some(format!("{scheme}://{local}")),
    };
    server.edge = Some(std::sync::Arc::new(Edge { url, fingerprint }));
    server
}

/// Serves plain HTTP until `shutdown` completes. Devices pair with it only on loopback (a
/// gate refuses an `http://` server elsewhere); [`serve_tls`] is the way to serve a venue.
pub async fn serve(
    listener: TcpListener,
    server: Server,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let server = with_edge(server, listener.local_addr()?, None);
    let stopping = server.stopping.clone();
    axum::serve(
        listener,
        router(server).into_make_service_with_connect_info::<ClientAddr>(),
    )
    .with_graceful_shutdown(async move {
        shutdown.await;
        stopping.send_replace(true);
    })
    .await
}

/// Serves HTTPS with `tls` until `shutdown` completes; pairing links carry the
/// certificate's fingerprint.
pub async fn serve_tls(
    listener: TcpListener,
    server: Server,
    tls: &TlsIdentity,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let server = with_edge(server, listener.local_addr()?, Some(tls.fingerprint()));
    let listener = TlsListener::new(listener, tls).map_err(std::io::Error::other)?;
    let stopping = server.stopping.clone();
    axum::serve(
        listener,
        router(server).into_make_service_with_connect_info::<ClientAddr>(),
    )
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

/// Liveness for a service manager or an orchestrator: 200 whenever the process serves, even
/// while the database is away (restarting the process would not bring it back).
#[utoipa::path(
    get, path = "/healthz", tag = "open",
    responses((status = 200, description = "The process serves", body = Health)),
)]
pub(crate) async fn healthz() -> Json<Health> {
    Json(Health { ok: true })
}

#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Ready {
    ready: bool,
}

/// Readiness: 200 when the database answers now; 503 with the cause when it does not, so a
/// load balancer sends requests elsewhere until it is back.
#[utoipa::path(
    get, path = "/readyz", tag = "open",
    responses(
        (status = 200, description = "The database answers", body = Ready),
        (status = 503, description = "The database does not answer; the message says why",
            body = ErrorBody),
    ),
)]
pub(crate) async fn readyz(State(s): State<Server>) -> Result<Json<Ready>, ApiError> {
    let store = s.store.clone();
    match tokio::task::spawn_blocking(move || store.ping()).await {
        Ok(Ok(())) => Ok(Json(Ready { ready: true })),
        Ok(Err(e)) => Err(err(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            format!("the database does not answer: {e}"),
        )),
        Err(e) => Err(err(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            e.to_string(),
        )),
    }
}

/// The OpenAPI 3 document of this API (this one included).
#[utoipa::path(
    get, path = "/v1/openapi.json", tag = "open",
    responses((status = 200, description = "The OpenAPI document", body = Object)),
)]
pub(crate) async fn openapi_json() -> Json<utoipa::openapi::OpenApi> {
    Json(crate::openapi::document())
}

pub(crate) fn issuer_keys(s: &Server) -> Vec<IssuerKey> {
    s.issuer_public_keys()
        .into_iter()
        .map(|k| IssuerKey {
            kid: k.kid().clone(),
            pem: k.to_pem(),
        })
        .collect()
}

/// A JSON Web Key Set (RFC 7517), as `/.well-known/jwks.json` serves it.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Jwks {
    /// The keys: the current one first, then the retired ones.
    keys: Vec<Jwk>,
}

/// One issuer public key as a JWK.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Jwk {
    /// Always `EC`.
    kty: String,
    /// Always `P-256`.
    crv: String,
    /// The point's x coordinate, base64url.
    x: String,
    /// The point's y coordinate, base64url.
    y: String,
    /// The key id JWT tickets name in their header.
    kid: String,
    /// Always `ES256`.
    alg: String,
    /// Always `sig`.
    #[serde(rename = "use")]
    use_: String,
}

/// The issuer public keys as a JSON Web Key Set, for JOSE libraries.
///
/// The key that signs new tickets first, then the retired keys whose tickets still circulate
/// (a key rotation keeps them listed). No credential needed.
#[utoipa::path(
    get, path = "/.well-known/jwks.json", tag = "open",
    responses((status = 200, description = "The issuer keys as a JWK Set", body = Jwks)),
)]
pub(crate) async fn jwks(State(s): State<Server>) -> Json<Jwks> {
    let member = |jwk: &serde_json::Value, name: &str| {
        jwk.get(name)
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_owned()
    };
    let keys = s
        .issuer_public_keys()
        .iter()
        .map(|k| {
            let jwk = k.to_jwk();
            Jwk {
                kty: member(&jwk, "kty"),
                crv: member(&jwk, "crv"),
                x: member(&jwk, "x"),
                y: member(&jwk, "y"),
                kid: member(&jwk, "kid"),
                alg: member(&jwk, "alg"),
                use_: member(&jwk, "use"),
            }
        })
        .collect();
    Json(Jwks { keys })
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
