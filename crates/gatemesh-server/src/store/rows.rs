//! What the server's types look like in a database row, the same in both: a row is read
//! through [`Columns`] (which SQLite's and PostgreSQL's rows both implement), and each type
//! has one reader here. Each reader names the columns it expects, in order; the backends'
//! SQL selects them so.

use gatemesh_ticket::TicketId;
use gatemesh_wire::RedemptionId;
use serde::Serialize;

use super::{
    Admission, AuditLine, Counts, Device, Event, GateView, StoreError, Ticket, TicketStatus,
};

/// A result row, read by column index. A value of the wrong type is the database's error; a
/// value of the right type that breaks its own rule is `Corrupt` (see [`parse`]).
pub(crate) trait Columns {
    fn text(&self, i: usize) -> Result<String, StoreError>;
    fn text_opt(&self, i: usize) -> Result<Option<String>, StoreError>;
    fn int(&self, i: usize) -> Result<i64, StoreError>;
    fn int_opt(&self, i: usize) -> Result<Option<i64>, StoreError>;
    fn flag(&self, i: usize) -> Result<bool, StoreError>;
}

impl Columns for rusqlite::Row<'_> {
    fn text(&self, i: usize) -> Result<String, StoreError> {
        Ok(self.get(i)?)
    }
    fn text_opt(&self, i: usize) -> Result<Option<String>, StoreError> {
        Ok(self.get(i)?)
    }
    fn int(&self, i: usize) -> Result<i64, StoreError> {
        Ok(self.get(i)?)
    }
    fn int_opt(&self, i: usize) -> Result<Option<i64>, StoreError> {
        Ok(self.get(i)?)
    }
    fn flag(&self, i: usize) -> Result<bool, StoreError> {
        Ok(self.get(i)?)
    }
}

impl Columns for postgres::Row {
    fn text(&self, i: usize) -> Result<String, StoreError> {
        Ok(self.try_get(i)?)
    }
    fn text_opt(&self, i: usize) -> Result<Option<String>, StoreError> {
        Ok(self.try_get(i)?)
    }
    fn int(&self, i: usize) -> Result<i64, StoreError> {
        Ok(self.try_get(i)?)
    }
    fn int_opt(&self, i: usize) -> Result<Option<i64>, StoreError> {
        // Every integer column is a BIGINT but an event's capacity, an INTEGER.
        match self.try_get(i) {
            Ok(v) => Ok(v),
            Err(_) => Ok(self.try_get::<_, Option<i32>>(i)?.map(i64::from)),
        }
    }
    fn flag(&self, i: usize) -> Result<bool, StoreError> {
        Ok(self.try_get(i)?)
    }
}

/// A value read back from the database, parsed by its own rule; a value that breaks it is
/// `Corrupt` (the API refuses such values on the way in).
pub(crate) fn parse<T: std::str::FromStr>(text: &str, what: &str) -> Result<T, StoreError> {
    text.parse()
        .map_err(|_| StoreError::Corrupt(format!("{what} {text:?}")))
}

pub(crate) fn to_json<T: Serialize>(v: &T) -> Result<String, StoreError> {
    serde_json::to_string(v).map_err(|e| StoreError::Corrupt(e.to_string()))
}

pub(crate) fn from_json<T: serde::de::DeserializeOwned>(s: &str) -> Result<T, StoreError> {
    serde_json::from_str(s).map_err(|e| StoreError::Corrupt(e.to_string()))
}

/// Reverted redemption ids are kept space-separated in one column.
pub(crate) fn join_ids(ids: &[RedemptionId]) -> String {
    ids.iter()
        .map(RedemptionId::as_str)
        .collect::<Vec<_>>()
        .join(" ")
}

pub(crate) fn split_ids(s: &str) -> Result<Vec<RedemptionId>, StoreError> {
    s.split_ascii_whitespace()
        .map(|id| parse(id, "redemption id"))
        .collect()
}

/// The columns [`ticket`] reads, in its order.
pub(crate) const TICKET_COLUMNS: &str = "tid, eid, seat, format, code, status, transferred_to, \
     transferred_from, holder, void_reason, reverted, flagged, resolution, seq, status_record, \
     order_ref, product";

/// A ticket from [`TICKET_COLUMNS`].
pub(crate) fn ticket(r: &impl Columns) -> Result<Ticket, StoreError> {
    // A link of a transfer chain that does not read as an id is left out, not an error.
    let link = |i| Ok::<_, StoreError>(r.text_opt(i)?.and_then(|t| TicketId::new(t).ok()));
    Ok(Ticket {
        tid: parse(&r.text(0)?, "ticket id")?,
        eid: parse(&r.text(1)?, "event id")?,
        seat: r.text_opt(2)?,
        format: parse(&r.text(3)?, "format")?,
        code: r.text(4)?,
        status: parse(&r.text(5)?, "ticket status")?,
        transferred_to: link(6)?,
        transferred_from: link(7)?,
        holder: r.text_opt(8)?,
        void_reason: r.text_opt(9)?,
        reverted: split_ids(&r.text(10)?)?,
        flagged: r.flag(11)?,
        resolution: r.text_opt(12)?.as_deref().map(from_json).transpose()?,
        seq: r.int(13)?,
        status_record: r.text_opt(14)?,
        order_ref: r.text_opt(15)?,
        product: r.text_opt(16)?.map(|p| parse(&p, "product")).transpose()?,
    })
}

/// A product as its column keeps it: the code, or the number's digits (what
/// [`gatemesh_ticket::Product::parse`] reads back).
pub(crate) fn product_column(p: Option<&gatemesh_ticket::Product>) -> Option<String> {
    p.map(|p| match p {
        gatemesh_ticket::Product::Code(c) => c.as_str().to_owned(),
        gatemesh_ticket::Product::Number(n) => n.to_string(),
    })
}

/// A ticket's status from its one column.
pub(crate) fn status(r: &impl Columns) -> Result<TicketStatus, StoreError> {
    parse(&r.text(0)?, "ticket status")
}

/// The columns [`event`] reads, in its order.
pub(crate) const EVENT_COLUMNS: &str = "id, name, capacity, starts_at, ends_at, guest_search";

/// An event from [`EVENT_COLUMNS`].
pub(crate) fn event(r: &impl Columns) -> Result<Event, StoreError> {
    let capacity = r.int_opt(2)?;
    Ok(Event {
        id: parse(&r.text(0)?, "event id")?,
        name: r.text(1)?,
        capacity: capacity
            .map(u32::try_from)
            .transpose()
            .map_err(|_| StoreError::Corrupt(format!("capacity {capacity:?}")))?,
        starts_at: r.text_opt(3)?,
        ends_at: r.text_opt(4)?,
        guest_search: r.flag(5)?,
    })
}

/// An admission from `redemption_id, gate, scanner, at, record`.
pub(crate) fn admission(r: &impl Columns) -> Result<Admission, StoreError> {
    Ok(Admission {
        redemption_id: parse(&r.text(0)?, "redemption id")?,
        gate: parse(&r.text(1)?, "gate name")?,
        scanner: parse(&r.text(2)?, "scanner name")?,
        at: parse(&r.text(3)?, "time")?,
        record: r.text_opt(4)?.as_deref().map(from_json).transpose()?,
    })
}

/// A page of tickets (in id order), each given its admissions from `admissions` (ticket id and
/// admission, in the order they count).
pub(crate) fn with_admissions(
    tickets: Vec<Ticket>,
    admissions: Vec<(String, Admission)>,
) -> Vec<(Ticket, Vec<Admission>)> {
    let mut of: std::collections::HashMap<String, Vec<Admission>> =
        std::collections::HashMap::new();
    for (tid, a) in admissions {
        of.entry(tid).or_default().push(a);
    }
    tickets
        .into_iter()
        .map(|t| {
            let a = of.remove(t.tid.as_str()).unwrap_or_default();
            (t, a)
        })
        .collect()
}

/// A device from `eid, name, role`.
pub(crate) fn device(r: &impl Columns) -> Result<Device, StoreError> {
    Ok(Device {
        eid: parse(&r.text(0)?, "event id")?,
        name: parse(&r.text(1)?, "device name")?,
        role: parse(&r.text(2)?, "role")?,
    })
}

/// A device as a manager sees it, from
/// `name, role, token_hash IS NOT NULL, last_seen_ms, heartbeat`.
pub(crate) fn gate(r: &impl Columns) -> Result<GateView, StoreError> {
    Ok(GateView {
        name: parse(&r.text(0)?, "device name")?,
        role: parse(&r.text(1)?, "role")?,
        paired: r.flag(2)?,
        last_seen_ms: r.int_opt(3)?,
        heartbeat: r.text_opt(4)?.as_deref().map(from_json).transpose()?,
    })
}

/// An audit line from `tid, actor, action, reason, at`.
pub(crate) fn audit_line(r: &impl Columns) -> Result<AuditLine, StoreError> {
    Ok(AuditLine {
        tid: r.text_opt(0)?,
        actor: r.text(1)?,
        action: r.text(2)?,
        reason: r.text(3)?,
        at: r.text(4)?,
    })
}

/// An event's counts from a row of its tickets (`all, void, transferred, flagged`) and one
/// of its redemptions (answered `admit, duplicate, reject`, then tickets with an admit that
/// counts).
pub(crate) fn counts(tickets: &impl Columns, answers: &impl Columns) -> Result<Counts, StoreError> {
    Ok(Counts {
        tickets: tickets.int(0)?,
        void: tickets.int(1)?,
        transferred: tickets.int(2)?,
        flagged: tickets.int(3)?,
        answered_admit: answers.int(0)?,
        answered_duplicate: answers.int(1)?,
        answered_reject: answers.int(2)?,
        admitted: answers.int(3)?,
    })
}
