//! Symbol sizes for real tickets, and PNG/PDF output that other readers accept.

use gatemesh_qr::{SheetWriter, Symbol, TicketLabel};
use gatemesh_ticket::{Claims, EventId, Format, IssuerKey, Seat, TicketId};

fn ticket(seat: &str, format: Format) -> String {
    let key = IssuerKey::generate(None);
    let claims = Claims {
        tid: TicketId::generate(),
        eid: EventId::new("SUMMER-FESTIVAL-2026").unwrap(),
        seat: Some(Seat::new(seat).unwrap()),
        iat: Some(1_780_000_000),
        nbf: None,
        exp: Some(1_790_000_000),
        product: None,
    };
    key.sign(&claims, format).unwrap()
}

#[test]
fn gm1_with_a_12_character_seat_fits_version_6_at_level_m() {
    for seat in [
        "Row 5 Seat 1",
        "BLOCK-C 0412",
        "Tribune N-07",
        "Bühne Süd 7",
    ] {
        let code = ticket(seat, Format::Gm1);
        let v = Symbol::encode(&code).unwrap().version();
        assert!(
            v <= 6,
            "seat {seat:?}: {} characters need version {v}",
            code.len()
        );
    }
}

#[test]
fn a_typical_jwt_ticket_needs_about_version_10() {
    let code = ticket("Row 5 Seat 1", Format::Jwt);
    let v = Symbol::encode(&code).unwrap().version();
    assert!(
        (9..=12).contains(&v),
        "{} characters, version {v}",
        code.len()
    );
}

#[test]
fn png_has_quiet_zone_and_scale() {
    let s = Symbol::encode(&ticket("A-1", Format::Gm1)).unwrap();
    let png = s.to_png(8);
    let decoder = png::Decoder::new(std::io::Cursor::new(png));
    let reader = decoder.read_info().unwrap();
    let info = reader.info();
    assert_eq!(info.width as usize, (s.width() + 8) * 8);
    assert_eq!(info.bit_depth, png::BitDepth::One);
}

#[test]
fn sheet_pages_hold_eight_tickets() {
    let symbol = Symbol::encode(&ticket("A-1", Format::Gm1)).unwrap();
    let mut sheet = SheetWriter::new("test");
    let label = TicketLabel {
        event: "E",
        seat: None,
        tid: "T",
        format: "gm1",
    };
    for n in 1..=17usize {
        sheet.add(&symbol, &label);
        assert_eq!(sheet.pages(), n.div_ceil(8));
    }
    let pdf = sheet.finish();
    assert!(pdf.starts_with(b"%PDF-"));
    let text = String::from_utf8_lossy(&pdf);
    assert_eq!(
        text.matches("/Type /Page\n").count() + text.matches("/Type /Page ").count(),
        3
    );
}
