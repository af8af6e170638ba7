//! Per-ticket costs of printing a batch, one core: signing, QR symbol, PNG, PDF sheet cell.
//! The whole pipeline, in parallel and with file writes, is timed through `gatemesh issue`. `cargo bench -p gatemesh-qr --bench print`

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use gatemesh_qr::{SheetWriter, Symbol, TicketLabel};
use gatemesh_ticket::{Claims, EventId, Format, IssuerKey, Seat, TicketId};

fn bench(c: &mut Criterion) {
    let key = IssuerKey::generate(None);
    let claims = Claims {
        tid: TicketId::generate(),
        eid: EventId::new("BENCH-2026").unwrap(),
        seat: Some(Seat::new("Row 5 Seat 12").unwrap()),
        iat: Some(1_780_000_000),
        nbf: None,
        exp: Some(1_900_000_000),
        product: None,
    };
    let label = TicketLabel {
        event: "BENCH-2026",
        seat: Some("Row 5 Seat 12"),
        tid: "0123456789ABC",
        format: "gm1",
    };
    let mut group = c.benchmark_group("print");
    group.throughput(Throughput::Elements(1));
    for format in [Format::Gm1, Format::Jwt] {
        let code = key.sign(&claims, format).unwrap();
        let symbol = Symbol::encode(&code).unwrap();
        group.bench_function(format!("symbol/{format}"), |b| {
            b.iter(|| Symbol::encode(&code).unwrap())
        });
        group.bench_function(format!("png/{format}"), |b| b.iter(|| symbol.to_png(8)));
        group.bench_function(format!("sheet_cell/{format}"), |b| {
            b.iter_batched(
                || SheetWriter::new("bench"),
                |mut sheet| {
                    sheet.add(&symbol, &label);
                    sheet
                },
                criterion::BatchSize::SmallInput,
            )
        });
        group.bench_function(format!("ticket_signed_only/{format}"), |b| {
            b.iter(|| key.sign(&claims, format).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
