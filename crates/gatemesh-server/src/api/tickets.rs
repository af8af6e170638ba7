//! Tickets, as the organizer handles them: issuing (signed with the server's key), one
//! ticket's detail, voids, transfers with their chain, and reverts.

use axum::{
    Json,
    extract::{Path, Query, State},
    http::StatusCode,
    response::{IntoResponse, Response},
};
use gatemesh_ticket::{Claims, EventId, Format, Product, Seat, TicketId};
use gatemesh_wire::{Admission, ServerResolution, TicketStatus};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::{
    ApiError, Body, EID, ErrorBody, TID, bad, blocking, err, event_id, known_event, ticket_id,
};
use crate::{
    Server,
    api::MAX_ISSUE,
    openapi::FormatName,
    store::{StoreError, Ticket, with_fresh_ids},
};

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
    /// The tickets' product: the organizer's code (`VIP`, JWT only) or its number 1-255 in
    /// the event's product table (what GM1 carries). Without it, the event's default product.
    #[serde(default)]
    product: Option<String>,
    /// Who holds them (at most 200 printable bytes): a gate finds the guest by it, when
    /// the event lets gates find guests.
    #[serde(default)]
    holder: Option<String>,
    /// The order they were bought in (the organizer's reference, at most 64 printable
    /// bytes), to find them by.
    #[serde(default)]
    order: Option<String>,
}

/// Whether `text` is a name or reference a gate can show: at most `most` bytes, no control
/// characters, not blank.
fn printable(text: Option<&str>, most: usize) -> bool {
    text.is_none_or(|t| !t.trim().is_empty() && t.len() <= most && !t.chars().any(char::is_control))
}

fn default_format() -> Format {
    Format::Gm1
}

/// A new active ticket with a fresh id, signed with the server's key.
#[expect(
    clippy::too_many_arguments,
    reason = "each is one claim or column of the ticket"
)]
fn signed_ticket(
    key: &gatemesh_ticket::IssuerKey,
    eid: &EventId,
    seat: Option<Seat>,
    product: Option<Product>,
    format: Format,
    iat: i64,
    transferred_from: Option<TicketId>,
    (holder, order_ref): (Option<String>, Option<String>),
) -> Result<Ticket, StoreError> {
    let claims = Claims {
        tid: TicketId::generate(),
        eid: eid.clone(),
        seat,
        iat: Some(iat),
        nbf: None,
        exp: None,
        product,
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
        status: TicketStatus::Active,
        transferred_to: None,
        transferred_from,
        holder,
        order_ref,
        product: claims.product,
        void_reason: None,
        reverted: Vec::new(),
        flagged: false,
        resolution: None,
        status_record: None,
        seq: 0,
    })
}

pub(crate) fn no_ticket(tid: &TicketId) -> ApiError {
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
    status: TicketStatus,
    /// The ticket that replaced it, once transferred.
    #[schema(value_type = Option<String>)]
    transferred_to: Option<TicketId>,
    /// The ticket it replaced.
    #[schema(value_type = Option<String>)]
    transferred_from: Option<TicketId>,
    holder: Option<String>,
    /// The order it was bought in.
    #[serde(skip_serializing_if = "Option::is_none")]
    order: Option<String>,
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
            order: t.order_ref.clone(),
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
    let product = req
        .product
        .as_deref()
        .map(Product::parse)
        .transpose()
        .map_err(|e| bad(e.to_string()))?;
    if let (Format::Gm1, Some(Product::Code(code))) = (req.format, &product) {
        return Err(bad(format!(
            "a GM1 ticket carries its product's number (1-255), not the code {code}; \
             give the number, or format jwt"
        )));
    }
    if !printable(req.holder.as_deref(), 200) || !printable(req.order.as_deref(), 64) {
        return Err(bad(
            "holder is at most 200 printable bytes, order at most 64 (neither blank)",
        ));
    }
    known_event(&s, &eid).await?;
    let key = s.key.clone();
    let format = req.format;
    let who = (req.holder.clone(), req.order.clone());
    let iat = time::OffsetDateTime::now_utc().unix_timestamp();
    // Fresh random ids; the primary key refuses a repeat, and the batch is drawn again.
    let tickets = blocking(&s, move |st| {
        with_fresh_ids("unused ticket ids", || {
            let tickets: Vec<Ticket> = seats
                .iter()
                .map(|seat| {
                    let product = product.clone();
                    signed_ticket(
                        &key,
                        &eid,
                        seat.clone(),
                        product,
                        format,
                        iat,
                        None,
                        who.clone(),
                    )
                })
                .collect::<Result<_, StoreError>>()?;
            st.insert_tickets(&tickets).map(|()| tickets)
        })
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
    admissions: Vec<Admission>,
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
pub(crate) async fn get(
    State(s): State<Server>,
    Path((eid, tid)): Path<(String, String)>,
) -> Result<Json<TicketDetail>, ApiError> {
    let (eid, tid) = (event_id(&eid)?, ticket_id(&tid)?);
    let t = tid.clone();
    let (signers, data) = (s.signers.clone(), s.data.clone());
    let (ticket, admissions) = blocking(&s, move |st| {
        let Some(ticket) = st.ticket(&eid, &t)? else {
            return Ok(None);
        };
        let mut admissions = st.admissions(&eid, &t)?;
        crate::signer::relayed(&signers, &data, &eid, &t, &mut admissions)?;
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

/// Tickets a page of [`list`] holds at most, and without `limit`.
const MOST_ON_A_PAGE: usize = 1_000;
const DEFAULT_PAGE: usize = 500;

#[derive(Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct ListQuery {
    /// The `next` of the page before: this page starts after that ticket (at the first
    /// without it).
    #[serde(default)]
    after: Option<String>,
    /// How many tickets at most, 1 to 1,000 (500 without it).
    #[serde(default)]
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<usize>,
}

/// One page of an event's tickets.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct TicketPage {
    /// In ticket id order.
    tickets: Vec<TicketDetail>,
    /// What to give as `after` for the next page; absent on the last one.
    next: Option<String>,
}

/// An event's tickets, a page at a time, each with its admissions and its flag.
///
/// For reconciling or exporting the whole event: each ticket as `GET …/tickets/{tid}` gives
/// it, except that admissions come without their ledger records (that read has them). Pages
/// are in ticket id order; each is read in one snapshot, and a ticket issued meanwhile
/// appears on a later page if its id sorts after the page it would be on.
#[utoipa::path(
    get, path = "/v1/events/{eid}/tickets", tag = "organizer", operation_id = "list_tickets",
    params(("eid" = String, Path, description = EID), ListQuery),
    responses(
        (status = 200, description = "One page of tickets", body = TicketPage),
        (status = 400, description = "Bad id or limit", body = ErrorBody),
        (status = 401, description = "No admin token", body = ErrorBody),
        (status = 404, description = "No such event", body = ErrorBody),
    ),
    security(("admin" = [])),
)]
pub(crate) async fn list(
    State(s): State<Server>,
    Path(eid): Path<String>,
    query: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<TicketPage>, ApiError> {
    let Query(q) = query.map_err(|e| bad(e.body_text()))?;
    let eid = event_id(&eid)?;
    let after = q.after.as_deref().map(ticket_id).transpose()?;
    let limit = q.limit.unwrap_or(DEFAULT_PAGE);
    if !(1..=MOST_ON_A_PAGE).contains(&limit) {
        return Err(bad(format!("limit must be 1 to {MOST_ON_A_PAGE}")));
    }
    known_event(&s, &eid).await?;
    let page = blocking(&s, move |st| st.ticket_page(&eid, after.as_ref(), limit)).await?;
    let next = (page.len() == limit)
        .then(|| page.last().map(|(t, _)| t.tid.to_string()))
        .flatten();
    let tickets = page
        .into_iter()
        .map(|(ticket, admissions)| TicketDetail {
            ticket: TicketView::from(&ticket),
            admissions,
            flagged: ticket.flagged,
            resolution: ticket.resolution,
        })
        .collect();
    Ok(Json(TicketPage { tickets, next }))
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
    let (signers, data) = (s.signers.clone(), s.data.clone());
    let ticket = blocking(&s, move |st| {
        let standing = gatemesh_wire::Standing::Void {
            reason: req.reason.clone(),
        };
        let record = crate::signer::standing_record(&signers, &data, &eid, &tid, standing)?;
        st.void(&eid, &tid, &req.actor, &req.reason, &record)
    })
    .await?;
    Ok(Json(TicketView::from(&ticket)))
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
    let (signers, data) = (s.signers.clone(), s.data.clone());
    let iat = time::OffsetDateTime::now_utc().unix_timestamp();
    // The new ticket is of the old one's product, as its signed code says (the store keeps
    // the code, not the product).
    let product = gatemesh_ticket::Keyring::from_keys(s.issuer_public_keys())
        .ok()
        .and_then(|ring| {
            gatemesh_ticket::Verifier::new(ring)
                .for_event(eid.clone())
                .verify(&current.code, iat)
                .ok()
        })
        .and_then(|v| v.claims.product);
    let new = blocking(&s, move |st| {
        with_fresh_ids("an unused ticket id", || {
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
                product.clone(),
                current.format,
                iat,
                Some(old.clone()),
                // The new holder's, in the same order.
                (req.holder.clone(), current.order_ref.clone()),
            )?;
            let standing = gatemesh_wire::Standing::Transferred {
                to: new.tid.clone(),
            };
            let record = crate::signer::standing_record(&signers, &data, &eid, &old, standing)?;
            st.transfer(&old, &new, &req.actor, &record).map(|()| new)
        })
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
    status: TicketStatus,
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

/// What a revert of `tid` covers: every admission of the ticket reverted so far, then the
/// ones that count now, so the latest signed revert is all a gate that joins later needs.
pub(crate) fn revert_covers(
    st: &dyn crate::store::Storage,
    eid: &EventId,
    tid: &TicketId,
) -> Result<Vec<gatemesh_wire::RedemptionId>, crate::store::StoreError> {
    let ticket = st
        .ticket(eid, tid)?
        .ok_or_else(|| crate::store::StoreError::NotFound(format!("ticket {tid}")))?;
    let mut covers = ticket.reverted;
    for a in st.admissions(eid, tid)? {
        if !covers.contains(&a.redemption_id) {
            covers.push(a.redemption_id);
        }
    }
    Ok(covers)
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
/// For a mistaken scan: the ticket admits again. Audited. Gates learn it as a resolution the
/// server's identity signed, covering every admission of the ticket reverted so far.
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
        (status = 409, description = "No admission to revert, or the ticket was admitted \
            again while the revert was made (try again)", body = ErrorBody),
    ),
    security(("admin" = [])),
)]
pub(crate) async fn revert(
    State(s): State<Server>,
    Path((eid, tid)): Path<(String, String)>,
    Body(req): Body<RevertRequest>,
) -> Result<Json<Reverted>, ApiError> {
    let (eid, tid) = (event_id(&eid)?, ticket_id(&tid)?);
    let (Some(actor), Some(reason)) = (
        gatemesh_wire::Label::parse(&req.actor),
        gatemesh_wire::Note::parse(&req.reason).filter(|n| !n.as_str().trim().is_empty()),
    ) else {
        return Err(bad(
            "a revert needs an actor (1-64 bytes) and a reason (1-500)",
        ));
    };
    let (signers, data) = (s.signers.clone(), s.data.clone());
    let n = blocking(&s, move |st| {
        let covers = revert_covers(st, &eid, &tid)?;
        // What gates write: the revert as the server's identity signed it.
        let revert = (gatemesh_wire::Action::Revert, actor, reason);
        let resolution =
            crate::signer::signed_decision(&signers, &data, &eid, &tid, revert, covers)?;
        st.revert(&eid, &tid, &resolution)
    })
    .await?;
    Ok(Json(Reverted { reverted: n }))
}
