//! The headless gate as a process: killed with SIGKILL under a stream of scans, restarted,
//! and checked against every answer its clients received; and ledgers carried between gates
//! by file.

use std::{
    path::Path,
    process::{Child, Command},
    sync::{Arc, Mutex},
    time::Duration,
};

use gatemesh_testkit::{World, poll, spawn_ready};
use serde_json::{Value, json};

fn gatemesh() -> Command {
    Command::new(env!("CARGO_BIN_EXE_gatemesh"))
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn fixture(count: usize) -> World {
    World::new(
        Path::new(env!("CARGO_BIN_EXE_gatemesh")),
        "CRASH-2026",
        count,
    )
}

struct GateProcess {
    child: Child,
    api: String,
    /// Sends the gate's API token.
    client: reqwest::Client,
}

fn start_gate(f: &World, data: &str, name: &str) -> GateProcess {
    let mut cmd = gatemesh();
    cmd.args([
        "gate",
        "--data",
        p(&f.root.join(data)),
        "--event",
        "CRASH-2026",
        "--name",
        name,
    ])
    .args([
        "--issuer",
        p(&f.issuer_pub()),
        "--api",
        "127.0.0.1:0",
        "--durability",
        "process",
        "--identity",
        p(&f.identity(data)),
        "--discovery",
        "off",
        "--mesh",
        "127.0.0.1:0",
    ]);
    GateProcess::spawned(cmd)
}

impl GateProcess {
    /// The gate `cmd` starts, once it says it is ready, with a client of its API token.
    fn spawned(cmd: Command) -> Self {
        let (child, ready) = spawn_ready(cmd);
        let token = gatemesh_testkit::api_token(&ready);
        Self {
            child,
            api: format!("http://{}", ready["api"].as_str().unwrap()),
            client: gatemesh_testkit::api_client(&token, Duration::from_secs(10)),
        }
    }

    /// `GET path` of its API, as JSON.
    async fn get(&self, path: &str) -> Value {
        let r = self.client.get(format!("{}{path}", self.api)).send().await;
        r.unwrap().json().await.unwrap()
    }

    /// `POST path` of its API with `body`, as JSON.
    async fn post(&self, path: &str, body: Value) -> Value {
        let r = self.client.post(format!("{}{path}", self.api)).json(&body);
        r.send().await.unwrap().json().await.unwrap()
    }
}

/// A small deterministic generator; the seed is printed so a failure can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_under_load_loses_no_admission_and_never_admits_twice() {
    let f = fixture(400);
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    println!("seed {seed}");
    let mut rng = Rng(seed);
    // Every admit a client received: (tid, redemption id).
    let admitted: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let codes = Arc::new(f.codes.clone());

    for round in 0..6 {
        let gate = start_gate(&f, "gate", "Crash-1");
        let mut workers = Vec::new();
        for w in 0..4u64 {
            let (client, api, codes, admitted) = (
                gate.client.clone(),
                gate.api.clone(),
                codes.clone(),
                admitted.clone(),
            );
            let mut rng = Rng(rng.next() | 1);
            workers.push(tokio::spawn(async move {
                loop {
                    let (tid, code) = &codes[rng.below(codes.len() as u64) as usize];
                    let body = json!({ "code": code, "scanner": format!("s{w}") });
                    let Ok(r) = client
                        .post(format!("{api}/v1/scan"))
                        .json(&body)
                        .send()
                        .await
                    else {
                        return;
                    };
                    let Ok(v) = r.json::<Value>().await else {
                        return;
                    };
                    if v["verdict"] == "admit" {
                        admitted
                            .lock()
                            .unwrap()
                            .push((tid.clone(), v["redemption_id"].as_str().unwrap().to_owned()));
                    }
                }
            }));
        }
        tokio::time::sleep(Duration::from_millis(100 + rng.below(600))).await;
        let mut child = gate.child;
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        for w in workers {
            w.await.unwrap();
        }
        println!(
            "round {round}: {} admits so far",
            admitted.lock().unwrap().len()
        );
    }

    let gate = start_gate(&f, "gate", "Crash-1");
    let admitted = admitted.lock().unwrap().clone();
    assert!(
        admitted.len() > 20,
        "the load was too light to prove anything: {}",
        admitted.len()
    );
    let mut by_ticket = std::collections::HashMap::<String, Vec<String>>::new();
    for (tid, rid) in &admitted {
        by_ticket.entry(tid.clone()).or_default().push(rid.clone());
    }
    for (tid, rids) in &by_ticket {
        let t = gate.get(&format!("/v1/tickets/{tid}")).await;
        let stored: Vec<&str> = t["redemptions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap())
            .collect();
        // Nothing a client was told is lost, and this gate admitted each ticket once: every
        // admit it answered (repeats included) names the one stored redemption.
        assert_eq!(stored.len(), 1, "ticket {tid} admitted more than once: {t}");
        for rid in rids {
            assert_eq!(
                rid, stored[0],
                "ticket {tid}: a client got admit {rid}, the ledger holds {stored:?}"
            );
        }
    }
    let mut child = gate.child;
    child.kill().unwrap();
    child.wait().unwrap();
}

async fn scan(gate: &GateProcess, code: &str, scanner: &str) -> Value {
    gate.post("/v1/scan", json!({ "code": code, "scanner": scanner }))
        .await
}

fn stop(mut g: GateProcess) {
    sigterm(&g.child);
    let (within, every) = (Duration::from_secs(20), Duration::from_millis(20));
    poll("the gate stops on SIGTERM", within, every, || {
        g.child.try_wait().unwrap().is_some()
    });
}

fn sigterm(child: &Child) {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ledger_carried_by_file_catches_the_copy_and_flags_the_race() {
    let f = fixture(3);
    let (code_a, code_b) = (&f.codes[0].1, &f.codes[1].1);
    let a = start_gate(&f, "a", "A");
    assert_eq!(scan(&a, code_a, "a1").await["verdict"], "admit");
    assert_eq!(scan(&a, code_b, "a1").await["verdict"], "admit");
    let b = start_gate(&f, "b", "B");
    assert_eq!(scan(&b, code_b, "b1").await["verdict"], "admit"); // the same ticket, offline
    stop(a);
    stop(b);

    let file = f.root.join("a.ledger");
    let out = gatemesh()
        .args([
            "export",
            "--data",
            p(&f.root.join("a")),
            "--event",
            "CRASH-2026",
            "--out",
            p(&file),
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let wrote: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (&wrote["file"], &wrote["event"]),
        (&json!(p(&file)), &json!("CRASH-2026"))
    );
    assert_eq!(
        wrote["bytes"].as_u64(),
        Some(std::fs::metadata(&file).unwrap().len())
    );
    let (b_data, b_identity) = (f.root.join("b"), f.identity("b"));
    for round in 0..3 {
        let mut args = vec![
            "import",
            "--data",
            p(&b_data),
            "--event",
            "CRASH-2026",
            "--identity",
            p(&b_identity),
            p(&file),
        ];
        if round == 2 {
            args.push("--json");
        }
        let out = gatemesh().args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        match round {
            1 => assert!(
                stdout.contains(": 0 new changes"),
                "importing twice is idempotent"
            ),
            2 => {
                let merged: Value = serde_json::from_str(&stdout).unwrap();
                assert_eq!(merged["new_changes"], 0, "{stdout}");
                assert_eq!(merged["file"], json!(p(&file)));
            }
            _ => {}
        }
    }
    let wrong = gatemesh()
        .args([
            "import",
            "--data",
            p(&f.root.join("b")),
            "--event",
            "OTHER",
            "--identity",
            p(&f.identity("b")),
            p(&file),
        ])
        .output()
        .unwrap();
    assert_eq!(wrong.status.code(), Some(2));

    let b = start_gate(&f, "b", "B");
    let dup = scan(&b, code_a, "b2").await;
    assert_eq!(dup["verdict"], "duplicate");
    assert_eq!(dup["first"]["gate"], "A");
    let flags: Value = b
        .client
        .get(format!("{}/v1/flags", b.api))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(flags["flags"].as_array().unwrap().len(), 1);
    assert_eq!(flags["flags"][0]["tid"], f.codes[1].0.as_str());
    // A running gate's data directory is not touched from outside.
    let busy = gatemesh()
        .args([
            "import",
            "--data",
            p(&f.root.join("b")),
            "--event",
            "CRASH-2026",
            "--identity",
            p(&f.identity("b")),
            p(&file),
        ])
        .output()
        .unwrap();
    assert_eq!(busy.status.code(), Some(3), "a runtime failure");
    assert!(String::from_utf8_lossy(&busy.stderr).contains("in use"));
    stop(b);
}

/// A gate given the issuer's JWK Set (`issuer.jwks.json`, which names a chosen key id)
/// admits the key's tickets; the plain PEM beside it carries no id, so a gate given only it
/// knows the key by its derived id and refuses JWTs naming the chosen one. A JWK Set that is
/// not one stops the gate before it starts, naming the file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gate_takes_the_issuers_jwk_set() {
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys");
    let run = |args: &[&str]| {
        let out = gatemesh().args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
    };
    run(&["keygen", "--out", p(&keys), "--kid", "door-2026"]);
    let batch = dir.path().join("batch");
    run(&[
        "issue",
        "--key",
        p(&keys.join("issuer.key.pem")),
        "--event",
        "JWKS-2026",
        "--count",
        "2",
        "--format",
        "jwt",
        "--no-png",
        "--no-pdf",
        "--out",
        p(&batch),
    ]);
    let mut reader = csv::Reader::from_path(batch.join("tickets.csv")).unwrap();
    let codes: Vec<String> = reader.records().map(|r| r.unwrap()[4].to_owned()).collect();
    let gate = |data: &str, issuer: &Path| {
        let mut cmd = gatemesh();
        cmd.args(["gate", "--data", p(&dir.path().join(data))])
            .args([
                "--event",
                "JWKS-2026",
                "--name",
                data,
                "--issuer",
                p(issuer),
            ])
            .args(["--api", "127.0.0.1:0", "--durability", "process"]);
        cmd
    };
    let start = |data: &str, issuer: &Path| GateProcess::spawned(gate(data, issuer));

    let g = start("jwks", &keys.join("issuer.jwks.json"));
    let first = scan(&g, &codes[0], "s1").await;
    assert_eq!(first["verdict"], "admit", "{first}");
    stop(g);

    let g = start("pem", &keys.join("issuer.pub.pem"));
    let answer = scan(&g, &codes[1], "s1").await;
    assert_eq!(answer["verdict"], "reject", "{answer}");
    assert_eq!(answer["reason"], "unknown_key", "{answer}");
    stop(g);

    let bad = dir.path().join("bad.jwks.json");
    for (text, says) in [
        ("{\"keys\": [", "not JSON"),
        (
            r#"{"keys":[{"kty":"EC","crv":"secp256k1","x":"AA","y":"AA"}]}"#,
            "crv is \"secp256k1\"",
        ),
        (
            r#"{"keys":[{"kty":"EC","crv":"P-256"}]}"#,
            "no \"x\" member",
        ),
    ] {
        std::fs::write(&bad, text).unwrap();
        let out = gate("bad", &bad).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains("bad.jwks.json") && stderr.contains(says),
            "{stderr}"
        );
    }
}

/// `gatemesh issue --product --lists` and the seats CSV's products, and a gate started with
/// `--lists FILE --list vip --list backstage`: the VIP door takes VIP and crew, refuses GA
/// `not_on_list`; a bad lists file or an unknown list stops the gate with what is wrong.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_vip_door_from_a_lists_file() {
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys");
    let run = |args: &[&str]| {
        let out = gatemesh().args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
    };
    run(&["keygen", "--out", p(&keys)]);
    let lists = dir.path().join("lists.json");
    let file = json!({
        "event": "FEST-2026", "time_zone": "Europe/Berlin",
        "products": [{"code": "GA", "number": 1}, {"code": "VIP", "number": 2},
                     {"code": "CREW", "number": 3}],
        "default_product": "GA",
        "lists": [
            {"id": "main", "name": "Main", "products": ["GA"]},
            {"id": "vip", "name": "VIP area", "products": ["VIP"]},
            {"id": "backstage", "name": "Backstage", "products": ["CREW"]}
        ]
    });
    std::fs::write(&lists, file.to_string()).unwrap();
    let issue = |out: &str, extra: &[&str]| -> Vec<(String, String)> {
        let batch = dir.path().join(out);
        let key = keys.join("issuer.key.pem");
        let mut args = vec!["issue", "--key", p(&key)];
        args.extend(["--event", "FEST-2026", "--lists", p(&lists)]);
        args.extend(["--no-png", "--no-pdf", "--out", p(&batch)]);
        args.extend(extra);
        run(&args);
        let mut reader = csv::Reader::from_path(batch.join("tickets.csv")).unwrap();
        assert_eq!(reader.headers().unwrap().get(5), Some("product"));
        reader
            .records()
            .map(|r| {
                let r = r.unwrap();
                (r[4].to_owned(), r[5].to_owned())
            })
            .collect()
    };
    let vip = issue("vip", &["--count", "1", "--product", "VIP"]);
    assert_eq!(vip[0].1, "VIP");
    let seats = dir.path().join("seats.csv");
    std::fs::write(&seats, "seat,product\nA-1,CREW\nA-2,GA\nA-3,\n").unwrap();
    let mixed = issue("mixed", &["--seats", p(&seats), "--format", "jwt"]);
    let products: Vec<&str> = mixed.iter().map(|(_, product)| product.as_str()).collect();
    assert_eq!(products, ["CREW", "GA", ""]);
    // A product the lists file does not declare is refused before anything is written.
    let out = gatemesh()
        .args(["issue", "--key", p(&keys.join("issuer.key.pem"))])
        .args(["--event", "FEST-2026", "--lists", p(&lists), "--count", "1"])
        .args(["--product", "VVIP", "--out", p(&dir.path().join("never"))])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("product VVIP is not among"));
    assert!(!dir.path().join("never/tickets.csv").exists());

    let gate = |data: &str, file: &Path, list: &[&str]| {
        let mut cmd = gatemesh();
        cmd.args(["gate", "--data", p(&dir.path().join(data))])
            .args(["--event", "FEST-2026", "--name", "VIP-door"])
            .args([
                "--issuer",
                p(&keys.join("issuer.pub.pem")),
                "--lists",
                p(file),
            ])
            .args(["--api", "127.0.0.1:0", "--durability", "process"]);
        for l in list {
            cmd.args(["--list", l]);
        }
        cmd
    };
    let g = GateProcess::spawned(gate("door", &lists, &["vip", "backstage"]));
    for (code, expect) in [
        (&vip[0].0, ("admit", "valid")),
        (&mixed[0].0, ("admit", "valid")),
        (&mixed[1].0, ("reject", "not_on_list")),
        (&mixed[2].0, ("reject", "not_on_list")),
    ] {
        let answer = scan(&g, code, "s1").await;
        assert_eq!(
            (
                answer["verdict"].as_str().unwrap(),
                answer["reason"].as_str().unwrap()
            ),
            expect,
            "{answer}"
        );
    }
    stop(g);

    let bad = dir.path().join("bad.json");
    let mut wrong = file.clone();
    wrong["lists"][1]["products"] = json!(["VIP", "GOLD"]);
    for (text, list, says) in [
        ("{".to_owned(), None, "not a lists file"),
        (wrong.to_string(), None, "list vip names product GOLD"),
        (file.to_string(), Some("vipp"), "there is no list vipp"),
    ] {
        std::fs::write(&bad, text).unwrap();
        let out = gate("bad", &bad, list.as_slice()).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{says}: {err}");
        assert!(!dir.path().join("bad/ledger.sqlite").exists());
    }
}

/// An event with no server: the organizer's seats file names holders and orders, the batch's
/// tickets.csv carries them, and a gate given it as its manifest finds a guest by name and
/// checks them in; their code is yellow afterwards. A holder the gate could not show is
/// refused before anything is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_named_in_the_seats_file_is_found_at_a_gate_without_a_server() {
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys");
    let ok = gatemesh()
        .args(["keygen", "--out", p(&keys)])
        .output()
        .unwrap();
    assert!(ok.status.success(), "{ok:?}");
    let seats = dir.path().join("seats.csv");
    std::fs::write(
        &seats,
        "seat,product,holder,order\nA-1,,Ada Lovelace,ORD-1001\nA-2,,Alan Turing,ORD-1002\nA-3,,,\n",
    )
    .unwrap();
    let batch = dir.path().join("batch");
    let issue = |seats: &Path, out: &Path| {
        gatemesh()
            .args(["issue", "--key", p(&keys.join("issuer.key.pem"))])
            .args(["--event", "SOLO-2026", "--seats", p(seats)])
            .args(["--no-png", "--no-pdf", "--out", p(out)])
            .output()
            .unwrap()
    };
    let out = issue(&seats, &batch);
    assert!(out.status.success(), "{out:?}");
    let mut reader = csv::Reader::from_path(batch.join("tickets.csv")).unwrap();
    assert_eq!(
        reader.headers().unwrap(),
        vec![
            "tid", "eid", "seat", "format", "code", "product", "holder", "order"
        ]
    );
    let rows: Vec<(String, String, String)> = reader
        .records()
        .map(|r| {
            let r = r.unwrap();
            (r[0].to_owned(), r[4].to_owned(), r[6].to_owned())
        })
        .collect();
    assert_eq!(rows[0].2, "Ada Lovelace");
    assert_eq!(rows[2].2, "");

    let mut cmd = gatemesh();
    cmd.args(["gate", "--data", p(&dir.path().join("gate"))])
        .args(["--event", "SOLO-2026", "--name", "Box-office"])
        .args(["--issuer", p(&keys.join("issuer.pub.pem"))])
        .args(["--manifest", p(&batch.join("tickets.csv"))])
        .args(["--api", "127.0.0.1:0", "--durability", "process"]);
    let g = GateProcess::spawned(cmd);
    let found = g.get("/v1/guests?q=lovel").await;
    assert_eq!(found["guests"].as_array().map(Vec::len), Some(1), "{found}");
    assert_eq!(found["guests"][0]["tid"], rows[0].0);
    let checked = g
        .post(
            &format!("/v1/guests/{}/check-in", rows[0].0),
            json!({ "staff": "Sam" }),
        )
        .await;
    assert_eq!(checked["verdict"], "admit", "{checked}");
    let again = scan(&g, &rows[0].1, "s1").await;
    assert_eq!(again["verdict"], "duplicate", "{again}");
    stop(g);

    // A holder's name with a control character: refused, nothing written.
    std::fs::write(&seats, "seat,product,holder\nA-1,,Ada\u{7}\n").unwrap();
    let never = dir.path().join("never");
    let out = issue(&seats, &never);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("holder"),
        "{out:?}"
    );
    assert!(!never.join("tickets.csv").exists());
}

/// `gatemesh gate --forget` on `data`, with `extra` arguments: its exit code, stdout, stderr.
fn forget(f: &World, data: &str, extra: &[&str]) -> (i32, String, String) {
    let out = gatemesh()
        .args([
            "gate",
            "--data",
            p(&f.root.join(data)),
            "--event",
            "CRASH-2026",
        ])
        .arg("--forget")
        .args(extra)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The gate's data directory is its operator's alone, and after the event `--forget` removes
/// it — but not while the gate runs, and not while admissions it holds have reached no
/// server, unless the operator says they may go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forget_removes_a_gate_s_data_only_when_nothing_admitted_would_be_lost() {
    use std::os::unix::fs::PermissionsExt;
    let f = fixture(2);
    let data = f.root.join("door");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
    let gate = start_gate(&f, "door", "Door");
    let mode = std::fs::metadata(&data).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "the data directory is the operator's alone");
    assert_eq!(scan(&gate, &f.codes[0].1, "d1").await["verdict"], "admit");

    // Running: refused, nothing removed.
    let (code, _, err) = forget(&f, "door", &["--discard-unsent"]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("in use by a running gate"), "{err}");
    stop(gate);
    assert!(data.join("ledger.sqlite").is_file());

    // The one admission reached no server: refused, saying so, nothing removed.
    let (code, _, err) = forget(&f, "door", &[]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("1 of the 1 redemptions") && err.contains("never had an uplink"),
        "{err}"
    );
    assert!(err.contains("--discard-unsent"), "{err}");
    assert!(data.join("ledger.sqlite").is_file());
    // Another event's name does not open this ledger.
    let out = gatemesh()
        .args([
            "gate",
            "--data",
            p(&data),
            "--event",
            "OTHER-2026",
            "--forget",
        ])
        .args(["--discard-unsent"])
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    assert!(data.join("ledger.sqlite").is_file());

    // Said in as many words: gone, the operator's own file left in place.
    std::fs::write(data.join("notes.txt"), "door 3 keys").unwrap();
    let (code, out, err) = forget(&f, "door", &["--discard-unsent"]);
    assert_eq!(code, 0, "{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (report["redemptions"].as_u64(), report["unsent"].as_u64()),
        (Some(1), Some(1))
    );
    let left: Vec<String> = std::fs::read_dir(&data)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["notes.txt"]);
    // Not a gate's directory (any more): a usage error.
    let (code, _, err) = forget(&f, "door", &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a gate's data directory"), "{err}");
}
