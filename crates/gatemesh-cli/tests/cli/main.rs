//! The `gatemesh` binary as an organiser uses it: keys, batches, verification, printing,
//! reading codes back with other readers (zbar) and with our own decoder.

use std::{
    collections::HashSet,
    io::Write,
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
};

use serde_json::{Value, json};

fn gatemesh(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gatemesh"))
        .args(args)
        .output()
        .expect("gatemesh runs")
}

fn ok(args: &[&str]) -> String {
    let out = gatemesh(args);
    assert!(
        out.status.success(),
        "gatemesh {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// A tool from Debian that the README's test command installs; absent means a broken set-up,
/// so the test fails and says which package.
fn tool(name: &str, package: &str) -> String {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {name}")])
        .output()
        .unwrap();
    assert!(
        found.status.success(),
        "{name} is missing: apt-get install {package}"
    );
    String::from_utf8(found.stdout).unwrap().trim().to_owned()
}

struct Row {
    tid: String,
    eid: String,
    seat: String,
    format: String,
    code: String,
}

fn read_batch(dir: &Path) -> Vec<Row> {
    let mut reader = csv::Reader::from_path(dir.join("tickets.csv")).unwrap();
    assert_eq!(
        reader.headers().unwrap(),
        vec![
            "tid", "eid", "seat", "format", "code", "product", "holder", "order"
        ]
    );
    reader
        .records()
        .map(|r| {
            let r = r.unwrap();
            assert_eq!(&r[5], "", "a batch without --product has none");
            Row {
                tid: r[0].into(),
                eid: r[1].into(),
                seat: r[2].into(),
                format: r[3].into(),
                code: r[4].into(),
            }
        })
        .collect()
}

fn verify(issuer: &Path, event: Option<&str>, at: Option<&str>, code: &str) -> (i32, Value) {
    let mut args = vec!["verify", "--issuer", p(issuer)];
    if let Some(e) = event {
        args.extend(["--event", e]);
    }
    if let Some(a) = at {
        args.extend(["--at", a]);
    }
    args.push(code);
    let out = gatemesh(&args);
    let json = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("not JSON: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap(), json)
}

/// `gatemesh verify --issuer ISSUER --event EVENT -` given `input` on standard input.
fn verify_stdin(issuer: &Path, event: &str, input: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_gatemesh"))
        .args(["verify", "--issuer", p(issuer), "--event", event, "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

struct Setup {
    _dir: tempfile::TempDir,
    root: PathBuf,
    key: PathBuf,
    public: PathBuf,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_owned();
    ok(&["keygen", "--out", p(&root.join("keys"))]);
    Setup {
        key: root.join("keys/issuer.key.pem"),
        public: root.join("keys/issuer.pub.pem"),
        root,
        _dir: dir,
    }
}

#[test]
fn keygen_writes_a_private_key_only_its_owner_reads_and_never_overwrites() {
    let s = setup();
    let mode = std::fs::metadata(&s.key).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let text = std::fs::read_to_string(&s.public).unwrap();
    assert!(text.contains("-----BEGIN PUBLIC KEY-----"));
    let before = std::fs::read(&s.key).unwrap();
    let again = gatemesh(&["keygen", "--out", p(&s.root.join("keys"))]);
    assert_eq!(again.status.code(), Some(2));
    assert_eq!(std::fs::read(&s.key).unwrap(), before);

    let named = s.root.join("named");
    let out = ok(&["keygen", "--out", p(&named), "--kid", "box-office-2026"]);
    assert!(out.contains("box-office-2026"));
    let bad = gatemesh(&[
        "keygen",
        "--out",
        p(&s.root.join("bad")),
        "--kid",
        "no spaces",
    ]);
    assert_eq!(bad.status.code(), Some(2));
}

/// `keygen` writes a plain SPKI PEM that jose's `importSPKI` takes as written, and a JWK Set
/// that names the key id, which jose's `createLocalJWKSet` and `gatemesh verify` both take. A
/// PEM with the old `kid:` line still verifies; a PEM without one gets the derived id.
#[test]
fn keygen_writes_a_plain_pem_and_a_jwk_set_that_jose_and_verify_read() {
    let dir = tempfile::tempdir().unwrap();
    for kid in [None, Some("door-2026")] {
        let keys = dir.path().join(kid.unwrap_or("derived"));
        let mut args = vec!["keygen", "--out", p(&keys)];
        args.extend(kid.iter().flat_map(|k| ["--kid", k]));
        let out = ok(&args);
        let pem = std::fs::read_to_string(keys.join("issuer.pub.pem")).unwrap();
        assert!(pem.starts_with("-----BEGIN PUBLIC KEY-----\n"), "{pem}");
        let jwks: Value =
            serde_json::from_str(&std::fs::read_to_string(keys.join("issuer.jwks.json")).unwrap())
                .unwrap();
        let jwk = &jwks["keys"][0];
        assert_eq!(jwks["keys"].as_array().unwrap().len(), 1);
        for (member, value) in [
            ("kty", "EC"),
            ("crv", "P-256"),
            ("alg", "ES256"),
            ("use", "sig"),
        ] {
            assert_eq!(jwk[member], value, "{jwks}");
        }
        assert!(jwk["x"].is_string() && jwk["y"].is_string() && jwk.get("d").is_none());
        let kid_line = out.lines().next().unwrap();
        assert_eq!(
            kid_line,
            format!("kid:     {}", jwk["kid"].as_str().unwrap())
        );
        if let Some(kid) = kid {
            assert_eq!(jwk["kid"], kid);
        }

        let batch = keys.join("batch");
        ok(&[
            "issue",
            "--key",
            p(&keys.join("issuer.key.pem")),
            "--event",
            "ROCK-2026",
            "--count",
            "2",
            "--format",
            "jwt",
            "--no-png",
            "--no-pdf",
            "--out",
            p(&batch),
        ]);
        let codes: Vec<String> = read_batch(&batch).into_iter().map(|r| r.code).collect();
        let answer = gatemesh_testkit::jose(
            "jwks.mjs",
            &serde_json::json!({ "jwks": jwks, "spki_pem": pem, "tokens": codes }),
        );
        for r in answer["jwks"].as_array().unwrap() {
            assert_eq!(r["valid"], true, "{answer}");
            assert_eq!(r["kid"], jwk["kid"], "{answer}");
        }
        for r in answer["spki"].as_array().unwrap() {
            assert_eq!(r["valid"], true, "{answer}");
        }
        let thumbprint = answer["thumbprints"][0].as_str().unwrap();

        let (status, json) = verify(&keys.join("issuer.jwks.json"), None, None, &codes[0]);
        assert_eq!((status, &json["valid"]), (0, &Value::Bool(true)), "{json}");
        let (status, json) = verify(&keys.join("issuer.pub.pem"), None, None, &codes[0]);
        match kid {
            // The derived id is jose's RFC 7638 thumbprint, cut to 16 characters.
            None => {
                assert_eq!(&thumbprint[..16], jwk["kid"]);
                assert_eq!(status, 0, "{json}");
            }
            // A chosen id lives in the JWK Set only.
            Some(_) => {
                assert!(out.contains("does not carry the id"), "{out}");
                assert_eq!((status, &json["reason"]), (1, &Value::from("unknown_key")));
                let old = keys.join("old.pub.pem");
                std::fs::write(&old, format!("kid: {}\n{pem}", kid.unwrap())).unwrap();
                let (status, json) = verify(&old, None, None, &codes[0]);
                assert_eq!(status, 0, "{json}");
            }
        }
    }
}

#[test]
fn a_batch_verifies_prints_and_scans() {
    let s = setup();
    let seats = s.root.join("seats.csv");
    std::fs::write(
        &seats,
        "seat\nA-1\nRow 5 Seat 12\nBühne Süd 3\n\"Loge 4, Platz 2\"\n",
    )
    .unwrap();
    let out_dir = s.root.join("gm1");
    let summary = ok(&[
        "issue",
        "--key",
        p(&s.key),
        "--event",
        "ROCK-2026",
        "--seats",
        p(&seats),
        "--valid-until",
        "2030-01-01T00:00:00Z",
        "--out",
        p(&out_dir),
    ]);
    assert!(summary.contains("issued 4 gm1 tickets"), "{summary}");
    let rows = read_batch(&out_dir);
    let labels: Vec<&str> = rows.iter().map(|r| r.seat.as_str()).collect();
    assert_eq!(
        labels,
        ["A-1", "Row 5 Seat 12", "Bühne Süd 3", "Loge 4, Platz 2"]
    );

    let zbar = tool("zbarimg", "zbar-tools");
    for row in &rows {
        assert_eq!(
            (row.eid.as_str(), row.format.as_str()),
            ("ROCK-2026", "gm1")
        );
        let (code, json) = verify(&s.public, Some("ROCK-2026"), None, &row.code);
        assert_eq!(code, 0, "{json}");
        assert_eq!(json["tid"], row.tid.as_str());
        assert_eq!(json["seat"], row.seat.as_str());
        assert_eq!(json["format"], "gm1");
        assert_eq!(json["exp"], "2030-01-01T00:00:00Z");

        // Other readers: zbar must read our PNG back exactly, and so must our decoder.
        let png = out_dir.join("png").join(format!("{}.png", row.tid));
        let read = Command::new(&zbar)
            .args(["-q", "--raw", p(&png)])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&read.stdout).trim_end_matches('\n'),
            row.code
        );
        assert_eq!(ok(&["decode", p(&png)]).trim_end(), row.code);
    }

    // The printable sheet: render it as a printer would and scan the page back.
    let pdftoppm = tool("pdftoppm", "poppler-utils");
    let page = s.root.join("page");
    let status = Command::new(&pdftoppm)
        .args([
            "-r",
            "100",
            "-png",
            "-f",
            "1",
            "-l",
            "1",
            p(&out_dir.join("tickets.pdf")),
            p(&page),
        ])
        .status()
        .unwrap();
    assert!(status.success());
    let scanned = ok(&["decode", p(&s.root.join("page-1.png"))]);
    let scanned: HashSet<&str> = scanned.lines().collect();
    let issued: HashSet<&str> = rows.iter().map(|r| r.code.as_str()).collect();
    assert_eq!(scanned, issued);
}

/// The code with one base64url character at `at` changed to another.
fn flip(code: &str, at: usize) -> String {
    let mut bytes = code.as_bytes().to_vec();
    bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
    String::from_utf8(bytes).unwrap()
}

#[test]
fn refusals_are_typed_json_with_exit_1() {
    let s = setup();
    let out_dir = s.root.join("jwt");
    ok(&[
        "issue",
        "--key",
        p(&s.key),
        "--event",
        "ROCK-2026",
        "--count",
        "2",
        "--seat-prefix",
        "VIP-",
        "--format",
        "jwt",
        "--valid-until",
        "2030-01-01T00:00:00Z",
        "--out",
        p(&out_dir),
    ]);
    let rows = read_batch(&out_dir);
    assert_eq!(rows[1].seat, "VIP-2");
    let code = &rows[0].code;

    let (status, json) = verify(&s.public, None, None, code);
    assert_eq!(
        (status, json["valid"].clone()),
        (0, Value::Bool(true)),
        "{json}"
    );
    assert_eq!(json["eid"], "ROCK-2026");

    let cases = [
        (Some("JAZZ-2026"), None, code.clone(), "wrong_event"),
        (None, Some("2030-01-01T00:00:00Z"), code.clone(), "expired"),
        (None, None, code.replace('.', ""), "unreadable"),
        (None, None, flip(code, code.len() - 10), "bad_signature"),
        (
            None,
            None,
            flip(code, code.find('.').unwrap() + 10),
            "bad_signature",
        ),
    ];
    for (event, at, code, reason) in cases {
        let (status, json) = verify(&s.public, event, at, &code);
        assert_eq!(status, 1, "{json}");
        assert_eq!(json["valid"], false);
        assert_eq!(json["reason"], reason, "{json}");
        assert!(json["detail"].as_str().unwrap().len() > 10);
    }

    let other = s.root.join("other");
    ok(&["keygen", "--out", p(&other)]);
    let (status, json) = verify(&other.join("issuer.pub.pem"), None, None, code);
    assert_eq!((status, json["reason"].as_str()), (1, Some("unknown_key")));
    // With both keys, as during a rotation, it verifies again.
    let out = gatemesh(&[
        "verify",
        "--issuer",
        p(&other.join("issuer.pub.pem")),
        "--issuer",
        p(&s.public),
        code,
    ]);
    assert!(out.status.success());
}

#[test]
fn verify_reads_standard_input_and_insists_on_an_event_for_gm1() {
    let s = setup();
    let out_dir = s.root.join("b");
    ok(&[
        "issue",
        "--key",
        p(&s.key),
        "--event",
        "E1",
        "--count",
        "1",
        "--no-png",
        "--no-pdf",
        "--out",
        p(&out_dir),
    ]);
    let code = read_batch(&out_dir).remove(0).code;
    // A keyboard-wedge scanner ends its input with Enter.
    let out = verify_stdin(&s.public, "E1", &format!("{code}\n"));
    assert!(out.status.success());
    assert!(!out.stdout.is_empty());

    let no_event = gatemesh(&["verify", "--issuer", p(&s.public), &code]);
    assert_eq!(no_event.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&no_event.stderr).contains("--event"));
}

#[test]
fn ticket_ids_never_repeat_across_batches() {
    let s = setup();
    let mut seen = HashSet::new();
    for batch in 0..3 {
        let dir = s.root.join(format!("batch{batch}"));
        ok(&[
            "issue",
            "--key",
            p(&s.key),
            "--event",
            "E1",
            "--count",
            "500",
            "--no-png",
            "--no-pdf",
            "--out",
            p(&dir),
        ]);
        for row in read_batch(&dir) {
            assert!(seen.insert(row.tid.clone()), "{} issued twice", row.tid);
        }
    }
    let registry = std::fs::read_to_string(s.root.join("keys/issued/E1.tids")).unwrap();
    let registered: HashSet<String> = registry.lines().map(str::to_owned).collect();
    assert_eq!(registered, seen);

    // A batch directory is never overwritten.
    let again = gatemesh(&[
        "issue",
        "--key",
        p(&s.key),
        "--event",
        "E1",
        "--count",
        "1",
        "--out",
        p(&s.root.join("batch0")),
    ]);
    assert_eq!(again.status.code(), Some(2));
    assert_eq!(read_batch(&s.root.join("batch0")).len(), 500);
}

#[test]
fn bad_issue_input_is_refused_before_anything_is_written() {
    let s = setup();
    let bad_seats = s.root.join("bad.csv");
    std::fs::write(&bad_seats, "seat\nA-1\n\n").unwrap();
    let bad_products = s.root.join("bad-products.csv");
    std::fs::write(&bad_products, "seat,product\nA-1,2\nA-2,300\n").unwrap();
    for args in [
        vec!["--event", "bad event", "--count", "1"],
        vec!["--event", "E", "--count", "0"],
        vec!["--event", "E", "--count", "2", "--seats", p(&bad_seats)],
        vec!["--event", "E", "--count", "1", "--valid-until", "tomorrow"],
        vec!["--event", "E", "--count", "1", "--format", "pdf417"],
        // Products: a code that breaks the rule, a number outside 1-255, a code GM1 cannot
        // carry without the lists file's number.
        vec![
            "--event",
            "E",
            "--count",
            "1",
            "--format",
            "jwt",
            "--product",
            "V I P",
        ],
        vec!["--event", "E", "--count", "1", "--product", "0"],
        vec!["--event", "E", "--count", "1", "--product", "VIP"],
        vec!["--event", "E", "--count", "2", "--seats", p(&bad_products)],
    ] {
        let out_dir = s.root.join("never");
        let mut all = vec!["issue", "--key", p(&s.key), "--out", p(&out_dir)];
        all.extend(args.iter().copied());
        let out = gatemesh(&all);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(!out_dir.join("tickets.csv").exists(), "{args:?}");
    }
    assert!(!s.root.join("keys/issued/E.tids").exists());
    let not_a_key = gatemesh(&[
        "issue",
        "--key",
        p(&s.public),
        "--event",
        "E",
        "--count",
        "1",
        "--out",
        p(&s.root.join("x")),
    ]);
    assert_eq!(not_a_key.status.code(), Some(2));
}

#[test]
fn decode_reads_hard_photos_of_our_tickets_and_they_verify() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../gatemesh-qr/testdata/own-tickets");
    let issuer = dir.join("issuer.pub.pem");
    let mut images = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if !matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("png" | "jpg")
        ) {
            continue;
        }
        let expected = std::fs::read_to_string(path.with_extension("txt")).unwrap();
        let read = ok(&["decode", p(&path)]);
        assert!(
            read.lines().any(|l| l == expected),
            "{}: read {read:?}",
            path.display()
        );
        let (status, json) = verify(
            &issuer,
            Some("SUMMER-2026"),
            Some("2030-01-01T00:00:00Z"),
            &expected,
        );
        assert_eq!(status, 0, "{}: {json}", path.display());
        images += 1;
    }
    assert!(images >= 40);
    let not_image = gatemesh(&["decode", p(&issuer)]);
    assert_eq!(not_image.status.code(), Some(1));
}

#[test]
fn a_batch_of_100_000_tickets_works() {
    let s = setup();
    let dir = s.root.join("big");
    let n = 100_000;
    ok(&[
        "issue",
        "--key",
        p(&s.key),
        "--event",
        "STADIUM-2026",
        "--count",
        &n.to_string(),
        "--seat-prefix",
        "S",
        "--out",
        p(&dir),
    ]);
    let rows = read_batch(&dir);
    assert_eq!(rows.len(), n);
    let ids: HashSet<&str> = rows.iter().map(|r| r.tid.as_str()).collect();
    assert_eq!(ids.len(), n, "ticket ids repeat within the batch");
    assert_eq!(std::fs::read_dir(dir.join("png")).unwrap().count(), n);
    let pdf = std::fs::read(dir.join("tickets.pdf")).unwrap();
    let pages = pdf.windows(11).filter(|w| w == b"/Type /Page").count()
        - pdf.windows(12).filter(|w| w == b"/Type /Pages").count();
    assert_eq!(pages, n / 8);
    // Spot checks across the batch: the image of ticket i holds ticket i, and it verifies.
    for i in [0, 1, n / 2, n - 1] {
        let png = dir.join("png").join(format!("{}.png", rows[i].tid));
        assert_eq!(ok(&["decode", p(&png)]).trim_end(), rows[i].code);
        let (status, json) = verify(&s.public, Some("STADIUM-2026"), None, &rows[i].code);
        assert_eq!(status, 0, "{json}");
        assert_eq!(json["seat"], format!("S{}", i + 1));
    }
}

/// The README's pipe: `gatemesh decode batch/png/*.png | gatemesh verify … -` checks one code
/// per line and answers each on its own line, in order; one refused code makes the exit 1.
/// `decode --json` says which image each code came from.
#[test]
fn decode_of_many_images_pipes_into_verify_one_answer_per_code() {
    let s = setup();
    let out_dir = s.root.join("b");
    ok(&[
        "issue",
        "--key",
        p(&s.key),
        "--event",
        "E1",
        "--count",
        "3",
        "--no-pdf",
        "--out",
        p(&out_dir),
    ]);
    let rows = read_batch(&out_dir);
    let pngs: Vec<PathBuf> = rows
        .iter()
        .map(|r| out_dir.join("png").join(format!("{}.png", r.tid)))
        .collect();
    let mut args = vec!["decode"];
    args.extend(pngs.iter().map(|p| p.to_str().unwrap()));
    let decoded = ok(&args);
    assert_eq!(decoded.lines().count(), 3, "{decoded}");

    let verify_lines = |input: &str| {
        let out = verify_stdin(&s.public, "E1", input);
        let answers: Vec<Value> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        (out.status.code().unwrap(), answers)
    };
    let (code, answers) = verify_lines(&decoded);
    assert_eq!(code, 0);
    let tids: Vec<&str> = answers.iter().map(|a| a["tid"].as_str().unwrap()).collect();
    let issued: Vec<&str> = rows.iter().map(|r| r.tid.as_str()).collect();
    assert_eq!(tids, issued);

    // A damaged code in the middle: three answers still, the middle one refused.
    let mut lines: Vec<String> = decoded.lines().map(str::to_owned).collect();
    lines[1] = flip(&lines[1], 20);
    let (code, answers) = verify_lines(&format!("{}\n\n", lines.join("\n")));
    assert_eq!(code, 1);
    let valid: Vec<bool> = answers.iter().map(|a| a["valid"] == true).collect();
    assert_eq!(valid, [true, false, true]);

    // Which image each code came from.
    args.insert(1, "--json");
    let json = ok(&args);
    let files: Vec<Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for ((f, row), png) in files.iter().zip(&rows).zip(&pngs) {
        assert_eq!(f["code"], row.code.as_str());
        assert_eq!(f["file"], png.to_str().unwrap());
    }
}

/// A mistyped `--data` exports nothing (before, it wrote an empty ledger and said so) and
/// creates no directory.
#[test]
fn export_refuses_a_directory_that_holds_no_gate() {
    let s = setup();
    let missing = s.root.join("nodir");
    let out = gatemesh(&[
        "export",
        "--data",
        p(&missing),
        "--event",
        "ROCK-2026",
        "--out",
        p(&s.root.join("x.gm")),
    ]);
    assert_ne!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("holds no gate") && err.contains("nodir"),
        "{err}"
    );
    assert!(!s.root.join("x.gm").exists());
    assert!(!missing.exists(), "the mistyped directory was created");
}

/// One row of [`mistakes_a_newcomer_makes_get_the_exit_code_and_the_fix`]: a command line
/// (run in a directory holding `keys/` from `gatemesh keygen`), the exit code it must end
/// with, what its error must name, and a path it must not create.
struct Mistake {
    args: Vec<String>,
    code: i32,
    says: Vec<String>,
    writes_nothing_at: Option<&'static str>,
}

fn mistake(
    args: &[&str],
    code: i32,
    says: &[&str],
    writes_nothing_at: Option<&'static str>,
) -> Mistake {
    Mistake {
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        code,
        says: says.iter().map(|a| (*a).to_owned()).collect(),
        writes_nothing_at,
    }
}

/// The first hour with gatemesh: each mistake ends with its exit code (0 done, 1 a ticket
/// refused, 2 a usage error, 3 a runtime failure), an error naming the thing to fix, and
/// nothing written.
#[test]
fn mistakes_a_newcomer_makes_get_the_exit_code_and_the_fix() {
    let s = setup();
    std::fs::write(s.root.join("empty.csv"), "").unwrap();
    std::fs::write(s.root.join("header-only.csv"), "seat\n").unwrap();
    ok(&["mesh-ca", "--event", "E1", "--out", p(&s.root.join("ca"))]);
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy = busy.local_addr().unwrap().to_string();
    let event_64 = "E".repeat(64);
    let event_65 = "E".repeat(65);
    let gate = |issuer: &str, data: &'static str, api: &str| -> Vec<String> {
        [
            "gate", "--issuer", issuer, "--event", "E1", "--name", "North-1",
        ]
        .iter()
        .map(|a| (*a).to_owned())
        .chain(["--data".into(), data.into(), "--api".into(), api.into()])
        .collect()
    };
    let rows = vec![
        // Keys the other way round: say which file is which.
        mistake(
            &[
                "issue",
                "--key",
                "keys/issuer.pub.pem",
                "--event",
                "E1",
                "--count",
                "1",
                "--out",
                "b1",
            ],
            2,
            &[
                "keys/issuer.pub.pem",
                "public key",
                "private one",
                "issuer.key.pem",
            ],
            Some("b1"),
        ),
        Mistake {
            args: gate("keys/issuer.key.pem", "g1", "127.0.0.1:0"),
            code: 2,
            says: [
                "keys/issuer.key.pem",
                "private key",
                "public one",
                "issuer.pub.pem",
            ]
            .map(String::from)
            .to_vec(),
            writes_nothing_at: Some("g1"),
        },
        mistake(
            &[
                "verify",
                "--issuer",
                "keys/issuer.key.pem",
                "--event",
                "E1",
                "x",
            ],
            2,
            &["private key", "issuer.pub.pem"],
            None,
        ),
        // A path that is not there: named.
        mistake(
            &["enroll", "--ca", "nope", "--name", "North-1", "--out", "d1"],
            3,
            &["nope", "gatemesh mesh-ca"],
            Some("d1"),
        ),
        mistake(
            &[
                "issue",
                "--key",
                "nokey.pem",
                "--event",
                "E1",
                "--count",
                "1",
                "--out",
                "b2",
            ],
            3,
            &["nokey.pem", "No such file"],
            Some("b2"),
        ),
        // A database that is not there: fast, naming host, port and cause.
        mistake(
            &[
                "server",
                "--data",
                "s1",
                "--db",
                "postgres://127.0.0.1:1/x",
                "--plain-http",
                "--listen",
                "127.0.0.1:0",
            ],
            3,
            &["127.0.0.1:1", "Connection refused"],
            Some("s1"),
        ),
        mistake(
            &[
                "server",
                "--data",
                "s2",
                "--db",
                "postgres://",
                "--plain-http",
                "--listen",
                "127.0.0.1:0",
            ],
            2,
            &["postgres://", "no host", "USER@HOST:PORT/DB"],
            Some("s2"),
        ),
        mistake(
            &[
                "server",
                "--data",
                "s3",
                "--db",
                "mysql://x",
                "--plain-http",
                "--listen",
                "127.0.0.1:0",
            ],
            2,
            &["sqlite://PATH", "postgres://"],
            Some("s3"),
        ),
        // Checked before anything is written.
        mistake(
            &[
                "server",
                "--data",
                "s4",
                "--admin-token",
                "0123456789",
                "--plain-http",
                "--listen",
                "127.0.0.1:0",
            ],
            2,
            &["admin token", "10 characters", "at least 16"],
            Some("s4"),
        ),
        mistake(
            &["server", "--data", "s5", "--plain-http", "--listen", &busy],
            3,
            &[&busy, "in use"],
            Some("s5"),
        ),
        Mistake {
            args: gate("keys/issuer.pub.pem", "g2", &busy),
            code: 3,
            says: ["in use", "--api"].map(String::from).to_vec(),
            writes_nothing_at: Some("g2"),
        },
        Mistake {
            args: gate("keys/issuer.pub.pem", "g3", "0.0.0.0:0"),
            code: 2,
            says: ["--api-public"].map(String::from).to_vec(),
            writes_nothing_at: Some("g3"),
        },
        // A URL without its scheme.
        mistake(
            &[
                "pair",
                "--server",
                "127.0.0.1:18081",
                "--code",
                "7K2QM-X9D4R",
                "--out",
                "p1",
            ],
            2,
            &["https://127.0.0.1:18081", "http://"],
            Some("p1"),
        ),
        // Counts and seats.
        mistake(
            &[
                "issue",
                "--key",
                "keys/issuer.key.pem",
                "--event",
                "E1",
                "--count",
                "-1",
                "--out",
                "b3",
            ],
            2,
            &["--count", "1 to 1000000", "not -1"],
            Some("b3"),
        ),
        mistake(
            &[
                "issue",
                "--key",
                "keys/issuer.key.pem",
                "--event",
                "E1",
                "--count",
                "0",
                "--out",
                "b4",
            ],
            2,
            &["--count", "not 0"],
            Some("b4"),
        ),
        mistake(
            &[
                "issue",
                "--key",
                "keys/issuer.key.pem",
                "--event",
                "E1",
                "--seats",
                "empty.csv",
                "--out",
                "b5",
            ],
            2,
            &["empty.csv", "lists no seats", "one seat label"],
            Some("b5"),
        ),
        mistake(
            &[
                "issue",
                "--key",
                "keys/issuer.key.pem",
                "--event",
                "E1",
                "--seats",
                "header-only.csv",
                "--out",
                "b6",
            ],
            2,
            &["header-only.csv", "lists no seats"],
            Some("b6"),
        ),
        // One rule for device names and event ids, and the examples keep it.
        mistake(
            &["enroll", "--ca", "ca", "--name", "North 1", "--out", "d2"],
            2,
            &["North 1", "1-63 characters of A-Z a-z 0-9 . _ -"],
            Some("d2"),
        ),
        Mistake {
            args: [
                "gate",
                "--issuer",
                "keys/issuer.pub.pem",
                "--event",
                "E1",
                "--name",
                "North 1",
                "--data",
                "g4",
                // Busy: a gate that took the name anyway cannot serve and stay up.
                "--api",
                &busy,
            ]
            .map(String::from)
            .to_vec(),
            code: 2,
            says: ["North 1", "1-63 characters of A-Z a-z 0-9 . _ -"]
                .map(String::from)
                .to_vec(),
            writes_nothing_at: Some("g4"),
        },
        mistake(
            &["enroll", "--ca", "ca", "--name", "North-1", "--out", "d3"],
            0,
            &["North-1"],
            None,
        ),
        mistake(
            &["mesh-ca", "--event", &event_65, "--out", "ca65"],
            2,
            &["1-64 characters"],
            Some("ca65"),
        ),
        mistake(
            &["mesh-ca", "--event", &event_64, "--out", "ca64"],
            0,
            &[],
            None,
        ),
        mistake(
            &[
                "issue",
                "--key",
                "keys/issuer.key.pem",
                "--event",
                &event_65,
                "--count",
                "1",
                "--out",
                "b7",
            ],
            2,
            &["1-64 characters"],
            Some("b7"),
        ),
        // An output that exists already.
        mistake(
            &["keygen", "--out", "keys"],
            2,
            &["keys", "already holds an issuer key"],
            None,
        ),
        // A ticket refused.
        mistake(
            &[
                "verify",
                "--issuer",
                "keys/issuer.pub.pem",
                "--event",
                "E1",
                "not-a-ticket",
            ],
            1,
            &[],
            None,
        ),
    ];
    let mut failed = Vec::new();
    for row in &rows {
        let out = Command::new(env!("CARGO_BIN_EXE_gatemesh"))
            .args(&row.args)
            .current_dir(&s.root)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        let mut wrong = Vec::new();
        if out.status.code() != Some(row.code) {
            wrong.push(format!("exit {:?}, not {}", out.status.code(), row.code));
        }
        let all = format!("{err}{}", String::from_utf8_lossy(&out.stdout));
        for needle in &row.says {
            if !all.contains(needle) {
                wrong.push(format!("does not say {needle:?}"));
            }
        }
        if let Some(path) = row.writes_nothing_at
            && s.root.join(path).exists()
        {
            wrong.push(format!("wrote {path}"));
        }
        if !wrong.is_empty() {
            failed.push(format!(
                "gatemesh {}: {}\n  {}",
                row.args.join(" "),
                wrong.join("; "),
                err.trim()
            ));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

#[test]
fn keygen_and_issue_say_what_they_wrote_as_json_for_scripts() {
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys");
    let made: Value = serde_json::from_str(&ok(&["keygen", "--out", p(&keys), "--json"])).unwrap();
    for (field, file) in [
        ("private", "issuer.key.pem"),
        ("public", "issuer.pub.pem"),
        ("jwks", "issuer.jwks.json"),
    ] {
        assert_eq!(made[field], json!(p(&keys.join(file))), "{made}");
        assert!(keys.join(file).exists());
    }
    assert!(
        made["kid"].as_str().is_some_and(|k| k.len() == 16),
        "{made}"
    );
    let out = dir.path().join("batch");
    let issued: Value = serde_json::from_str(&ok(&[
        "issue",
        "--key",
        p(&keys.join("issuer.key.pem")),
        "--event",
        "ROCK-2026",
        "--count",
        "3",
        "--out",
        p(&out),
        "--no-pdf",
        "--json",
    ]))
    .unwrap();
    assert_eq!(
        (
            &issued["issued"],
            &issued["event"],
            &issued["kid"],
            &issued["pdf"]
        ),
        (&json!(3), &json!("ROCK-2026"), &made["kid"], &Value::Null),
        "{issued}"
    );
    let list = std::fs::read_to_string(issued["list"].as_str().unwrap()).unwrap();
    assert_eq!(
        list.lines().count(),
        4,
        "a header and three tickets: {list}"
    );
    assert!(std::path::Path::new(issued["registry"].as_str().unwrap()).exists());
}

/// The commands `gatemesh --help` lists (without `help`).
fn listed_commands() -> Vec<String> {
    let help = ok(&["--help"]);
    let commands = help
        .split("Commands:\n")
        .nth(1)
        .expect("--help lists its commands");
    let names: Vec<String> = commands
        .lines()
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect();
    assert!(names.len() > 10, "{help}");
    names
}

#[test]
fn completion_scripts_parse_in_their_shell_and_complete_real_commands() {
    let commands = listed_commands();
    assert!(commands.iter().any(|c| c == "completions"), "{commands:?}");
    let dir = tempfile::tempdir().unwrap();
    for (shell, check) in [
        ("bash", vec!["bash", "-n"]),
        ("zsh", vec!["zsh", "-n"]),
        ("fish", vec!["fish", "--no-execute"]),
    ] {
        tool(check[0], check[0]);
        let script = ok(&["completions", shell]);
        for name in &commands {
            assert!(script.contains(name.as_str()), "{shell}: no {name}");
        }
        let file = dir.path().join(format!("gatemesh.{shell}"));
        std::fs::write(&file, &script).unwrap();
        let parsed = Command::new(check[0])
            .args(&check[1..])
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            parsed.status.success(),
            "{shell} cannot read its script: {}",
            String::from_utf8_lossy(&parsed.stderr)
        );
    }
    // Bash, calling the function the way `complete -F` does (command, word, previous word),
    // completes a command and an option.
    let complete = |words: &str| -> String {
        let line = format!(
            "source {}; COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); \
             _gatemesh gatemesh \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            p(&dir.path().join("gatemesh.bash"))
        );
        let out = Command::new("bash").args(["-c", &line]).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(complete("gatemesh is").trim(), "issue");
    assert!(
        complete("gatemesh issue --ev")
            .lines()
            .any(|l| l == "--event")
    );
}

#[test]
fn completions_for_an_unknown_shell_is_a_usage_error() {
    let out = gatemesh(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("bash"));
}

#[test]
fn man_writes_a_page_per_command_that_man_can_format() {
    let dir = tempfile::tempdir().unwrap();
    let pages = dir.path().join("man1");
    ok(&["man", p(&pages)]);
    let mut expected: Vec<String> = listed_commands()
        .iter()
        .map(|c| format!("gatemesh-{c}.1"))
        .collect();
    expected.push("gatemesh.1".into());
    let written: HashSet<String> = std::fs::read_dir(&pages)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    for page in &expected {
        assert!(written.contains(page), "no {page} in {written:?}");
    }
    // Subcommands' own commands get pages too (gatemesh bench gate).
    assert!(written.contains("gatemesh-bench-gate.1"), "{written:?}");
    tool("groff", "groff-base");
    for page in &written {
        let out = Command::new("groff")
            // -k: UTF-8 input through preconv, as man(1) does.
            .args(["-k", "-man", "-Tutf8", "-ww", "-z"])
            .arg(pages.join(page))
            .output()
            .unwrap();
        assert!(
            out.status.success() && out.stderr.is_empty(),
            "{page}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let issue = std::fs::read_to_string(pages.join("gatemesh-issue.1")).unwrap();
    assert!(issue.contains("\\-\\-event"), "{issue}");

    // Onto a file instead of a directory: a usage error, and the file is left alone.
    let file = dir.path().join("notes.txt");
    std::fs::write(&file, "mine").unwrap();
    let out = gatemesh(&["man", p(&file)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a directory"));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");
}
