//! Both ticket formats end to end: sign, verify, refuse; `jose` interoperability both ways;
//! arbitrary input never panics a parser.

use std::{
    io::Write,
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use gatemesh_ticket::{
    Claims, EventId, Format, IssuerKey, KeyId, Keyring, Product, ProductNumber, PublicKey, Reason,
    Seat, SignError, TicketId, Verifier,
};
use proptest::prelude::*;
use serde::Deserialize;

const NOW: i64 = 1_780_000_000; // 2026-05-28
const DAY: i64 = 86_400;

fn event() -> EventId {
    EventId::new("ROCK-2026").unwrap()
}

fn claims(seat: Option<&str>) -> Claims {
    Claims {
        tid: TicketId::generate(),
        eid: event(),
        seat: seat.map(|s| Seat::new(s).unwrap()),
        iat: None,
        nbf: Some(NOW - DAY),
        exp: Some(NOW + DAY),
        product: None,
    }
}

fn verifier(keys: &[&IssuerKey]) -> Verifier {
    Verifier::new(Keyring::from_keys(keys.iter().map(|k| k.public())).unwrap()).for_event(event())
}

fn reason(v: &Verifier, code: &str, at: i64) -> Reason {
    v.verify(code, at)
        .expect_err("the code should be refused")
        .reason()
}

#[test]
fn both_formats_round_trip() {
    let key = IssuerKey::generate(None);
    let v = verifier(&[&key]);
    for format in [Format::Jwt, Format::Gm1] {
        for seat in [
            None,
            Some("A-12"),
            Some("Row 5 Seat 12"),
            Some("Bühne Süd, Platz 7"),
        ] {
            let mut c = claims(seat);
            if format == Format::Jwt {
                c.iat = Some(NOW - 2 * DAY);
            }
            let code = key.sign(&c, format).unwrap();
            let got = v.verify(&code, NOW).unwrap();
            assert_eq!(got.format, format);
            assert_eq!(got.kid, *key.kid());
            assert_eq!(got.claims, c, "{format} with seat {seat:?}");
        }
    }
}

#[test]
fn scanner_noise_is_tolerated() {
    let key = IssuerKey::generate(None);
    let v = verifier(&[&key]);
    let gm1 = key.sign(&claims(Some("A-12")), Format::Gm1).unwrap();
    // A wedge scanner ends with Enter; Caps Lock inverts letter case, and base45 has no
    // lower case, so GM1 still reads.
    assert!(v.verify(&format!("{gm1}\r\n"), NOW).is_ok());
    assert!(v.verify(&gm1.to_ascii_lowercase(), NOW).is_ok());
    let jwt = key.sign(&claims(None), Format::Jwt).unwrap();
    assert!(v.verify(&format!("  {jwt}\n"), NOW).is_ok());
}

#[test]
fn refusals_have_typed_reasons() {
    let key = IssuerKey::generate(Some(KeyId::new("k-2026").unwrap()));
    let forger = IssuerKey::generate(Some(KeyId::new("k-2026").unwrap()));
    let stranger = IssuerKey::generate(Some(KeyId::new("k-other").unwrap()));
    let v = verifier(&[&key]);
    for format in [Format::Jwt, Format::Gm1] {
        let c = claims(Some("A-12"));
        let good = key.sign(&c, format).unwrap();
        assert_eq!(reason(&v, &good, NOW + DAY), Reason::Expired, "{format}");
        assert_eq!(
            reason(&v, &good, NOW + 2 * DAY),
            Reason::Expired,
            "{format}"
        );
        assert_eq!(
            reason(&v, &good, NOW - 2 * DAY),
            Reason::NotYetValid,
            "{format}"
        );
        assert!(
            v.clone()
                .with_leeway(60)
                .verify(&good, NOW + DAY + 30)
                .is_ok()
        );

        // The same key id, another key: a forgery.
        let forged = forger.sign(&c, format).unwrap();
        assert_eq!(reason(&v, &forged, NOW), Reason::BadSignature, "{format}");
        // A key the gate was never given.
        let unknown = stranger.sign(&c, format).unwrap();
        assert_eq!(reason(&v, &unknown, NOW), Reason::UnknownKey, "{format}");
        // Signed properly, for another event.
        let other = Claims {
            eid: EventId::new("JAZZ-2026").unwrap(),
            ..c.clone()
        };
        let other = key.sign(&other, format).unwrap();
        assert_eq!(reason(&v, &other, NOW), Reason::WrongEvent, "{format}");

        assert_eq!(reason(&v, "", NOW), Reason::Unreadable);
        assert_eq!(reason(&v, "hello", NOW), Reason::Unreadable);
        assert_eq!(reason(&v, &"x".repeat(10_000), NOW), Reason::Unreadable);
    }
}

#[test]
fn tampering_with_any_gm1_character_is_caught() {
    let key = IssuerKey::generate(None);
    let v = verifier(&[&key]);
    let code = key.sign(&claims(Some("A-12")), Format::Gm1).unwrap();
    let alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ $%*+-./:";
    for i in 4..code.len() {
        let original = code.as_bytes()[i] as char;
        for replacement in alphabet.chars().filter(|&c| c != original).step_by(7) {
            let mut bad = code.clone();
            bad.replace_range(i..=i, &replacement.to_string());
            assert!(
                v.verify(&bad, NOW).is_err(),
                "changed position {i} to {replacement:?}"
            );
        }
    }
}

#[test]
fn tampering_with_jwt_claims_is_caught() {
    use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
    let key = IssuerKey::generate(None);
    let v = verifier(&[&key]);
    let code = key.sign(&claims(Some("A-12")), Format::Jwt).unwrap();
    let parts: Vec<&str> = code.split('.').collect();
    let payload = String::from_utf8(URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
    let payload = payload.replace("A-12", "VIP-1");
    let bad = format!(
        "{}.{}.{}",
        parts[0],
        URL_SAFE_NO_PAD.encode(payload),
        parts[2]
    );
    assert_eq!(reason(&v, &bad, NOW), Reason::BadSignature);
    // alg:none with the signature dropped, and HS256 relabelling.
    for alg in ["none", "HS256", "ES384", "es256"] {
        let header = URL_SAFE_NO_PAD.encode(format!(r#"{{"alg":"{alg}"}}"#));
        let bad = format!("{header}.{}.{}", parts[1], parts[2]);
        assert_eq!(reason(&v, &bad, NOW), Reason::BadSignature, "alg {alg}");
    }
    let crit = URL_SAFE_NO_PAD.encode(r#"{"alg":"ES256","crit":["b64"],"b64":false}"#);
    assert_eq!(
        reason(&v, &format!("{crit}.{}.{}", parts[1], parts[2]), NOW),
        Reason::Unreadable
    );
    // Padding and a DER-encoded signature are not JWS.
    assert_eq!(reason(&v, &format!("{code}="), NOW), Reason::Unreadable);
    let short = format!("{}.{}.{}", parts[0], parts[1], &parts[2][..20]);
    assert_eq!(reason(&v, &short, NOW), Reason::BadSignature);
}

#[test]
fn rotation_accepts_every_held_key() {
    let old = IssuerKey::generate(Some(KeyId::new("2025").unwrap()));
    let new = IssuerKey::generate(Some(KeyId::new("2026").unwrap()));
    let v = verifier(&[&old, &new]);
    for key in [&old, &new] {
        for format in [Format::Jwt, Format::Gm1] {
            let got = v
                .verify(&key.sign(&claims(None), format).unwrap(), NOW)
                .unwrap();
            assert_eq!(&got.kid, key.kid());
        }
    }
}

#[test]
fn gm1_is_small() {
    let key = IssuerKey::generate(None);
    let c = Claims {
        nbf: None,
        ..claims(Some("Row 5 Seat 1"))
    };
    let code = key.sign(&c, Format::Gm1).unwrap();
    assert_eq!(code.len(), 145, "{code}");
    assert!(
        code.bytes()
            .all(|b| b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ $%*+-./:".contains(&b))
    );
}

#[test]
fn products_travel_in_both_formats() {
    let key = IssuerKey::generate(None);
    let v = verifier(&[&key]);
    let number = Product::Number(ProductNumber::new(3).unwrap());
    let code = Product::parse("3DAY").unwrap();
    for (format, product) in [
        (Format::Jwt, code.clone()),
        (Format::Jwt, number.clone()),
        (Format::Gm1, number.clone()),
    ] {
        let c = Claims {
            product: Some(product.clone()),
            ..claims(Some("A-12"))
        };
        let got = v.verify(&key.sign(&c, format).unwrap(), NOW).unwrap();
        assert_eq!(got.claims.product, Some(product), "{format}");
    }
    // A JWT names the code as the claim `prod`.
    let jwt = key
        .sign(
            &Claims {
                product: Some(code.clone()),
                ..claims(None)
            },
            Format::Jwt,
        )
        .unwrap();
    let payload = jwt.split('.').nth(1).unwrap();
    let payload: serde_json::Value = serde_json::from_slice(
        &base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, payload)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(payload["prod"], "3DAY");
    // GM1 has room for a number only: a code is a typed refusal, not a silent drop.
    let err = key
        .sign(
            &Claims {
                product: Some(code),
                ..claims(None)
            },
            Format::Gm1,
        )
        .unwrap_err();
    assert!(matches!(err, SignError::ProductNotNumbered { .. }), "{err}");
}

#[test]
fn gm1_with_a_product_stays_within_version_6() {
    let key = IssuerKey::generate(None);
    // Both times, a product and a 12-character seat: the largest ticket we promise.
    let c = Claims {
        product: Some(Product::Number(ProductNumber::new(255).unwrap())),
        ..claims(Some("Row 5 Seat 1"))
    };
    let code = key.sign(&c, Format::Gm1).unwrap();
    assert!(code.len() <= 154, "{} characters: {code}", code.len());
    let c = Claims { nbf: None, ..c };
    assert_eq!(key.sign(&c, Format::Gm1).unwrap().len(), 147);
}

#[test]
fn gm1_refuses_ids_and_times_it_cannot_carry() {
    let key = IssuerKey::generate(None);
    let c = Claims {
        tid: TicketId::new("T-0001").unwrap(),
        ..claims(None)
    };
    assert!(key.sign(&c, Format::Gm1).is_err());
    let c = Claims {
        exp: Some(-1),
        ..claims(None)
    };
    assert!(key.sign(&c, Format::Gm1).is_err());
    let c = Claims {
        exp: Some(1 << 40),
        ..claims(None)
    };
    assert!(key.sign(&c, Format::Gm1).is_err());
}

// ---- jose interoperability -------------------------------------------------------------

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/jose")
}

#[derive(Deserialize)]
struct Cases {
    event: String,
    at: String,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    token: String,
    expect: String,
    tid: Option<String>,
    seat: Option<String>,
}

fn rfc3339(s: &str) -> i64 {
    time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
        .unwrap()
        .unix_timestamp()
}

#[test]
fn tokens_made_by_jose_verify_here() {
    let cases: Cases =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("cases.json")).unwrap())
            .unwrap();
    let pem = std::fs::read_to_string(fixtures().join("issuer.pub.pem")).unwrap();
    let keyring = Keyring::from_keys([PublicKey::from_pem(&pem).unwrap()]).unwrap();
    let v = Verifier::new(keyring).for_event(EventId::new(cases.event).unwrap());
    let at = rfc3339(&cases.at);
    assert!(cases.cases.len() >= 10);
    for case in &cases.cases {
        match v.verify(&case.token, at) {
            Ok(got) => {
                assert_eq!(
                    case.expect, "valid",
                    "{}: accepted, expected {}",
                    case.name, case.expect
                );
                assert_eq!(
                    Some(got.claims.tid.as_str()),
                    case.tid.as_deref(),
                    "{}",
                    case.name
                );
                assert_eq!(
                    got.claims.seat.as_ref().map(Seat::as_str),
                    case.seat.as_deref()
                );
            }
            Err(e) => assert_eq!(e.reason().as_str(), case.expect, "{}: {e}", case.name),
        }
    }
}

#[test]
fn our_jwts_verify_in_jose() {
    let script = repo_root().join("tools/jose/verify.mjs");
    assert!(
        repo_root().join("tools/jose/node_modules/jose").exists(),
        "run `npm ci` in tools/jose first (the README test command does)"
    );
    let key = IssuerKey::generate(None);
    let pem = key.public().to_pem();
    for (seat, product) in [(None, None), (Some("A-12"), Some("VIP"))] {
        let c = Claims {
            iat: Some(NOW),
            product: product.map(|p| Product::parse(p).unwrap()),
            ..claims(seat)
        };
        let token = key.sign(&c, Format::Jwt).unwrap();
        let request = serde_json::json!({
            "spki_pem": pem, "token": token, "event": "ROCK-2026", "at": "2026-05-28T20:00:00Z",
        });
        let out = node(&script, &request);
        let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(out.status.success(), "jose refused our token: {answer}");
        assert_eq!(answer["payload"]["tid"], c.tid.as_str());
        assert_eq!(answer["payload"]["seat"], serde_json::json!(seat));
        assert_eq!(answer["payload"]["prod"], serde_json::json!(product));
        assert_eq!(answer["header"]["kid"], key.kid().as_str());
    }
}

/// A token jose's `SignJWT` makes with a `prod` claim (a code, or a number) verifies here and
/// names its product; one with a `prod` that breaks the rule is unreadable.
#[test]
fn jose_made_tokens_carry_their_product() {
    let script = repo_root().join("tools/jose/sign.mjs");
    assert!(
        repo_root().join("tools/jose/node_modules/jose").exists(),
        "run `npm ci` in tools/jose first (the README test command does)"
    );
    let key = IssuerKey::generate(None);
    let v = verifier(&[&key]);
    let pem = key.to_pem().unwrap();
    let pkcs8 = &pem[pem.find("-----BEGIN").unwrap()..];
    for (prod, expect) in [
        (
            serde_json::json!("3DAY"),
            Some(Product::parse("3DAY").unwrap()),
        ),
        (serde_json::json!(7), Some(Product::parse("7").unwrap())),
        (serde_json::json!("not a code"), None),
        (serde_json::json!(0), None),
    ] {
        let request = serde_json::json!({
            "pkcs8_pem": pkcs8,
            "claims": {"tid": "T-1", "eid": "ROCK-2026", "iat": NOW, "exp": NOW + DAY, "prod": prod},
        });
        let out = node(&script, &request);
        assert!(out.status.success(), "{out:?}");
        let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let token = answer["token"].as_str().unwrap();
        match expect {
            Some(product) => {
                let got = v.verify(token, NOW).unwrap();
                assert_eq!(got.claims.product, Some(product));
            }
            None => assert_eq!(reason(&v, token, NOW), Reason::Unreadable, "{prod}"),
        }
    }
}

// ---- arbitrary input -------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn arbitrary_strings_never_panic(s: String) {
        let key = IssuerKey::generate(None);
        let v = verifier(&[&key]);
        let _ = v.verify(&s, NOW);
        let _ = v.verify(&format!("GM1:{s}"), NOW);
        let _ = v.verify(&format!("eyJ{s}.{s}.{s}"), NOW);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes: Vec<u8>) {
        let key = IssuerKey::generate(None);
        let v = verifier(&[&key]);
        let s = String::from_utf8_lossy(&bytes);
        let _ = v.verify(&s, NOW);
        let _ = PublicKey::from_pem(&s);
        let _ = IssuerKey::from_pem(&s);
    }

    #[test]
    fn base45_body_garbage_is_unreadable_or_worse(s in "[0-9A-Z $%*+./:-]{0,200}") {
        let key = IssuerKey::generate(None);
        let v = verifier(&[&key]);
        let code = format!("GM1:{s}");
        prop_assert!(v.verify(&code, NOW).is_err());
    }

    #[test]
    fn signed_claims_round_trip(
        seat in proptest::option::of("[^\\p{C}]{1,20}"),
        exp in proptest::option::of(NOW + 1..u32::MAX as i64),
        tid: u64,
        jwt: bool,
    ) {
        let seat = seat.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty() && s.len() <= 64);
        let key = IssuerKey::generate(None);
        let c = Claims {
            tid: TicketId::from_compact(tid),
            eid: event(),
            seat: seat.map(|s| Seat::new(s).unwrap()),
            iat: None,
            nbf: None,
            exp,
            product: None,
        };
        let format = if jwt { Format::Jwt } else { Format::Gm1 };
        let code = key.sign(&c, format).unwrap();
        prop_assert_eq!(verifier(&[&key]).verify(&code, NOW).unwrap().claims, c);
    }
}

/// Runs the `jose` script `script` with `request` on its standard input; what it did.
fn node(script: &std::path::Path, request: &serde_json::Value) -> std::process::Output {
    let mut child = Command::new("node")
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("node runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(request.to_string().as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}
