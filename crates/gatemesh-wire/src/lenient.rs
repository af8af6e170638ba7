//! Lists read item by item. A list from a newer server, or one with a single item this side
//! cannot read, still yields every other item; the reader counts and reports what it
//! skipped rather than refusing the whole list (which, for a gate's uplink, would stall it).

use serde::{Deserialize, Deserializer, de::DeserializeOwned};
use serde_json::Value;

/// One item of a list: read, or not, with why.
#[derive(Debug, Clone, PartialEq)]
pub enum Lenient<T> {
    /// The item as this side understands it.
    Read(T),
    /// An item this side cannot take.
    Skipped(Skipped),
}

/// An item a reader could not take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// Its ticket id, when it names one in a readable way (for logs and staff).
    pub tid: Option<String>,
    /// Why it could not be read.
    pub error: String,
}

impl std::fmt::Display for Skipped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.tid {
            Some(tid) => write!(f, "ticket {tid}: {}", self.error),
            None => f.write_str(&self.error),
        }
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for Lenient<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        let tid = value
            .get("tid")
            .and_then(Value::as_str)
            .map(crate::error::shorten);
        Ok(match serde_json::from_value::<T>(value) {
            Ok(item) => Self::Read(item),
            Err(e) => Self::Skipped(Skipped {
                tid,
                error: e.to_string(),
            }),
        })
    }
}

/// Splits a leniently read list into what was read and what was skipped, in order.
pub fn split<T>(items: Vec<Lenient<T>>) -> (Vec<T>, Vec<Skipped>) {
    let mut read = Vec::with_capacity(items.len());
    let mut skipped = Vec::new();
    for item in items {
        match item {
            Lenient::Read(t) => read.push(t),
            Lenient::Skipped(s) => skipped.push(s),
        }
    }
    (read, skipped)
}
