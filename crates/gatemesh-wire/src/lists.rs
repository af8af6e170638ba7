//! Check-in lists: which tickets a gate takes, and when.
//!
//! An event's lists file (JSON, [`ListsFile`]) names its time zone (IANA), the time of day
//! its days start at (`day_starts`, `05:00` by default: a night's concert belongs to the day
//! it began), its products (a code, and the number GM1 tickets carry), the product a ticket
//! without one counts as, and its lists. A list ([`CheckinList`]) admits some products (or
//! all), within validity windows (absolute `from`/`until`; none means always), optionally
//! once per event day, with an entry policy and an optional capacity. [`Lists::new`] checks a
//! file strictly: a bad file is a [`ListsError`] naming what is wrong.
//!
//! A gate checks against some of the lists ([`Lists::for_gate`]: the VIP door takes `vip`
//! and `backstage`), and [`GateLists::check`] is the pure decision: given a ticket's product
//! and the time, admit under a list and window ([`ListAdmission`], whose [`Scope`] names
//! what a redemption counts against) or refuse as `not_on_list` / `not_valid_now`
//! ([`ListRefusal`]).
//!
//! ```
//! use gatemesh_ticket::Product;
//! use gatemesh_wire::{ListId, Lists, Reason, time};
//!
//! let lists = Lists::from_json(br#"{
//!   "event": "FEST-2026", "time_zone": "Europe/Berlin", "day_starts": "05:00",
//!   "default_product": "GA",
//!   "products": [{"code": "GA", "number": 1}, {"code": "VIP", "number": 2}],
//!   "lists": [
//!     {"id": "main", "name": "Main entrance", "all_products": true},
//!     {"id": "vip", "name": "VIP area", "products": ["VIP"], "once_per_day": true}
//!   ]
//! }"#).unwrap();
//! let door = lists.for_gate(&[ListId::parse("vip").unwrap()]).unwrap();
//! let at = time::parse_ms("2026-07-03T23:30:00Z").unwrap(); // 01:30 in Berlin
//! let vip = Product::parse("VIP").unwrap();
//! let admitted = door.check(Some(&vip), at).unwrap();
//! assert_eq!(admitted.scope().to_string(), "vip/2026-07-03"); // the day began at 05:00
//! let refused = door.check(None, at).unwrap_err(); // no product: GA
//! assert_eq!(refused.reason(), Reason::NotOnList);
//! ```

use std::{collections::HashSet, fmt, sync::OnceLock};

use gatemesh_ticket::{EventId, Product, ProductCode, ProductNumber};
use jiff::{
    civil,
    tz::{TimeZone, TimeZoneDatabase},
};
use serde::{Deserialize, Serialize};

use crate::{Label, ListId, Reason, Timestamp, time::format_ms};

/// Most lists a file may hold.
pub const MAX_LISTS: usize = 256;
/// Most products a file may declare (GM1 numbers them 1-255).
pub const MAX_PRODUCTS: usize = 255;
/// Most windows one list may have.
pub const MAX_WINDOWS: usize = 1_000;

/// How a list lets holders in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Entry {
    /// One entry per ticket and window.
    #[default]
    Single,
    /// Holders may leave through an exit scan and come back.
    Reentry,
}

/// A product of the event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProductDef {
    /// The organizer's code, as a JWT ticket names it.
    pub code: ProductCode,
    /// The number a GM1 ticket carries for it; a product without one is issued as JWT only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number: Option<ProductNumber>,
    /// What people call it ("3-day pass").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<Label>,
}

/// A span a list admits in: from `from` (included) until `until` (excluded); an open end
/// has no bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Window {
    /// The first instant in the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<Timestamp>,
    /// The first instant after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<Timestamp>,
}

impl Window {
    fn contains(&self, at_ms: i64) -> bool {
        self.from.is_none_or(|f| f.ms() <= at_ms) && self.until.is_none_or(|u| at_ms < u.ms())
    }
}

/// One check-in list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckinList {
    /// Its id within the event.
    pub id: ListId,
    /// Its name on screens.
    pub name: Label,
    /// The products it admits (declared in the file's `products`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub products: Vec<ProductCode>,
    /// Admits every ticket of the event, whatever its product (instead of `products`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub all_products: bool,
    /// When it admits; none: always. Windows may not overlap.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub windows: Vec<Window>,
    /// Each event day (from `day_starts` to the next) is a window of its own: a multi-day
    /// pass is used once per day.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub once_per_day: bool,
    /// Single entry, or re-entry with exit scans.
    #[serde(default)]
    pub entry: Entry,
    /// How many may be inside at once, if the list has a limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<u32>,
    /// Everyone counts as out at this time of day (`HH:MM`, the event's zone), every day:
    /// the site closes, and those who stayed inside on the records did not scan out. On a
    /// re-entry list they may come in again after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_all_at: Option<String>,
}

fn default_day_starts() -> String {
    "05:00".to_owned()
}

/// An event's check-in lists as a file (or, later, the server) writes them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListsFile {
    /// The event the lists are for.
    pub event: EventId,
    /// The event's IANA time zone (`Europe/Berlin`): its days are days there.
    pub time_zone: String,
    /// When an event day starts, `HH:MM` local time (`05:00` unless given).
    #[serde(default = "default_day_starts")]
    pub day_starts: String,
    /// What a ticket without a product counts as (tickets from before products existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_product: Option<ProductCode>,
    /// The event's products.
    #[serde(default)]
    pub products: Vec<ProductDef>,
    /// The lists.
    pub lists: Vec<CheckinList>,
}

/// A release of an event's check-in lists, as the server answers it
/// (`PUT`/`GET /v1/events/{eid}/lists`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ListsRelease {
    /// Counts up from 1 with each release; gates check in with the latest they hold.
    pub version: u64,
    /// Who released it.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub by: Label,
    /// When, RFC 3339.
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub at: Timestamp,
    /// The lists, as a lists file writes them.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub lists: ListsFile,
}

/// A lists file that breaks a rule: what, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ListsError {
    /// Not JSON, a missing or unknown field, or a value that breaks its type's rule.
    #[error("not a lists file: {0}")]
    Syntax(String),
    /// A time zone the bundled IANA database does not have.
    #[error("time_zone {0:?} is not an IANA time zone name (like Europe/Berlin)")]
    TimeZone(String),
    /// `day_starts` is not `HH:MM`.
    #[error("day_starts must be a time of day as HH:MM (like 05:00), not {0:?}")]
    DayStarts(String),
    /// A file without a list.
    #[error("the file has no lists")]
    NoLists,
    /// Too many lists, products or windows.
    #[error("too many {what}: at most {max}")]
    TooMany {
        /// Lists, products, or a list's windows.
        what: &'static str,
        /// The limit.
        max: usize,
    },
    /// Two lists with one id.
    #[error("list {0} is given twice")]
    DuplicateList(ListId),
    /// Two products with one code.
    #[error("product {0} is declared twice")]
    DuplicateProduct(ProductCode),
    /// Two products with one number.
    #[error("product number {0} is given to two products")]
    DuplicateNumber(ProductNumber),
    /// A list (or `default_product`) names a product the file does not declare.
    #[error("{} names product {code}, which the file's products do not declare", match list { Some(l) => format!("list {l}"), None => "default_product".to_owned() })]
    UnknownProduct {
        /// The list, or `None` for `default_product`.
        list: Option<ListId>,
        /// The undeclared code.
        code: ProductCode,
    },
    /// A list with neither `products` nor `all_products`, with both, or naming one twice.
    #[error("list {0} must name its products (each once) or say all_products, not both")]
    ListProducts(ListId),
    /// A window that ends before it starts, or overlaps another.
    #[error("list {list}, window {index}: {why}")]
    Window {
        /// The list.
        list: ListId,
        /// The window's place in the list, from 0.
        index: usize,
        /// What is wrong.
        why: &'static str,
    },
    /// A capacity of 0.
    #[error("list {0}: a capacity is at least 1")]
    Capacity(ListId),
    /// `exit_all_at` is not `HH:MM`.
    #[error("list {0}: exit_all_at must be a time of day as HH:MM (like 23:30), not {1:?}")]
    ExitAllAt(ListId, String),
    /// A gate asked for a list the file does not have.
    #[error("there is no list {0} (the file has {1})")]
    UnknownList(ListId, String),
    /// A file for another event.
    #[error("the lists file is for event {found}, this gate checks in {expected}")]
    WrongEvent {
        /// The file's event.
        found: EventId,
        /// The gate's.
        expected: EventId,
    },
    /// A product code a GM1 ticket cannot carry: undeclared, or declared with no number.
    #[error("product {0} has no number in the lists file, which a GM1 ticket needs")]
    NoNumber(ProductCode),
}

/// The bundled IANA database, never the system's: every gate reads days alike.
fn tzdb() -> &'static TimeZoneDatabase {
    static DB: OnceLock<TimeZoneDatabase> = OnceLock::new();
    DB.get_or_init(TimeZoneDatabase::bundled)
}

/// An event's days: from `starts` local time in `tz` to the next day's.
#[derive(Debug, Clone)]
pub struct EventDays {
    tz: TimeZone,
    starts: civil::Time,
}

impl EventDays {
    /// Days in the IANA zone `time_zone`, starting at `day_starts` (`HH:MM`).
    pub fn new(time_zone: &str, day_starts: &str) -> Result<Self, ListsError> {
        let tz = tzdb()
            .get(time_zone)
            .map_err(|_| ListsError::TimeZone(time_zone.to_owned()))?;
        let bad = || ListsError::DayStarts(day_starts.to_owned());
        let (h, m) = day_starts.split_once(':').ok_or_else(bad)?;
        let digits = |s: &str| s.len() == 2 && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(h) || !digits(m) {
            return Err(bad());
        }
        let (h, m) = (
            h.parse::<i8>().map_err(|_| bad())?,
            m.parse::<i8>().map_err(|_| bad())?,
        );
        let starts = civil::Time::new(h, m, 0, 0).map_err(|_| bad())?;
        Ok(Self { tz, starts })
    }

    /// When `day` starts, ms since 1970. A start that falls in a gap (clocks put forward)
    /// is the instant after the gap's length, as RFC 9557's "compatible" reading says; one
    /// that falls in a fold is its first occurrence.
    pub fn start_ms(&self, day: civil::Date) -> Option<i64> {
        let t = self
            .tz
            .to_ambiguous_timestamp(day.to_datetime(self.starts))
            .compatible()
            .ok()?;
        Some(t.as_millisecond())
    }

    /// The event day `at_ms` falls in: `start_ms(day) <= at_ms < start_ms(next day)`.
    pub fn day_of(&self, at_ms: i64) -> Option<civil::Date> {
        let local = self
            .tz
            .to_datetime(jiff::Timestamp::from_millisecond(at_ms).ok()?);
        let mut day = local.date();
        if local.time() < self.starts {
            day = day.yesterday().ok()?;
        }
        // The local reading is off by one where the start itself moved (a gap or a fold at
        // the day's start): the instants decide.
        if self.start_ms(day)? > at_ms {
            day = day.yesterday().ok()?;
        } else if self.start_ms(day.tomorrow().ok()?)? <= at_ms {
            day = day.tomorrow().ok()?;
        }
        Some(day)
    }
}

/// A checked lists file.
#[derive(Debug, Clone)]
pub struct Lists {
    file: ListsFile,
    days: EventDays,
    /// Per list (in the file's order), its everyone-out times as the starts of "days".
    exits: Vec<Option<EventDays>>,
}

impl Lists {
    /// Reads and checks a lists file (JSON).
    pub fn from_json(bytes: &[u8]) -> Result<Self, ListsError> {
        let file: ListsFile =
            serde_json::from_slice(bytes).map_err(|e| ListsError::Syntax(e.to_string()))?;
        Self::new(file)
    }

    /// Checks `file`.
    pub fn new(file: ListsFile) -> Result<Self, ListsError> {
        let days = EventDays::new(&file.time_zone, &file.day_starts)?;
        if file.lists.is_empty() {
            return Err(ListsError::NoLists);
        }
        let too_many = |what, max| ListsError::TooMany { what, max };
        if file.lists.len() > MAX_LISTS {
            return Err(too_many("lists", MAX_LISTS));
        }
        if file.products.len() > MAX_PRODUCTS {
            return Err(too_many("products", MAX_PRODUCTS));
        }
        let mut codes = HashSet::new();
        let mut numbers = HashSet::new();
        for p in &file.products {
            if !codes.insert(&p.code) {
                return Err(ListsError::DuplicateProduct(p.code.clone()));
            }
            if let Some(n) = p.number
                && !numbers.insert(n)
            {
                return Err(ListsError::DuplicateNumber(n));
            }
        }
        if let Some(code) = &file.default_product
            && !codes.contains(code)
        {
            return Err(ListsError::UnknownProduct {
                list: None,
                code: code.clone(),
            });
        }
        let mut ids = HashSet::new();
        for list in &file.lists {
            if !ids.insert(&list.id) {
                return Err(ListsError::DuplicateList(list.id.clone()));
            }
            let named: HashSet<_> = list.products.iter().collect();
            if list.all_products != list.products.is_empty() || named.len() != list.products.len() {
                return Err(ListsError::ListProducts(list.id.clone()));
            }
            if let Some(code) = list.products.iter().find(|c| !codes.contains(c)) {
                return Err(ListsError::UnknownProduct {
                    list: Some(list.id.clone()),
                    code: code.clone(),
                });
            }
            if list.windows.len() > MAX_WINDOWS {
                return Err(too_many("windows in one list", MAX_WINDOWS));
            }
            let window = |index, why| ListsError::Window {
                list: list.id.clone(),
                index,
                why,
            };
            for (i, w) in list.windows.iter().enumerate() {
                if let (Some(f), Some(u)) = (w.from, w.until)
                    && f >= u
                {
                    return Err(window(i, "until must be after from"));
                }
            }
            for (i, a) in list.windows.iter().enumerate() {
                let overlaps = list.windows[..i].iter().any(|b| {
                    a.from.is_none_or(|af| b.until.is_none_or(|bu| af < bu))
                        && b.from.is_none_or(|bf| a.until.is_none_or(|au| bf < au))
                });
                if overlaps {
                    return Err(window(i, "it overlaps an earlier window"));
                }
            }
            if list.capacity == Some(0) {
                return Err(ListsError::Capacity(list.id.clone()));
            }
        }
        let exits = file
            .lists
            .iter()
            .map(|l| {
                l.exit_all_at
                    .as_ref()
                    .map(|at| {
                        EventDays::new(&file.time_zone, at)
                            .map_err(|_| ListsError::ExitAllAt(l.id.clone(), at.clone()))
                    })
                    .transpose()
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { file, days, exits })
    }

    /// The latest everyone-out time of the list at `index` at or before `at_ms`.
    fn everyone_out_ms(&self, index: usize, at_ms: i64) -> Option<i64> {
        let exits = self.exits.get(index)?.as_ref()?;
        exits.start_ms(exits.day_of(at_ms)?)
    }

    /// The file as it was read.
    pub fn file(&self) -> &ListsFile {
        &self.file
    }

    /// The event's days.
    pub fn days(&self) -> &EventDays {
        &self.days
    }

    /// Refuses a file for another event than `event`.
    pub fn check_event(&self, event: &EventId) -> Result<(), ListsError> {
        if &self.file.event == event {
            Ok(())
        } else {
            Err(ListsError::WrongEvent {
                found: self.file.event.clone(),
                expected: event.clone(),
            })
        }
    }

    /// The product a ticket carries, as the file declares it.
    pub fn product(&self, product: &Product) -> Option<&ProductDef> {
        self.file.products.iter().find(|p| match product {
            Product::Code(c) => &p.code == c,
            Product::Number(n) => p.number == Some(*n),
        })
    }

    /// What a ticket of product `code` carries in GM1: its number.
    pub fn number_of(&self, code: &ProductCode) -> Result<ProductNumber, ListsError> {
        self.file
            .products
            .iter()
            .find(|p| &p.code == code)
            .and_then(|p| p.number)
            .ok_or_else(|| ListsError::NoNumber(code.clone()))
    }

    /// The lists a gate checks against: those of `ids` (all of the file's when empty).
    pub fn for_gate(&self, ids: &[ListId]) -> Result<GateLists, ListsError> {
        let mut chosen = Vec::new();
        for id in ids {
            let i = self
                .file
                .lists
                .iter()
                .position(|l| &l.id == id)
                .ok_or_else(|| {
                    let have: Vec<&str> = self.file.lists.iter().map(|l| l.id.as_str()).collect();
                    ListsError::UnknownList(id.clone(), have.join(", "))
                })?;
            if !chosen.contains(&i) {
                chosen.push(i);
            }
        }
        if chosen.is_empty() {
            chosen = (0..self.file.lists.len()).collect();
        }
        Ok(GateLists {
            lists: self.clone(),
            chosen,
            asked: ids.to_vec(),
        })
    }
}

/// Which window of its list an admission counts against.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowKey {
    /// The list has no windows and is not once per day: one window, always.
    Always,
    /// The list's window at this place (from 0).
    Window(usize),
    /// The event day (a once-per-day list), as its local date.
    Day(String),
}

/// What a redemption counts against: a ticket is single-use per list per window. Written
/// in records as its plain key (`vip`, `vip/w0`, `vip/2026-07-03`; see [`Scope::parse`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS), ts(type = "string"))]
pub struct Scope {
    /// The list.
    pub list: ListId,
    /// The window.
    pub window: WindowKey,
}

impl fmt::Display for Scope {
    /// `vip`, `vip/w0`, `vip/2026-07-03`: a plain key for ledger records.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.window {
            WindowKey::Always => write!(f, "{}", self.list),
            WindowKey::Window(i) => write!(f, "{}/w{i}", self.list),
            WindowKey::Day(d) => write!(f, "{}/{d}", self.list),
        }
    }
}

impl Scope {
    /// A scope from its plain key: a list id, alone or with `/w` and a window's place
    /// (below [`MAX_WINDOWS`]) or `/` and an event day (`YYYY-MM-DD`). Nothing else reads.
    pub fn parse(s: &str) -> Option<Self> {
        let (list, window) = match s.split_once('/') {
            None => (s, WindowKey::Always),
            Some((list, rest)) => {
                let window = if let Some(place) = rest.strip_prefix('w') {
                    let ok = !place.is_empty()
                        && place.len() <= 4
                        && place.bytes().all(|b| b.is_ascii_digit())
                        && !(place.len() > 1 && place.starts_with('0'));
                    let place: usize = place.parse().ok().filter(|_| ok)?;
                    (place < MAX_WINDOWS).then_some(WindowKey::Window(place))?
                } else {
                    let day: civil::Date = rest.parse().ok()?;
                    // Only the canonical spelling: one scope, one key.
                    (day.to_string() == rest).then(|| WindowKey::Day(rest.to_owned()))?
                };
                (list, window)
            }
        };
        Some(Self {
            list: ListId::parse(list)?,
            window,
        })
    }
}

impl TryFrom<String> for Scope {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        Self::parse(&s).ok_or_else(|| {
            format!("{s:?} is not a check-in scope (a list id, with /wN or /YYYY-MM-DD)")
        })
    }
}

impl From<Scope> for String {
    fn from(s: Scope) -> Self {
        s.to_string()
    }
}

/// A ticket one of the gate's lists admits now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListAdmission {
    /// The list.
    pub list: ListId,
    /// Its name.
    pub name: Label,
    /// The window it admits in.
    pub window: WindowKey,
    /// The ticket's product as the file declares it (`None`: a list of all products took a
    /// ticket whose product the file does not know).
    pub product: Option<ProductCode>,
    /// The list's entry policy.
    pub entry: Entry,
    /// The list's capacity.
    pub capacity: Option<u32>,
    /// The list's latest everyone-out time (`exit_all_at`) before now, ms since 1970: who
    /// entered before it counts as out.
    pub everyone_out_ms: Option<i64>,
}

impl ListAdmission {
    /// What the redemption counts against.
    pub fn scope(&self) -> Scope {
        Scope {
            list: self.list.clone(),
            window: self.window.clone(),
        }
    }
}

/// How full a list is, for the warnings on the Scan and Gates screens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum CapacityLevel {
    /// Below 90 % of its capacity, or no capacity set.
    Ok,
    /// At 90 % of its capacity or more.
    Near,
    /// At its capacity or past it (holders already inside are not sent out).
    Full,
}

impl CapacityLevel {
    /// The level of `inside` holders against `capacity`.
    pub fn of(inside: u64, capacity: Option<u32>) -> Self {
        match capacity.map(u64::from) {
            Some(c) if inside >= c => Self::Full,
            Some(c) if inside * 10 >= c * 9 => Self::Near,
            _ => Self::Ok,
        }
    }
}

/// Who is inside one list now, as a gate knows it from every gate's records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ListOccupancy {
    /// The list.
    pub list: ListId,
    /// Its name.
    pub name: Label,
    /// The scope counted: the list's window (or event day) now; `None` outside its windows.
    pub scope: Option<Scope>,
    /// Holders inside: entries minus exits in the scope, across every gate.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub inside: u64,
    /// The list's capacity.
    pub capacity: Option<u32>,
    /// Against the capacity.
    pub level: CapacityLevel,
}

/// Why none of the gate's lists admits a ticket now.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ListRefusal {
    /// No list of this gate admits the ticket's product.
    #[error("{} is not on this gate's lists ({})", product.as_ref().map_or_else(|| "a ticket without a product".to_owned(), |p| format!("product {p}")), lists.join(", "))]
    NotOnList {
        /// The ticket's product as it carries it (or the default), `None` when it has none.
        product: Option<String>,
        /// The gate's lists.
        lists: Vec<String>,
    },
    /// A list admits the product, but not at this time.
    #[error("list {list} admits this ticket {}", match (next_ms, ended_ms) {
        (Some(n), _) => format!("only from {}", format_ms(*n)),
        (None, Some(e)) => format!("no longer (its last window ended {})", format_ms(*e)),
        (None, None) => "at no other time".to_owned(),
    })]
    NotValidNow {
        /// The first list that admits the product.
        list: ListId,
        /// The soonest later window start of any list that admits it.
        next_ms: Option<i64>,
        /// When the latest window already over ended, if none starts later.
        ended_ms: Option<i64>,
    },
}

impl ListRefusal {
    /// The verdict's reason.
    pub fn reason(&self) -> Reason {
        match self {
            Self::NotOnList { .. } => Reason::NotOnList,
            Self::NotValidNow { .. } => Reason::NotValidNow,
        }
    }
}

/// The lists one gate checks against.
#[derive(Debug, Clone)]
pub struct GateLists {
    lists: Lists,
    chosen: Vec<usize>,
    /// The ids the gate asked for (none: every list).
    asked: Vec<ListId>,
}

impl GateLists {
    /// The ids the gate asked for, as given to [`Lists::for_gate`] (none: every list), to
    /// choose again from another release of the event's lists.
    pub fn asked(&self) -> &[ListId] {
        &self.asked
    }

    /// The whole file.
    pub fn lists(&self) -> &Lists {
        &self.lists
    }

    /// The gate's lists, in the order it checks them.
    pub fn chosen(&self) -> impl Iterator<Item = &CheckinList> {
        self.chosen.iter().map(|&i| &self.lists.file.lists[i])
    }

    /// Admits a ticket of `product` (`None`: the event's default) at `at_ms` under the first
    /// of the gate's lists that admits its product and is valid then, or says why not.
    pub fn check(
        &self,
        product: Option<&Product>,
        at_ms: i64,
    ) -> Result<ListAdmission, ListRefusal> {
        let file = &self.lists.file;
        let default = file.default_product.clone().map(Product::Code);
        let carried = product.or(default.as_ref());
        let known = carried.and_then(|p| self.lists.product(p)).map(|p| &p.code);
        let admitting: Vec<&CheckinList> = self
            .chosen()
            .filter(|l| l.all_products || known.is_some_and(|c| l.products.contains(c)))
            .collect();
        if admitting.is_empty() {
            return Err(ListRefusal::NotOnList {
                // By its code where the file declares it (`CREW`, not GM1's `#2`).
                product: known
                    .map(ToString::to_string)
                    .or_else(|| carried.map(ToString::to_string)),
                lists: self.chosen().map(|l| l.id.to_string()).collect(),
            });
        }
        for list in &admitting {
            if let Some(window) = self.window_at(list, at_ms) {
                return Ok(ListAdmission {
                    list: list.id.clone(),
                    name: list.name.clone(),
                    window,
                    product: known.cloned(),
                    entry: list.entry,
                    capacity: list.capacity,
                    everyone_out_ms: self.everyone_out_ms(list, at_ms),
                });
            }
        }
        let windows = || admitting.iter().flat_map(|l| l.windows.iter());
        let next_ms = windows()
            .filter_map(|w| w.from.map(Timestamp::ms))
            .filter(|&f| f > at_ms)
            .min();
        let ended_ms = windows()
            .filter_map(|w| w.until.map(Timestamp::ms))
            .filter(|&u| u <= at_ms)
            .max();
        Err(ListRefusal::NotValidNow {
            list: admitting[0].id.clone(),
            next_ms,
            ended_ms: next_ms.is_none().then_some(ended_ms).flatten(),
        })
    }

    /// Where a holder leaving counts: the scope of their latest entry that still counts on
    /// one of the gate's lists (`entries`: the ticket's entries' scopes, oldest first), so
    /// that someone who came in on Friday's window or before the day's boundary can leave
    /// after it. `None` when they entered on none of them.
    pub fn exit_under(&self, entries: &[&Scope], at_ms: i64) -> Option<ListAdmission> {
        let scope = entries
            .iter()
            .rev()
            .find(|s| self.chosen().any(|l| l.id == s.list))?;
        let list = self.chosen().find(|l| l.id == scope.list)?;
        Some(ListAdmission {
            list: list.id.clone(),
            name: list.name.clone(),
            window: scope.window.clone(),
            product: None,
            entry: list.entry,
            capacity: list.capacity,
            everyone_out_ms: self.everyone_out_ms(list, at_ms),
        })
    }

    /// The list's latest everyone-out time at or before `at_ms`, if it has one.
    pub fn everyone_out_ms(&self, list: &CheckinList, at_ms: i64) -> Option<i64> {
        let index = self.lists.file.lists.iter().position(|l| l.id == list.id)?;
        self.lists.everyone_out_ms(index, at_ms)
    }

    /// Each of the gate's lists with the scope a holder entering at `at_ms` counts against
    /// (`None` outside its windows).
    pub fn scopes_at(&self, at_ms: i64) -> Vec<(&CheckinList, Option<Scope>)> {
        self.chosen()
            .map(|list| {
                let scope = self.window_at(list, at_ms).map(|window| Scope {
                    list: list.id.clone(),
                    window,
                });
                (list, scope)
            })
            .collect()
    }

    fn window_at(&self, list: &CheckinList, at_ms: i64) -> Option<WindowKey> {
        let index = if list.windows.is_empty() {
            None
        } else {
            Some(list.windows.iter().position(|w| w.contains(at_ms))?)
        };
        if list.once_per_day {
            let day = self.lists.days.day_of(at_ms)?;
            return Some(WindowKey::Day(day.to_string()));
        }
        Some(index.map_or(WindowKey::Always, WindowKey::Window))
    }
}

#[cfg(test)]
mod tests;
