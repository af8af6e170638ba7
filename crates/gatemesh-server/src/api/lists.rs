//! The event's check-in lists, released by the organizer: each release is checked as a gate
//! checks a lists file, signed by the server's identity as a ledger record, kept under the
//! next value of the change sequence with the next version, and sent to gates in the
//! manifest and the change stream. Gates write it into their ledgers, so a list changed
//! mid-event reaches gates with no uplink through their peers, and takes effect at each
//! gate's next scan.

use axum::{
    Json,
    body::Bytes,
    extract::{Path, State},
    http::StatusCode,
};
use gatemesh_ledger::ListsRecord;
use gatemesh_wire::{Label, Lists, ListsFile, ListsRelease, Timestamp};

use super::{ApiError, EID, ErrorBody, auth::Caller, bad, blocking, err, event_id, known_event};
use crate::{Server, store::StoreError};

/// Who a release made with the organizer's token is by.
const ORGANIZER: &str = "organizer";

/// Releases the event's check-in lists.
///
/// The body is a lists file, as `gatemesh gate --lists FILE` reads one. It is checked as a
/// gate checks one (a bad file is refused with what is wrong, and nothing is stored), made
/// the event's next version, and sent to every gate: from their next scan, gates check in
/// with it in place of the lists they had. The organizer's alone: a device's credential gets
/// 403.
#[utoipa::path(
    put, path = "/v1/events/{eid}/lists", tag = "organizer", operation_id = "release_lists",
    params(("eid" = String, Path, description = EID)),
    request_body(content = Object, description = "A lists file"),
    responses(
        (status = 200, description = "The release, as gates receive it", body = ListsRelease),
        (status = 400, description = "Not a lists file of this event", body = ErrorBody),
        (status = 401, description = "No credential", body = ErrorBody),
        (status = 403, description = "A device's credential", body = ErrorBody),
        (status = 404, description = "No such event", body = ErrorBody),
    ),
    security(("admin" = [])),
)]
pub(crate) async fn release(
    State(s): State<Server>,
    caller: axum::Extension<Caller>,
    Path(eid): Path<String>,
    body: Bytes,
) -> Result<Json<ListsRelease>, ApiError> {
    if !matches!(caller.0, Caller::Admin) {
        return Err(err(
            StatusCode::FORBIDDEN,
            "forbidden",
            "only the organizer releases check-in lists",
        ));
    }
    let eid = event_id(&eid)?;
    let lists = Lists::from_json(&body).map_err(|e| bad(e.to_string()))?;
    lists.check_event(&eid).map_err(|e| bad(e.to_string()))?;
    known_event(&s, &eid).await?;
    let file = lists.file().clone();
    let (signers, data) = (s.signers.clone(), s.data.clone());
    let (_, record) = blocking(&s, move |st| {
        st.release_lists(&eid, ORGANIZER, &mut |version| {
            crate::signer::lists_record(&signers, &data, &eid, version, &file, ORGANIZER)
        })
    })
    .await?;
    Ok(Json(release_of(&record)?))
}

/// The event's lists as last released.
#[utoipa::path(
    get, path = "/v1/events/{eid}/lists", tag = "gate", operation_id = "released_lists",
    params(("eid" = String, Path, description = EID)),
    responses(
        (status = 200, description = "The latest release", body = ListsRelease),
        (status = 401, description = "No credential", body = ErrorBody),
        (status = 403, description = "A device of another event", body = ErrorBody),
        (status = 404, description = "No such event, or no lists released", body = ErrorBody),
    ),
    security(("admin" = []), ("device" = [])),
)]
pub(crate) async fn latest(
    State(s): State<Server>,
    Path(eid): Path<String>,
) -> Result<Json<ListsRelease>, ApiError> {
    let eid = event_id(&eid)?;
    known_event(&s, &eid).await?;
    let e = eid.clone();
    let record = blocking(&s, move |st| st.lists(&e, 0, i64::MAX))
        .await?
        .ok_or_else(|| {
            err(
                StatusCode::NOT_FOUND,
                "not_found",
                format!("event {eid} has no check-in lists released"),
            )
        })?;
    Ok(Json(release_of(&record)?))
}

/// The release a stored record (JSON) is.
fn release_of(record: &str) -> Result<ListsRelease, ApiError> {
    let corrupt = |why: String| ApiError::from(StoreError::Corrupt(format!("the lists: {why}")));
    let mut value: serde_json::Value =
        serde_json::from_str(record).map_err(|e| corrupt(e.to_string()))?;
    if let Some(o) = value.as_object_mut() {
        o.remove("cert");
    }
    let r: ListsRecord = serde_json::from_value(value).map_err(|e| corrupt(e.to_string()))?;
    let lists: ListsFile = r.lists;
    Ok(ListsRelease {
        version: r.version,
        by: Label::parse(&r.by).ok_or_else(|| corrupt(format!("by {:?}", r.by)))?,
        at: Timestamp::from_ms(r.at_ms),
        lists,
    })
}
