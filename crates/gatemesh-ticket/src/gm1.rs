//! GM1: the compact ticket format for small QR symbols.
//!
//! Text form: `GM1:` followed by the RFC 9285 base45 encoding of the binary form below. Every
//! character is in the QR alphanumeric set, so a QR encoder packs it at 5.5 bits a character:
//! a ticket with expiry and a 12-character seat label is 145 characters and fits a version 6
//! symbol at error-correction level M (154 characters); a product number adds 2 characters,
//! and a ticket with both times, a product and a 12-character seat is 153. The last character of base45 text is
//! never a space, so trimming a scanner's whitespace is always safe.
//!
//! Binary form, version 1 (all integers big-endian):
//!
//! | bytes | field |
//! |---|---|
//! | 1 | flags: bit 0 `exp`, bit 1 `nbf`, bit 2 seat present, bit 3 seat packed 6 bits a character, bit 4 product; other bits 0 |
//! | 3 | key tag: the first 3 bytes of SHA-256 of the key id |
//! | 4 | event tag: the first 4 bytes of SHA-256 of `gatemesh/event\0` and the event id |
//! | 8 | ticket id, the 64-bit value of a gatemesh ticket id |
//! | 4 | `exp`, seconds since 1970, if flagged |
//! | 4 | `nbf`, seconds since 1970, if flagged |
//! | 1 | product number (1-255), if flagged |
//! | 1 + n | seat, if flagged: character count, then 6-bit codes (alphabet `0-9 A-Z a-z`, space, `-`, zero-padded) or UTF-8 bytes |
//! | 64 | ECDSA P-256 signature, `r ‖ s` |
//!
//! The signature covers `GM1\0`, the full event id, a zero byte and the binary form up to the
//! signature. The event id itself does not travel: the gate checks the tag against its own
//! event, then the signature proves the ticket was issued for exactly that event. `iat` is not
//! carried.

use sha2::{Digest, Sha256};

use crate::{
    Claims, EventId, IssuerKey, Keyring, Product, ProductNumber, Seat, SignError, TicketId,
    Verified, VerifyError, verify::Format,
};

/// The text prefix; also the format version.
pub const PREFIX: &str = "GM1:";

const FLAG_EXP: u8 = 1;
const FLAG_NBF: u8 = 1 << 1;
const FLAG_SEAT: u8 = 1 << 2;
const FLAG_SEAT_PACKED: u8 = 1 << 3;
const FLAG_PRODUCT: u8 = 1 << 4;
const KNOWN_FLAGS: u8 = FLAG_EXP | FLAG_NBF | FLAG_SEAT | FLAG_SEAT_PACKED | FLAG_PRODUCT;
const SIG_LEN: usize = 64;
const HEAD_LEN: usize = 1 + 3 + 4 + 8;

const SEAT_ALPHABET: &[u8; 64] =
    b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz -";

/// The 4-byte tag that GM1 carries instead of the event id.
pub(crate) fn event_tag(eid: &EventId) -> [u8; 4] {
    let mut h = Sha256::new();
    h.update(b"gatemesh/event\0");
    h.update(eid.as_str().as_bytes());
    let h = h.finalize();
    [h[0], h[1], h[2], h[3]]
}

fn signing_input(eid: &EventId, body: &[u8]) -> Vec<u8> {
    let mut msg = Vec::with_capacity(4 + eid.as_str().len() + 1 + body.len());
    msg.extend_from_slice(b"GM1\0");
    msg.extend_from_slice(eid.as_str().as_bytes());
    msg.push(0);
    msg.extend_from_slice(body);
    msg
}

fn time_u32(field: &'static str, value: i64) -> Result<[u8; 4], SignError> {
    u32::try_from(value)
        .map(u32::to_be_bytes)
        .map_err(|_| SignError::TimeOutOfRange { field, value })
}

pub(crate) fn encode(key: &IssuerKey, claims: &Claims) -> Result<String, SignError> {
    let tid = claims
        .tid
        .compact()
        .ok_or_else(|| SignError::TicketIdNotCompact {
            tid: claims.tid.to_string(),
        })?;
    let mut body = Vec::with_capacity(HEAD_LEN + 8 + 1 + 64 + SIG_LEN);
    body.push(0); // flags, filled in below
    body.extend_from_slice(&key.kid().tag());
    body.extend_from_slice(&event_tag(&claims.eid));
    body.extend_from_slice(&tid.to_be_bytes());
    let mut flags = 0;
    if let Some(exp) = claims.exp {
        flags |= FLAG_EXP;
        body.extend_from_slice(&time_u32("exp", exp)?);
    }
    if let Some(nbf) = claims.nbf {
        flags |= FLAG_NBF;
        body.extend_from_slice(&time_u32("nbf", nbf)?);
    }
    match &claims.product {
        None => {}
        Some(Product::Number(n)) => {
            flags |= FLAG_PRODUCT;
            body.push(n.get());
        }
        Some(Product::Code(code)) => {
            return Err(SignError::ProductNotNumbered {
                code: code.to_string(),
            });
        }
    }
    if let Some(seat) = &claims.seat {
        flags |= FLAG_SEAT;
        let s = seat.as_str();
        // Seat labels are at most 64 bytes, so the count always fits a byte.
        body.push(s.len() as u8);
        if s.bytes().all(|b| SEAT_ALPHABET.contains(&b)) {
            flags |= FLAG_SEAT_PACKED;
            pack6(s.as_bytes(), &mut body);
        } else {
            body.extend_from_slice(s.as_bytes());
        }
    }
    body[0] = flags;
    let sig = key.sign_raw(&signing_input(&claims.eid, &body));
    body.extend_from_slice(&sig);
    let mut out = String::with_capacity(PREFIX.len() + body.len() / 2 * 3 + 2);
    out.push_str(PREFIX);
    base45_encode(&body, &mut out);
    Ok(out)
}

fn unreadable(what: &str) -> VerifyError {
    VerifyError::Unreadable(format!("GM1 code {what}"))
}

/// A cursor over the binary form that fails with `unreadable` instead of panicking.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], VerifyError> {
        if self.0.len() < n {
            return Err(unreadable("is cut short"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], VerifyError> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }
}

/// Checks structure, event tag, key and signature; the caller checks validity times.
pub(crate) fn verify(
    code: &str,
    keyring: &Keyring,
    event: &EventId,
) -> Result<Verified, VerifyError> {
    let text = code
        .get(PREFIX.len()..)
        .ok_or_else(|| unreadable("has no body"))?;
    let bytes =
        base45_decode(&text.to_ascii_uppercase()).ok_or_else(|| unreadable("is not base45"))?;
    let mut r = Reader(&bytes);
    let flags = r.array::<1>()?[0];
    if flags & !KNOWN_FLAGS != 0 || (flags & FLAG_SEAT_PACKED != 0 && flags & FLAG_SEAT == 0) {
        return Err(unreadable("has flags this gate does not know"));
    }
    let key_tag = r.array::<3>()?;
    let ev_tag = r.array::<4>()?;
    let tid = u64::from_be_bytes(r.array::<8>()?);
    let exp = (flags & FLAG_EXP != 0)
        .then(|| r.array::<4>())
        .transpose()?;
    let nbf = (flags & FLAG_NBF != 0)
        .then(|| r.array::<4>())
        .transpose()?;
    let product = (flags & FLAG_PRODUCT != 0)
        .then(|| r.array::<1>())
        .transpose()?
        .map(|[n]| ProductNumber::new(u64::from(n)).map_err(|_| unreadable("has product 0")))
        .transpose()?
        .map(Product::Number);
    let seat = if flags & FLAG_SEAT != 0 {
        let n = usize::from(r.array::<1>()?[0]);
        let text = if flags & FLAG_SEAT_PACKED != 0 {
            unpack6(r.take((n * 6).div_ceil(8))?, n)
                .ok_or_else(|| unreadable("has a malformed seat"))?
        } else {
            String::from_utf8(r.take(n)?.to_vec())
                .map_err(|_| unreadable("has a malformed seat"))?
        };
        Some(Seat::new(text).map_err(|_| unreadable("has a malformed seat"))?)
    } else {
        None
    };
    let body_len = bytes.len() - r.0.len();
    let sig = r.array::<SIG_LEN>()?;
    if !r.0.is_empty() {
        return Err(unreadable("has trailing bytes"));
    }

    if ev_tag != event_tag(event) {
        return Err(VerifyError::WrongEvent { found: None });
    }
    let msg = signing_input(event, &bytes[..body_len]);
    let mut candidates = keyring.by_tag(key_tag).peekable();
    if candidates.peek().is_none() {
        return Err(VerifyError::UnknownKey {
            kid: format!("tag {}", hex(&key_tag)),
        });
    }
    let key = candidates.find(|k| k.verifies(&msg, &sig)).ok_or_else(|| {
        VerifyError::BadSignature("no issuer key this gate holds signed it".into())
    })?;

    let claims = Claims {
        tid: TicketId::from_compact(tid),
        eid: event.clone(),
        seat,
        iat: None,
        nbf: nbf.map(|b| i64::from(u32::from_be_bytes(b))),
        exp: exp.map(|b| i64::from(u32::from_be_bytes(b))),
        product,
    };
    Ok(Verified {
        format: Format::Gm1,
        kid: key.kid().clone(),
        claims,
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn pack6(text: &[u8], out: &mut Vec<u8>) {
    let mut acc: u32 = 0;
    let mut bits = 0;
    for &c in text {
        let code = SEAT_ALPHABET.iter().position(|&a| a == c).unwrap_or(0) as u32;
        acc = (acc << 6) | code;
        bits += 6;
        while bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    if bits > 0 {
        out.push((acc << (8 - bits)) as u8);
    }
}

/// Inverse of [`pack6`]; `None` unless the padding bits are zero, so one seat has one
/// encoding.
fn unpack6(bytes: &[u8], n: usize) -> Option<String> {
    let mut out = String::with_capacity(n);
    let mut acc: u32 = 0;
    let mut bits = 0;
    let mut iter = bytes.iter();
    while out.len() < n {
        while bits < 6 {
            acc = (acc << 8) | u32::from(*iter.next()?);
            bits += 8;
        }
        bits -= 6;
        out.push(SEAT_ALPHABET[((acc >> bits) & 0x3f) as usize] as char);
    }
    (iter.next().is_none() && acc & ((1 << bits) - 1) == 0).then_some(out)
}

const B45: &[u8; 45] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ $%*+-./:";

fn base45_encode(bytes: &[u8], out: &mut String) {
    for chunk in bytes.chunks(2) {
        let (mut n, digits) = match chunk {
            [a, b] => ((u32::from(*a) << 8) | u32::from(*b), 3),
            [a] => (u32::from(*a), 2),
            _ => unreachable!("chunks(2) yields one or two bytes"),
        };
        for _ in 0..digits {
            out.push(B45[(n % 45) as usize] as char);
            n /= 45;
        }
    }
}

/// Strict RFC 9285 decoding: only the 45 characters, no dangling single character, no
/// triplet above 65535 and no pair above 255.
fn base45_decode(text: &str) -> Option<Vec<u8>> {
    let digits: Vec<u32> = text
        .bytes()
        .map(|c| B45.iter().position(|&d| d == c).map(|p| p as u32))
        .collect::<Option<_>>()?;
    let mut out = Vec::with_capacity(digits.len() / 3 * 2 + 1);
    for chunk in digits.chunks(3) {
        match *chunk {
            [c, d, e] => {
                let n = c + d * 45 + e * 45 * 45;
                let n = u16::try_from(n).ok()?;
                out.extend_from_slice(&n.to_be_bytes());
            }
            [c, d] => out.push(u8::try_from(c + d * 45).ok()?),
            _ => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn base45_rfc9285_examples() {
        let mut s = String::new();
        base45_encode(b"AB", &mut s);
        assert_eq!(s, "BB8");
        s.clear();
        base45_encode(b"Hello!!", &mut s);
        assert_eq!(s, "%69 VD92EX0");
        s.clear();
        base45_encode(b"base-45", &mut s);
        assert_eq!(s, "UJCLQE7W581");
        assert_eq!(base45_decode("QED8WEX0").unwrap(), b"ietf!");
        assert_eq!(base45_decode("GGW"), None); // 65536
        assert_eq!(base45_decode("A"), None);
        assert_eq!(base45_decode("ab"), None);
    }

    /// A body signed properly whose product byte is 0: refused, not read as "no product".
    #[test]
    fn product_zero_is_unreadable_even_when_signed() {
        let key = IssuerKey::generate(None);
        let event = EventId::new("ROCK-2026").unwrap();
        let mut body = vec![FLAG_PRODUCT];
        body.extend_from_slice(&key.kid().tag());
        body.extend_from_slice(&event_tag(&event));
        body.extend_from_slice(&TicketId::generate().compact().unwrap().to_be_bytes());
        body.push(0);
        let sig = key.sign_raw(&signing_input(&event, &body));
        body.extend_from_slice(&sig);
        let mut code = PREFIX.to_owned();
        base45_encode(&body, &mut code);
        let ring = Keyring::from_keys([key.public()]).unwrap();
        let err = verify(&code, &ring, &event).unwrap_err();
        assert!(matches!(err, VerifyError::Unreadable(_)), "{err}");
        // The same body with product 1 verifies.
        body.truncate(body.len() - SIG_LEN);
        *body.last_mut().unwrap() = 1;
        let sig = key.sign_raw(&signing_input(&event, &body));
        body.extend_from_slice(&sig);
        let mut code = PREFIX.to_owned();
        base45_encode(&body, &mut code);
        let got = verify(&code, &ring, &event).unwrap();
        assert_eq!(
            got.claims.product,
            Some(Product::Number(ProductNumber::new(1).unwrap()))
        );
    }

    #[test]
    fn seat_packing() {
        let mut out = Vec::new();
        pack6(b"Row 5 Seat 12", &mut out);
        assert_eq!(out.len(), 10);
        assert_eq!(unpack6(&out, 13).unwrap(), "Row 5 Seat 12");
        // Non-zero padding bits are refused: one seat, one encoding.
        let last = out.len() - 1;
        out[last] |= 1;
        assert_eq!(unpack6(&out, 13), None);
    }

    proptest! {
        #[test]
        fn base45_round_trips(bytes: Vec<u8>) {
            let mut s = String::new();
            base45_encode(&bytes, &mut s);
            prop_assert!(!s.ends_with(' '));
            prop_assert_eq!(base45_decode(&s).unwrap(), bytes);
        }

        #[test]
        fn seat_packing_round_trips(s in "[0-9A-Za-z -]{0,64}") {
            let mut out = Vec::new();
            pack6(s.as_bytes(), &mut out);
            prop_assert_eq!(unpack6(&out, s.len()).unwrap(), s);
        }
    }
}
