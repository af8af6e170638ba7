//! Redemptions at the server (`POST /v1/events/{eid}/redemptions`): one scanner asking
//! before it lets someone in, or a gate's journal of admissions it already made.

use gatemesh_ticket::TicketId;
use serde::{Deserialize, Deserializer, Serialize, de::Error as _};
use serde_json::Value;

use crate::{Admission, Label, Lenient, Reason, RedemptionId, Timestamp, Verdict, WireError};

/// Most redemptions in one journal upload.
pub const MAX_JOURNAL: usize = 10_000;
/// The largest ledger record a journal item may carry, in bytes of JSON.
pub const MAX_RECORD_BYTES: usize = 4096;

/// A gate's claim that it admitted (or tries to admit) a ticket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct RedemptionRequest {
    /// The gate's id for this redemption; a retry repeats it.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub redemption_id: RedemptionId,
    /// The ticket.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub tid: TicketId,
    /// The gate's name (1-64 bytes).
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub gate: Label,
    /// The scanner (1-64 bytes).
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub scanner: Label,
    /// When the gate scanned, RFC 3339.
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub at: Timestamp,
    /// The gate ledger's own record of this redemption, kept verbatim so other gates can be
    /// told about it exactly as the first gate wrote it: an object with this `id` and `tid`,
    /// at most 4 KiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub record: Option<Value>,
}

impl RedemptionRequest {
    /// What the fields' types cannot say: the record is small and about this very
    /// redemption. The server refuses a request that fails this, so a gate checks before it
    /// sends (and skips what would fail, instead of sending it forever).
    pub fn check(&self) -> Result<(), WireError> {
        let Some(record) = &self.record else {
            return Ok(());
        };
        let fits = serde_json::to_vec(record).is_ok_and(|b| b.len() <= MAX_RECORD_BYTES);
        let names_it = record.get("id").and_then(Value::as_str)
            == Some(self.redemption_id.as_str())
            && record.get("tid").and_then(Value::as_str) == Some(self.tid.as_str());
        if fits && names_it {
            Ok(())
        } else {
            Err(WireError::Inconsistent(
                "record is the gate ledger's redemption with this redemption_id and tid (at most \
                 4 KiB)"
                    .into(),
            ))
        }
    }
}

/// A gate's journal: redemptions it already admitted offline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Journal {
    /// At most 10,000.
    pub redemptions: Vec<RedemptionRequest>,
}

/// One redemption, or a gate's journal of them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(untagged)]
pub enum RedeemBody {
    /// A gate's journal.
    Journal(Journal),
    /// A scanner asking before it lets someone in.
    One(RedemptionRequest),
}

// Chosen by the `redemptions` key rather than by trying both shapes, so a bad field gets
// its own error instead of "matches no variant".
impl<'de> Deserialize<'de> for RedeemBody {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        if value.get("redemptions").is_some() {
            serde_json::from_value(value).map(Self::Journal)
        } else {
            serde_json::from_value(value).map(Self::One)
        }
        .map_err(D::Error::custom)
    }
}

/// The server's answer; stored with the request, so a retry gets exactly this back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RedemptionAnswer {
    /// Green, yellow or red.
    pub verdict: Verdict,
    /// Why.
    pub reason: Reason,
    /// For a `duplicate`: the admission that counts.
    #[serde(default)]
    pub first: Option<Admission>,
}

/// The answers to a journal, item by item, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct JournalAnswers {
    /// One per journal item.
    pub answers: Vec<RedemptionAnswer>,
}

#[derive(Deserialize)]
struct LenientAnswers {
    answers: Vec<Lenient<RedemptionAnswer>>,
}

impl JournalAnswers {
    /// Reads the answers one by one, keeping their places: an answer this side cannot read
    /// (a reason it does not know) is `Skipped` where it stands.
    pub fn read_lenient(json: &[u8]) -> Result<Vec<Lenient<RedemptionAnswer>>, serde_json::Error> {
        serde_json::from_slice::<LenientAnswers>(json).map(|a| a.answers)
    }
}

/// A gate's question before it uploads what its peers admitted: which of these
/// redemptions the server holds already (their writers uploaded them, or another gate did).
/// A gate uploads its own admissions at once and its peers' only where the server has none:
/// otherwise every admission of a 32-gate mesh came to the server 32 times.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct HeldQuery {
    /// At most 10,000.
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<String>))]
    pub redemption_ids: Vec<RedemptionId>,
}

/// The answers to a [`HeldQuery`], one per id in order: the answer the server gave that
/// redemption of the event (the one a journal upload of it gets back), or `null` where it
/// holds none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct HeldAnswers {
    /// One per id asked.
    pub answers: Vec<Option<RedemptionAnswer>>,
}

#[derive(Deserialize)]
struct LenientHeld {
    answers: Vec<Option<Lenient<RedemptionAnswer>>>,
}

impl HeldAnswers {
    /// Reads the answers one by one, keeping their places, as
    /// [`JournalAnswers::read_lenient`] does.
    pub fn read_lenient(
        json: &[u8],
    ) -> Result<Vec<Option<Lenient<RedemptionAnswer>>>, serde_json::Error> {
        serde_json::from_slice::<LenientHeld>(json).map(|a| a.answers)
    }
}

/// The answer to a single redemption, or the answers to a journal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(untagged)]
pub enum Redeemed {
    /// Answers to a journal.
    Journal(JournalAnswers),
    /// The answer to one.
    One(RedemptionAnswer),
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn item() -> Value {
        json!({
            "redemption_id": "r1", "tid": "T1", "gate": "North 1", "scanner": "s1",
            "at": "2026-07-01T18:00:00Z",
        })
    }

    #[test]
    fn a_bad_field_gets_its_own_error() {
        let mut one = item();
        one["redemption_id"] = json!("has spaces");
        let e = serde_json::from_value::<RedeemBody>(one)
            .unwrap_err()
            .to_string();
        assert!(e.contains("redemption id"), "{e}");
        let journal = json!({ "redemptions": [item(), { "tid": "T2" }] });
        let e = serde_json::from_value::<RedeemBody>(journal)
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing field"), "{e}");
        assert!(matches!(
            serde_json::from_value::<RedeemBody>(json!({ "redemptions": [item()] })).unwrap(),
            RedeemBody::Journal(j) if j.redemptions.len() == 1
        ));
    }

    #[test]
    fn the_record_must_be_about_this_redemption() {
        let mut r: RedemptionRequest = serde_json::from_value(item()).unwrap();
        assert!(r.check().is_ok());
        r.record = Some(json!({ "id": "r1", "tid": "T1" }));
        assert!(r.check().is_ok());
        r.record = Some(json!({ "id": "r2", "tid": "T1" }));
        assert!(r.check().is_err());
        r.record = Some(json!({ "id": "r1", "tid": "T1", "pad": "x".repeat(MAX_RECORD_BYTES) }));
        assert!(r.check().is_err());
    }

    #[test]
    fn answers_keep_their_places() {
        let doc = json!({ "answers": [
            { "verdict": "admit", "reason": "valid" },
            { "verdict": "admit", "reason": "a_reason_from_the_future" },
            { "verdict": "duplicate", "reason": "already_admitted", "first": null },
        ]});
        let answers = JournalAnswers::read_lenient(doc.to_string().as_bytes()).unwrap();
        assert!(matches!(answers[0], Lenient::Read(_)));
        assert!(matches!(answers[1], Lenient::Skipped(_)));
        assert!(matches!(answers[2], Lenient::Read(_)));
    }

    #[test]
    fn held_answers_keep_their_places_with_none_for_what_is_not_held() {
        let doc = json!({ "answers": [
            null,
            { "verdict": "admit", "reason": "a_reason_from_the_future" },
            { "verdict": "admit", "reason": "valid" },
        ]});
        let answers = HeldAnswers::read_lenient(doc.to_string().as_bytes()).unwrap();
        assert_eq!(answers.len(), 3);
        assert!(answers[0].is_none());
        assert!(matches!(answers[1], Some(Lenient::Skipped(_))));
        assert!(matches!(answers[2], Some(Lenient::Read(_))));
        assert!(HeldAnswers::read_lenient(br#"{"answers": 1}"#).is_err());
        // A question says only ids, and nothing else.
        let q: HeldQuery = serde_json::from_value(json!({ "redemption_ids": ["r1"] })).unwrap();
        assert_eq!(q.redemption_ids.len(), 1);
        assert!(
            serde_json::from_value::<HeldQuery>(json!({ "redemption_ids": [], "x": 1 })).is_err()
        );
    }
}
