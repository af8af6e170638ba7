//! Flags: tickets gates' journals hold more than one admission of, and staff's decision on
//! one (accept, deny or revert), which gates learn through the change stream.

use axum::{
    Json,
    extract::{Path, State},
};
use gatemesh_ticket::TicketId;
use gatemesh_wire::{Admission, Label, ResolveRequest, TicketStatus};
use serde::Serialize;
use utoipa::ToSchema;

use super::{
    ApiError, Body, EID, ErrorBody, TID, auth::Caller, bad, blocking, event_id, known_event,
    ticket_id, tickets::TicketView,
};
use crate::{Server, store::StoreError};

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
    status: TicketStatus,
    admissions: Vec<Admission>,
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
pub(crate) async fn list(
    State(s): State<Server>,
    Path(eid): Path<String>,
) -> Result<Json<Flags>, ApiError> {
    let eid = event_id(&eid)?;
    known_event(&s, &eid).await?;
    let (signers, data) = (s.signers.clone(), s.data.clone());
    let flags = blocking(&s, move |st| {
        st.flags(&eid)?
            .into_iter()
            .map(|t| {
                let mut a = st.admissions(&eid, &t.tid)?;
                crate::signer::relayed(&signers, &data, &eid, &t.tid, &mut a)?;
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

/// Records staff's decision on a flag.
///
/// `accept` (same person), `deny` (the ticket is refused from now on) or `revert` (its
/// admissions are undone). Audited; gates learn it. A gate or observer credential of the
/// event acts on flagged tickets only (reverting a ticket nobody flagged is the organizer's,
/// with the admin token), and the decision is recorded as `DEVICE / STAFF`: the device's
/// name from its credential, then `staff`, the person signed in there (a name without `/`).
#[utoipa::path(
    post, path = "/v1/events/{eid}/flags/{tid}/resolve", tag = "gate",
    operation_id = "resolve_flag",
    params(("eid" = String, Path, description = EID), ("tid" = String, Path, description = TID)),
    request_body = ResolveRequest,
    responses(
        (status = 200, description = "The ticket after the decision", body = TicketView),
        (status = 400, description = "Bad input", body = ErrorBody),
        (status = 401, description = "No credential", body = ErrorBody),
        (status = 403, description = "A device of another event, or a device reverting a \
            ticket nobody flagged", body = ErrorBody),
        (status = 404, description = "No such ticket", body = ErrorBody),
        (status = 409, description = "Nothing to resolve", body = ErrorBody),
    ),
    security(("admin" = []), ("device" = [])),
)]
pub(crate) async fn resolve(
    State(s): State<Server>,
    caller: axum::Extension<Caller>,
    Path((eid, tid)): Path<(String, String)>,
    Body(req): Body<ResolveRequest>,
) -> Result<Json<TicketView>, ApiError> {
    let (eid, tid) = (event_id(&eid)?, ticket_id(&tid)?);
    let (staff, by_device) = match &caller.0 {
        // The organizer's token speaks for whoever it names.
        Caller::Admin => (req.staff, false),
        Caller::Device(d) => {
            let staff = Label::decided_at(&d.name, req.staff.as_str()).ok_or_else(|| {
                bad(format!(
                    "staff is the name of the person signed in at {} (no `/`; with the \
                     device's name at most {} bytes)",
                    d.name,
                    Label::MAX
                ))
            })?;
            (staff, true)
        }
    };
    let (signers, data) = (s.signers.clone(), s.data.clone());
    let resolved = blocking(&s, move |st| {
        let covers = if req.action == gatemesh_wire::Action::Revert {
            super::tickets::revert_covers(st, &eid, &tid)?
        } else {
            st.admissions(&eid, &tid)?
                .into_iter()
                .map(|a| a.redemption_id)
                .collect()
        };
        // The decision as gates write it: a record the server's identity signs.
        let decided = (req.action, staff, req.note);
        let resolution =
            crate::signer::signed_decision(&signers, &data, &eid, &tid, decided, covers)?;
        // A deny voids an active ticket: the standing gates write, signed now.
        let void_record = match resolution.action {
            gatemesh_wire::Action::Deny => Some(crate::signer::standing_record(
                &signers,
                &data,
                &eid,
                &tid,
                gatemesh_wire::Standing::Void {
                    reason: crate::store::deny_reason(&resolution),
                },
            )?),
            _ => None,
        };
        st.resolve(&eid, &tid, &resolution, by_device, void_record.as_deref())
    })
    .await?;
    Ok(Json(TicketView::from(&resolved)))
}
