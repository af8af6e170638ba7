use std::{
    collections::HashSet,
    fs::{File, OpenOptions},
    io::{Read, Write},
    path::{Path, PathBuf},
    process::ExitCode,
};

use anyhow::{Context, Result};
use gatemesh_qr::{SheetWriter, Symbol, TicketLabel};
use gatemesh_ticket::{Claims, EventId, Format, Product, Seat, TicketId};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;

use crate::{
    exit::{UsageExt, bail_usage, ensure_usage},
    timefmt,
};

/// The most tickets one batch may hold; large events issue in several batches.
const MAX_BATCH: usize = 1_000_000;
/// Tickets rendered per parallel step; bounds memory on very large batches.
const CHUNK: usize = 2_048;

/// Issue a batch of signed tickets: DIR/tickets.csv, DIR/png/<tid>.png and a printable
/// DIR/tickets.pdf.
///
/// Ticket ids never repeat within an event: every id issued is recorded in a registry file
/// (by default beside the key, in issued/<EID>.tids) before any ticket is written.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Issuer private key (PKCS#8 PEM, as written by `gatemesh keygen`).
    #[arg(long, value_name = "KEY.pem")]
    key: PathBuf,
    /// Event id (1-64 characters of A-Z a-z 0-9 . _ -).
    #[arg(long)]
    event: EventId,
    /// Number of tickets (1 to 1000000); with --seats it defaults to the number of seats
    /// listed.
    #[arg(long, required_unless_present = "seats", allow_negative_numbers = true, value_parser = ticket_count)]
    count: Option<usize>,
    /// Seat labels PREFIX1, PREFIX2, …
    #[arg(long, value_name = "P", conflicts_with = "seats")]
    seat_prefix: Option<String>,
    /// A CSV file whose first column lists one seat label per ticket, and whose optional
    /// second column its product (header `seat,product,holder,order` optional; an empty
    /// product is --product's). Optional third and fourth columns name the holder and the
    /// order reference, written to tickets.csv: a gate given that file as its manifest finds
    /// guests by them.
    #[arg(long, value_name = "FILE.csv")]
    seats: Option<PathBuf>,
    /// The tickets' product: the organizer's code (`VIP`) or its number. GM1 carries numbers:
    /// give --lists to map a code to its number.
    #[arg(long, value_name = "CODE")]
    product: Option<String>,
    /// The event's lists file (JSON): its products check --product and the seats' products,
    /// and give GM1 their numbers.
    #[arg(long, value_name = "FILE.json")]
    lists: Option<PathBuf>,
    /// The code format: gm1 (GM1: + base45, for small QR symbols; verify it with --event) or
    /// jwt (a compact JWS, ES256, that names its event).
    #[arg(long, default_value = "gm1")]
    format: Format,
    /// Tickets expire at this moment (RFC 3339); by default they never expire.
    #[arg(long, value_name = "RFC3339")]
    valid_until: Option<String>,
    /// Tickets are valid only from this moment (RFC 3339).
    #[arg(long, value_name = "RFC3339")]
    valid_from: Option<String>,
    /// Output directory; must not already hold a batch.
    #[arg(long)]
    out: PathBuf,
    /// Registry of ids issued for this event [default: KEYDIR/issued/EID.tids].
    #[arg(long, value_name = "FILE")]
    registry: Option<PathBuf>,
    /// Skip the PNG per ticket.
    #[arg(long)]
    no_png: bool,
    /// Skip the printable PDF.
    #[arg(long)]
    no_pdf: bool,
    /// Say what was written as one JSON object (issued, format, event, kid, list, images,
    /// pdf, pages, registry), for scripts.
    #[arg(long)]
    json: bool,
}

/// `--count`: a number of tickets one batch may hold.
fn ticket_count(s: &str) -> Result<usize, String> {
    match s.trim().parse::<i64>() {
        Ok(n) if (1..=MAX_BATCH as i64).contains(&n) => Ok(n as usize),
        Ok(n) => Err(format!("a batch holds 1 to {MAX_BATCH} tickets, not {n}")),
        Err(_) => Err(format!("{s:?} is not a number of tickets")),
    }
}

/// Each seat, and its product when the line names one.
fn read_seats(path: &Path) -> Result<Vec<(Seat, Option<String>)>> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_path(path)
        .with_context(|| format!("reading seats from {}", path.display()))?;
    let mut seats = Vec::new();
    for (i, record) in reader.records().enumerate() {
        let record = record.with_context(|| format!("{}: line {}", path.display(), i + 1))?;
        let label = record.get(0).unwrap_or("").trim();
        if i == 0 && label.eq_ignore_ascii_case("seat") {
            continue;
        }
        let seat = Seat::new(label)
            .with_context(|| format!("{}: line {}", path.display(), i + 1))
            .usage()?;
        let product = record
            .get(1)
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(str::to_owned);
        seats.push((seat, product));
    }
    Ok(seats)
}

/// Each line's holder and order reference (the seats file's third and fourth columns), each
/// at most what a gate shows: 200 and 64 printable bytes.
fn read_holders(path: &Path) -> Result<Vec<(Option<String>, Option<String>)>> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_path(path)
        .with_context(|| format!("reading seats from {}", path.display()))?;
    let mut out = Vec::new();
    for (i, record) in reader.records().enumerate() {
        let record = record.with_context(|| format!("{}: line {}", path.display(), i + 1))?;
        if i == 0
            && record
                .get(0)
                .is_some_and(|l| l.trim().eq_ignore_ascii_case("seat"))
        {
            continue;
        }
        let field = |c: usize, what: &str, most: usize| -> Result<Option<String>> {
            let text = record.get(c).map(str::trim).filter(|t| !t.is_empty());
            if let Some(t) = text {
                ensure_usage!(
                    t.len() <= most && !t.chars().any(char::is_control),
                    "{}: line {}: the {what} is at most {most} printable bytes",
                    path.display(),
                    i + 1
                );
            }
            Ok(text.map(str::to_owned))
        };
        out.push((field(2, "holder", 200)?, field(3, "order", 64)?));
    }
    Ok(out)
}

/// Each ticket's seat and product (as written; [`crate::lists::ticket_product`] reads it).
type SeatList = Vec<(Option<Seat>, Option<String>)>;

fn seat_list(args: &Args) -> Result<(usize, SeatList)> {
    let (count, seats) = match (&args.seats, &args.seat_prefix) {
        (Some(path), _) => {
            let seats = read_seats(path)?;
            ensure_usage!(
                !seats.is_empty(),
                "{} lists no seats: put one seat label a line in its first column \
                 (a header line `seat` is optional)",
                path.display()
            );
            let count = args.count.unwrap_or(seats.len());
            ensure_usage!(
                count == seats.len(),
                "--count {count} but {} lists {} seats",
                path.display(),
                seats.len()
            );
            let seats = seats
                .into_iter()
                .map(|(seat, product)| (Some(seat), product.or_else(|| args.product.clone())))
                .collect();
            (count, seats)
        }
        (None, Some(prefix)) => {
            let count = args.count.unwrap_or(0);
            let seats = (1..=count)
                .map(|i| Seat::new(format!("{prefix}{i}")).map(|s| (Some(s), args.product.clone())))
                .collect::<Result<_, _>>()
                .context("--seat-prefix makes an invalid seat label")
                .usage()?;
            (count, seats)
        }
        (None, None) => {
            let count = args.count.unwrap_or(0);
            (count, vec![(None, args.product.clone()); count])
        }
    };
    ensure_usage!(
        (1..=MAX_BATCH).contains(&count),
        "a batch holds 1 to {MAX_BATCH} tickets, not {count}"
    );
    Ok((count, seats))
}

/// Reserves `n` fresh ids for the event: under an exclusive lock on the registry, draws
/// random ids that were never issued and records them durably before anyone uses them. A
/// batch that later fails leaves its ids reserved, never reusable.
fn reserve_ids(registry: &Path, n: usize) -> Result<Vec<TicketId>> {
    if let Some(dir) = registry.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut file = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .open(registry)
        .with_context(|| format!("opening the id registry {}", registry.display()))?;
    file.lock()
        .with_context(|| format!("locking {}", registry.display()))?;
    let mut text = String::new();
    file.read_to_string(&mut text)
        .with_context(|| format!("reading the id registry {}", registry.display()))?;
    let issued: HashSet<&str> = text.lines().map(str::trim).collect();
    let mut fresh = HashSet::with_capacity(n);
    let mut ids = Vec::with_capacity(n);
    while ids.len() < n {
        let id = TicketId::generate();
        if !issued.contains(id.as_str()) && fresh.insert(id.clone()) {
            ids.push(id);
        }
    }
    let mut out = String::with_capacity(n * 14);
    for id in &ids {
        out.push_str(id.as_str());
        out.push('\n');
    }
    file.write_all(out.as_bytes())?;
    file.sync_all()
        .with_context(|| format!("saving the id registry {}", registry.display()))?;
    Ok(ids)
}

/// Writes through a temporary file and a rename, so a crash never leaves half a file under
/// the real name.
fn write_atomic(path: &Path, write: impl FnOnce(&mut File) -> Result<()>) -> Result<()> {
    let tmp = path.with_extension("partial");
    let mut f = File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    write(&mut f).with_context(|| format!("writing {}", path.display()))?;
    f.sync_all()?;
    std::fs::rename(&tmp, path).with_context(|| format!("renaming to {}", path.display()))?;
    Ok(())
}

fn progress(len: usize, what: &'static str) -> ProgressBar {
    let pb = ProgressBar::new(len as u64).with_message(what);
    pb.set_style(
        ProgressStyle::with_template("{msg:>9} [{bar:40}] {pos}/{len} ({per_sec}, {eta} left)")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    pb
}

pub fn run(args: Args) -> Result<ExitCode> {
    let (count, seats) = seat_list(&args)?;
    let lists = args.lists.as_deref().map(crate::lists::load).transpose()?;
    if let Some(lists) = &lists {
        lists.check_event(&args.event).usage()?;
    }
    // Every product is checked before an id is reserved or a file written.
    let seats: Vec<(Option<Seat>, Option<Product>)> = seats
        .into_iter()
        .enumerate()
        .map(|(i, (seat, product))| {
            let product = product
                .map(|p| crate::lists::ticket_product(&p, args.format, lists.as_ref()))
                .transpose()
                .with_context(|| {
                    format!(
                        "ticket {} ({})",
                        i + 1,
                        seat.as_ref().map_or("no seat", Seat::as_str)
                    )
                })?;
            Ok((seat, product))
        })
        .collect::<Result<_>>()?;
    let holders = match &args.seats {
        Some(path) => read_holders(path)?,
        None => vec![(None, None); count],
    };
    let key = crate::keys::private(&args.key, "--key")?;
    let exp = args
        .valid_until
        .as_deref()
        .map(timefmt::parse)
        .transpose()?;
    let nbf = args.valid_from.as_deref().map(timefmt::parse).transpose()?;
    if let (Some(nbf), Some(exp)) = (nbf, exp) {
        ensure_usage!(nbf < exp, "--valid-from must be before --valid-until");
    }

    let csv_path = args.out.join("tickets.csv");
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    if csv_path.exists() {
        bail_usage!(
            "{} already holds a batch; choose another --out",
            args.out.display()
        );
    }
    let registry = args.registry.clone().unwrap_or_else(|| {
        let dir = args.key.parent().unwrap_or(Path::new("."));
        dir.join("issued").join(format!("{}.tids", args.event))
    });

    let ids = reserve_ids(&registry, count)?;
    let now = timefmt::now();
    let claims: Vec<Claims> = ids
        .into_iter()
        .zip(seats)
        .map(|(tid, (seat, product))| Claims {
            tid,
            eid: args.event.clone(),
            seat,
            iat: Some(now),
            nbf,
            exp,
            product,
        })
        .collect();

    let pb = progress(count, "signing");
    let codes: Vec<String> = claims
        .par_iter()
        .map(|c| {
            pb.inc(1);
            key.sign(c, args.format)
        })
        .collect::<Result<_, _>>()
        .context("signing tickets")?;
    pb.finish_and_clear();

    write_atomic(&csv_path, |f| {
        let mut w = csv::Writer::from_writer(f);
        w.write_record([
            "tid", "eid", "seat", "format", "code", "product", "holder", "order",
        ])?;
        for ((c, code), (holder, order)) in claims.iter().zip(&codes).zip(&holders) {
            let seat = c.seat.as_ref().map_or("", Seat::as_str);
            // The code where the lists file knows the number, so people read `VIP`, not `#2`.
            let product = c.product.as_ref().map(|p| {
                lists
                    .as_ref()
                    .and_then(|l| l.product(p))
                    .map_or_else(|| p.to_string(), |d| d.code.to_string())
            });
            w.write_record([
                c.tid.as_str(),
                c.eid.as_str(),
                seat,
                args.format.as_str(),
                code,
                product.as_deref().unwrap_or(""),
                holder.as_deref().unwrap_or(""),
                order.as_deref().unwrap_or(""),
            ])?;
        }
        w.flush()?;
        Ok(())
    })?;

    let png_dir = args.out.join("png");
    if !args.no_png {
        std::fs::create_dir_all(&png_dir)
            .with_context(|| format!("creating {}", png_dir.display()))?;
    }
    let mut sheet = (!args.no_pdf).then(|| SheetWriter::new(&format!("{} tickets", args.event)));
    if !args.no_png || sheet.is_some() {
        let pb = progress(count, "printing");
        let tickets: Vec<(&Claims, &String)> = claims.iter().zip(&codes).collect();
        for chunk in tickets.chunks(CHUNK) {
            let symbols: Vec<Symbol> = chunk
                .par_iter()
                .map(|(c, code)| {
                    let symbol = Symbol::encode(code)?;
                    if !args.no_png {
                        let path = png_dir.join(format!("{}.png", c.tid));
                        std::fs::write(&path, symbol.to_png(8))
                            .with_context(|| format!("writing {}", path.display()))?;
                    }
                    pb.inc(1);
                    Ok(symbol)
                })
                .collect::<Result<_>>()?;
            if let Some(sheet) = sheet.as_mut() {
                for ((c, _), symbol) in chunk.iter().zip(&symbols) {
                    let label = TicketLabel {
                        event: c.eid.as_str(),
                        seat: c.seat.as_ref().map(Seat::as_str),
                        tid: c.tid.as_str(),
                        format: args.format.as_str(),
                    };
                    sheet.add(symbol, &label);
                }
            }
        }
        pb.finish_and_clear();
    }
    let pdf_path = args.out.join("tickets.pdf");
    let pages = match sheet {
        Some(sheet) => {
            let pages = sheet.pages();
            let pdf = sheet.finish();
            write_atomic(&pdf_path, |f| Ok(f.write_all(&pdf)?))?;
            Some(pages)
        }
        None => None,
    };

    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "issued": count,
                "format": args.format.as_str(),
                "event": args.event.as_str(),
                "kid": key.kid().to_string(),
                "list": csv_path,
                "images": (!args.no_png).then_some(&png_dir),
                "pdf": pages.map(|_| &pdf_path),
                "pages": pages,
                "registry": registry,
            })
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "issued {count} {} tickets for {} (key {})",
        args.format,
        args.event,
        key.kid()
    );
    println!("  list:     {}", csv_path.display());
    if !args.no_png {
        println!("  images:   {}/<tid>.png", png_dir.display());
    }
    if let Some(pages) = pages {
        println!("  to print: {} ({pages} A4 pages)", pdf_path.display());
    }
    println!("  registry: {}", registry.display());
    Ok(ExitCode::SUCCESS)
}
