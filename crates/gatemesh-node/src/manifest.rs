//! The event's ticket list, when the gate is given one: which tickets exist and which are
//! void or transferred. Two file forms: the `tickets.csv` that `gatemesh issue` writes, and
//! the JSON manifest the server serves (`gatemesh-wire`'s `Manifest`; `status` may be left
//! out for active tickets). A file is the operator's own: any entry it cannot take fails the
//! load with the ticket named, rather than being skipped. A file that names holders or
//! orders (`holder`, `order` in either form) is the organizer's leave to find guests by them
//! at this gate (see `guests.rs`).

use std::{
    collections::{BTreeMap, HashSet},
    path::Path,
};

use anyhow::{Context, Result, bail};
use gatemesh_ledger::Standing;
use gatemesh_ticket::TicketId;

/// Largest manifest file read: about 1.5 million tickets as JSON.
const MAX_BYTES: u64 = 256 * 1024 * 1024;

#[derive(Debug, Clone, Default)]
pub struct Manifest {
    pub listed: HashSet<TicketId>,
    /// Tickets whose standing is not plain active.
    pub standings: BTreeMap<TicketId, Standing>,
    /// The guests the file names (tickets with a holder or an order), to find by them.
    pub guests: Vec<crate::Guest>,
}

impl Manifest {
    pub fn load(path: &Path) -> Result<Self> {
        let len = std::fs::metadata(path)
            .with_context(|| format!("reading {}", path.display()))?
            .len();
        if len > MAX_BYTES {
            bail!(
                "{} is {len} bytes; manifests are read up to {MAX_BYTES}",
                path.display()
            );
        }
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        if text.trim_start().starts_with('{') {
            Self::from_json(&text)
                .with_context(|| format!("{} is not a valid JSON manifest", path.display()))
        } else {
            Self::from_csv(&text)
                .with_context(|| format!("{} is not a valid tickets.csv", path.display()))
        }
    }

    pub fn from_json(text: &str) -> Result<Self> {
        let parsed: gatemesh_wire::Manifest = serde_json::from_str(text)?;
        let mut m = Self::default();
        for t in parsed.tickets {
            match t.standing()? {
                Standing::Active => {}
                standing => {
                    m.standings.insert(t.tid.clone(), standing);
                }
            }
            if t.holder.is_some() || t.order.is_some() {
                m.guests.push(crate::Guest {
                    tid: t.tid.clone(),
                    seat: t.seat.clone(),
                    holder: t.holder.clone(),
                    order: t.order.clone(),
                    product: t.product.clone(),
                });
            }
            m.listed.insert(t.tid);
        }
        Ok(m)
    }

    pub fn from_csv(text: &str) -> Result<Self> {
        let mut reader = csv::Reader::from_reader(text.as_bytes());
        let headers = reader.headers()?.clone();
        let column = |name: &str| headers.iter().position(|h| h == name);
        let col = column("tid").context("no tid column")?;
        let (seat, product, holder, order) = (
            column("seat"),
            column("product"),
            column("holder"),
            column("order"),
        );
        let mut m = Self::default();
        for (i, record) in reader.records().enumerate() {
            let line = || format!("line {}", i + 2);
            let record = record.with_context(line)?;
            let tid = TicketId::new(record.get(col).unwrap_or_default()).with_context(line)?;
            let text = |c: Option<usize>| {
                c.and_then(|c| record.get(c))
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                    .map(str::to_owned)
            };
            let (holder, order) = (text(holder), text(order));
            if holder.is_some() || order.is_some() {
                m.guests.push(crate::Guest {
                    tid: tid.clone(),
                    seat: text(seat),
                    holder,
                    order,
                    product: text(product)
                        .map(|p| gatemesh_ticket::Product::parse(&p))
                        .transpose()
                        .with_context(line)?,
                });
            }
            m.listed.insert(tid);
        }
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tickets_csv_with_holders_and_orders_names_its_guests() {
        let m = Manifest::from_csv(
            "tid,eid,seat,format,code,product,holder,order\n\
             T1,E,A-1,gm1,GM1:x,VIP,Ada Lovelace,ORD-1\n\
             T2,E,A-2,gm1,GM1:y,,,\n\
             T3,E,,jwt,ey,2,,ORD-3\n",
        )
        .unwrap();
        assert_eq!(m.listed.len(), 3);
        let named: Vec<String> = m
            .guests
            .iter()
            .map(|g| {
                let product = g.product.as_ref().map(ToString::to_string);
                format!("{} {:?} {:?} {product:?}", g.tid, g.holder, g.order)
            })
            .collect();
        assert_eq!(
            named,
            [
                r##"T1 Some("Ada Lovelace") Some("ORD-1") Some("VIP")"##,
                r##"T3 None Some("ORD-3") Some("#2")"##,
            ]
        );
        // Without those columns (an older file), nobody.
        let old = Manifest::from_csv("tid,eid,seat,format,code\nT1,E,A-1,gm1,GM1:x\n").unwrap();
        assert!(old.guests.is_empty());
        // A product that is no product names its line.
        let bad = Manifest::from_csv("tid,product,holder\nT1,no such!,Ada\n").unwrap_err();
        assert!(format!("{bad:#}").contains("line 2"), "{bad:#}");
    }
}
