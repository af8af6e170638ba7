//! Verifications per second per core, for each format; and signing, the cost of issuing.
//! `cargo bench -p gatemesh-ticket --bench verify`

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use gatemesh_ticket::{Claims, EventId, Format, IssuerKey, Keyring, Seat, TicketId, Verifier};

fn bench(c: &mut Criterion) {
    let key = IssuerKey::generate(None);
    let event = EventId::new("BENCH-2026").unwrap();
    let claims = Claims {
        tid: TicketId::generate(),
        eid: event.clone(),
        seat: Some(Seat::new("Row 5 Seat 12").unwrap()),
        iat: None,
        nbf: None,
        exp: Some(1_900_000_000),
        product: None,
    };
    // Three keys in the ring, as during a rotation; the ticket's key is the last one tried.
    let ring = Keyring::from_keys([
        IssuerKey::generate(None).public(),
        IssuerKey::generate(None).public(),
        key.public(),
    ])
    .unwrap();
    let verifier = Verifier::new(ring).for_event(event);
    let mut group = c.benchmark_group("ticket");
    group.throughput(Throughput::Elements(1));
    for format in [Format::Jwt, Format::Gm1] {
        let code = key.sign(&claims, format).unwrap();
        group.bench_function(format!("verify/{format}"), |b| {
            b.iter(|| {
                verifier
                    .verify(std::hint::black_box(&code), 1_800_000_000)
                    .unwrap()
            })
        });
        group.bench_function(format!("sign/{format}"), |b| {
            b.iter(|| key.sign(std::hint::black_box(&claims), format).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
