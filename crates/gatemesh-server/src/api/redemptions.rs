//! Redemptions: one scanner asking before it lets someone in (gathered with others into one
//! transaction), or a gate's journal of admissions it already made.

use axum::{
    Json,
    extract::{Path, State},
    http::StatusCode,
};
use gatemesh_wire::{
    HeldAnswers, HeldQuery, JournalAnswers, RedeemBody, Redeemed, RedemptionRequest, Role,
};

use super::{
    ApiError, Body, EID, ErrorBody, MAX_JOURNAL, auth::Caller, bad, blocking, err, event_id,
    known_event,
};
use crate::{
    Server,
    store::{Origin, StoreError},
};

/// What the body's types cannot say (the wire's own check, which gates run before they
/// send), and that a record is a gate ledger's redemption: other gates will write it into
/// their ledgers as it is.
fn check(r: &RedemptionRequest) -> Result<(), ApiError> {
    r.check().map_err(|e| bad(e.to_string()))?;
    if let Some(record) = &r.record
        && <gatemesh_ledger::Redemption as serde::Deserialize>::deserialize(record).is_err()
    {
        return Err(bad("record is not a gate ledger's redemption"));
    }
    Ok(())
}

/// Which of the event's redemptions the server holds, each with the answer it was given.
///
/// A gate asks before it uploads admissions its peers made: their writers upload their own,
/// so the gate uploads only those the server has none of (a peer whose uplink is down). A
/// held one's answer is the one a journal upload of it gets back, the first admission's
/// record with it. An id the server holds for another event is answered `null`, as one it
/// does not hold.
#[utoipa::path(
    post, path = "/v1/events/{eid}/redemptions/held", tag = "gate", operation_id = "held",
    params(("eid" = String, Path, description = EID)),
    request_body = HeldQuery,
    responses(
        (status = 200, description = "One answer per id, in order; null where none is held",
            body = HeldAnswers),
        (status = 400, description = "Bad input", body = ErrorBody),
        (status = 401, description = "No credential", body = ErrorBody),
        (status = 403, description = "A device of another event, or an observer",
            body = ErrorBody),
        (status = 404, description = "No such event", body = ErrorBody),
        (status = 413, description = "Over 1 MiB", body = ErrorBody),
    ),
    security(("admin" = []), ("device" = [])),
)]
pub(crate) async fn held(
    State(s): State<Server>,
    caller: axum::Extension<Caller>,
    Path(eid): Path<String>,
    Body(query): Body<HeldQuery>,
) -> Result<Json<HeldAnswers>, ApiError> {
    let eid = event_id(&eid)?;
    if matches!(&caller.0, Caller::Device(d) if d.role == Role::Observer) {
        return Err(err(
            StatusCode::FORBIDDEN,
            "observer",
            "an observer uploads no journal",
        ));
    }
    if query.redemption_ids.len() > MAX_JOURNAL {
        return Err(bad(format!(
            "a question holds at most {MAX_JOURNAL} redemption ids"
        )));
    }
    known_event(&s, &eid).await?;
    let (signers, data) = (s.signers.clone(), s.data.clone());
    let answers = blocking(&s, move |st| {
        let mut answers = Vec::with_capacity(query.redemption_ids.len());
        for held in st.answers(&eid, &query.redemption_ids)? {
            answers.push(match held {
                None => None,
                // As the journal's answer: the first admission with a record the gate can
                // check, the server's own when no gate's came with it.
                Some((tid, mut answer)) => {
                    if let Some(first) = &mut answer.first {
                        crate::signer::relayed(
                            &signers,
                            &data,
                            &eid,
                            &tid,
                            std::slice::from_mut(first),
                        )?;
                    }
                    Some(answer)
                }
            });
        }
        Ok(answers)
    })
    .await?;
    Ok(Json(HeldAnswers { answers }))
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
    if matches!(&caller.0, Caller::Device(d) if d.role == Role::Observer) {
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
            // Stored as asked: the server signs its ledger record when it relays the
            // admission to gates (`signer::relayed`), not on the request path.
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
                r.gate.as_str(),
                answer.verdict.as_str(),
                started.elapsed().as_secs_f64(),
            );
            Ok(Json(Redeemed::One(answer)))
        }
        RedeemBody::Journal(gatemesh_wire::Journal { redemptions }) => {
            if redemptions.len() > MAX_JOURNAL {
                return Err(bad(format!(
                    "a journal upload holds at most {MAX_JOURNAL} redemptions"
                )));
            }
            redemptions.iter().try_for_each(check)?;
            let (redemptions, writers) = if matches!(&caller.0, Caller::Device(_)) {
                // A device's journal: every record as its writer signed it (checked off the
                // async threads: a signature costs tens of microseconds).
                let (signers, data, e) = (s.signers.clone(), s.data.clone(), eid.clone());
                tokio::task::spawn_blocking(move || {
                    let trust = signers.trust(&data, &e).map_err(|e| {
                        tracing::error!("the event's mesh CA: {e:#}");
                        err(
                            StatusCode::INTERNAL_SERVER_ERROR,
                            "internal",
                            "the event's mesh CA cannot be read",
                        )
                    })?;
                    let now = gatemesh_wire::time::now_ms();
                    let writers =
                        crate::signer::check_device_records(&trust, &signers.2, &redemptions, now)
                            .map_err(bad)?;
                    Ok::<_, ApiError>((redemptions, Some(writers)))
                })
                .await
                .map_err(|_| {
                    err(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "internal",
                        "checking the journal failed",
                    )
                })??
            } else {
                // The organizer's journal (a tool's import): what carries no gate's record
                // is the server's word, signed when relayed, as an online admission is.
                (redemptions, None)
            };
            let metrics = s.metrics.clone();
            let (signers, data) = (s.signers.clone(), s.data.clone());
            let answers = blocking(&s, move |st| {
                let started = std::time::Instant::now();
                // What a revoked device wrote from its cut on (relayed by an honest gate's
                // journal) does not count here either, as it does not in any gate's
                // ledger: not stored, answered as set aside.
                let set_aside: Vec<bool> = match &writers {
                    Some(writers) => {
                        let cuts = crate::signer::revoked_cuts(st, &eid)?;
                        writers
                            .iter()
                            .map(|(node, wall_ms)| cuts.get(node).is_some_and(|cut| wall_ms >= cut))
                            .collect()
                    }
                    None => vec![false; redemptions.len()],
                };
                let kept: Vec<RedemptionRequest> = redemptions
                    .iter()
                    .zip(&set_aside)
                    .filter(|(_, aside)| !**aside)
                    .map(|(r, _)| r.clone())
                    .collect();
                if kept.len() < redemptions.len() {
                    tracing::warn!(
                        "event {eid}: {} journal records written by revoked devices after their \
                         revocation were set aside",
                        redemptions.len() - kept.len()
                    );
                }
                let mut stored = if kept.is_empty() {
                    Vec::new()
                } else {
                    st.redeem_journal(&eid, &kept)?
                }
                .into_iter();
                let mut answers = Vec::with_capacity(redemptions.len());
                for aside in &set_aside {
                    answers.push(if *aside {
                        gatemesh_wire::RedemptionAnswer {
                            verdict: gatemesh_wire::Verdict::Reject,
                            reason: gatemesh_wire::Reason::RevokedDevice,
                            first: None,
                        }
                    } else {
                        stored.next().ok_or_else(|| {
                            StoreError::Corrupt("the journal's answers came short".into())
                        })?
                    });
                }
                // A gate told of the first admission writes it into its ledger: with a
                // record it can check, the server's own when no gate's came with it.
                for (r, a) in redemptions.iter().zip(&mut answers) {
                    if let Some(first) = &mut a.first {
                        crate::signer::relayed(
                            &signers,
                            &data,
                            &eid,
                            &r.tid,
                            std::slice::from_mut(first),
                        )?;
                    }
                }
                // One commit for the batch: each item is counted with its share of the time.
                let each = started.elapsed().as_secs_f64() / answers.len().max(1) as f64;
                for (r, a) in redemptions.iter().zip(&answers) {
                    metrics.redemption(eid.as_str(), r.gate.as_str(), a.verdict.as_str(), each);
                }
                Ok(answers)
            })
            .await?;
            Ok(Json(Redeemed::Journal(JournalAnswers { answers })))
        }
    }
}
