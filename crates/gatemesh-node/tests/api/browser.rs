//! The abuse of `abuse.rs` from a real browser engine: WebKitGTK's MiniBrowser, driven by
//! `WebKitWebDriver` under Xvfb (as the app's end-to-end test runs), opens a page the test
//! serves from another loopback origin. Its scripts and forms post to the gate's API (scan,
//! resolve, import) the ways a browser lets any page do, and a page under another name for
//! the gate's own address reads the export. Nothing reaches the ledger; nothing is read.

use std::{
    path::Path,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use gatemesh_ledger::Policy;
use gatemesh_ticket::TicketId;
use serde_json::{Value, json};

use super::{EVENT, Gate, Issuer, verdict};

const MINI_BROWSER: &str = "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser";
const DRIVER: &str = "/usr/bin/WebKitWebDriver";

struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn xvfb() -> (Guard, String) {
    for n in 90..200 {
        if Path::new(&format!("/tmp/.X{n}-lock")).exists()
            || Path::new(&format!("/tmp/.X11-unix/X{n}")).exists()
        {
            continue;
        }
        let display = format!(":{n}");
        let child = Command::new("Xvfb")
            .args([&display, "-screen", "0", "1024x768x24", "-nolisten", "tcp"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("Xvfb runs");
        let guard = Guard(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !Path::new(&format!("/tmp/.X11-unix/X{n}")).exists() {
            assert!(Instant::now() < deadline, "Xvfb {display} did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        return (guard, display);
    }
    panic!("no free X display number");
}

struct Session {
    http: reqwest::Client,
    base: String,
    id: String,
}

impl Session {
    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut r = self
            .http
            .request(method, format!("{}/session/{}{path}", self.base, self.id));
        if let Some(b) = body {
            r = r.json(&b);
        }
        let v: Value = r.send().await.unwrap().json().await.unwrap();
        v["value"].clone()
    }

    async fn go(&self, url: &str) -> Value {
        self.call(reqwest::Method::POST, "/url", Some(json!({ "url": url })))
            .await
    }

    async fn run(&self, script: &str, args: Value) -> Value {
        self.call(
            reqwest::Method::POST,
            "/execute/async",
            Some(json!({ "script": script, "args": args })),
        )
        .await
    }
}

/// The attacker's scripts: each attempt's outcome as the page sees it.
const ATTACKS: &str = r#"
const [gate, ledger, scan, resolve, done] = arguments;
const bytes = Uint8Array.from(atob(ledger), c => c.charCodeAt(0));
const out = {};
const attempt = async (name, call) => {
  try {
    const r = await call();
    out[name] = { type: r.type, status: r.status, text: r.text ? await r.text() : null };
  } catch (e) {
    out[name] = { error: String(e) };
  }
};
const simple = (path, body) => fetch(gate + path, {
  method: "POST", mode: "no-cors", headers: { "content-type": "text/plain" }, body,
});
const form = (path, name, value) => new Promise(resolve => {
  const frame = document.createElement("iframe");
  frame.name = "f" + Math.random().toString(36).slice(2);
  document.body.appendChild(frame);
  const f = document.createElement("form");
  f.method = "POST"; f.action = gate + path; f.enctype = "text/plain"; f.target = frame.name;
  const input = document.createElement("input");
  input.name = name; input.value = value;
  f.appendChild(input);
  document.body.appendChild(f);
  frame.onload = () => resolve({ type: "form", status: 0 });
  f.submit();
});
(async () => {
  await attempt("scan, simple fetch", () => simple("/v1/scan", scan));
  await attempt("resolve, simple fetch", () => simple("/v1/flags/" + resolve.tid + "/resolve", resolve.body));
  await attempt("import, simple fetch", () => simple("/v1/import", bytes));
  await attempt("import, octet-stream", () => fetch(gate + "/v1/import", {
    method: "POST", headers: { "content-type": "application/octet-stream" }, body: bytes }));
  await attempt("scan, JSON", () => fetch(gate + "/v1/scan", {
    method: "POST", headers: { "content-type": "application/json" }, body: scan }));
  await attempt("export", () => fetch(gate + "/v1/export?format=json"));
  // A JSON body smuggled into a text/plain form: `name=value` reads as one JSON object.
  const cut = scan.length - 2;
  await attempt("scan, form", () => form("/v1/scan", scan.slice(0, cut) + ',"x":"', '"}'));
  const r = resolve.body;
  await attempt("resolve, form", () => form("/v1/flags/" + resolve.tid + "/resolve", r.slice(0, r.length - 1) + ',"x":"', '"}'));
  done(out);
})();
"#;

#[tokio::test]
async fn a_page_in_a_real_browser_gets_nothing_from_the_gate() {
    for needed in [MINI_BROWSER, DRIVER] {
        if !Path::new(needed).exists() {
            eprintln!(
                "SKIPPED: {needed} is missing (scripts/install-deps.sh installs WebKitGTK's driver)"
            );
            return;
        }
    }
    let issuer = Issuer::new();
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let gate = Gate::start(da.path(), "A", &issuer, None, Policy::default()).await;
    let other = Gate::start(db.path(), "B", &issuer, None, Policy::default()).await;
    let tid = TicketId::generate();
    let code = issuer.ticket(&tid);
    // Admitted here and at B: B's ledger would raise a flag here.
    assert_eq!(verdict(&gate.scan(&code, "a1").await).0, "admit");
    assert_eq!(verdict(&other.scan(&code, "b1").await).0, "admit");
    let mut ledger = format!("gatemesh-ledger 1 {EVENT}\n").into_bytes();
    ledger.extend(other.node.export_ledger().await.unwrap());
    other.stop().await;
    // A flagged ticket of this gate's own, for the resolve attempts.
    let flagged = TicketId::generate();
    let flagged_code = issuer.ticket(&flagged);
    let dc = tempfile::tempdir().unwrap();
    let third = Gate::start(dc.path(), "C", &issuer, None, Policy::default()).await;
    assert_eq!(verdict(&gate.scan(&flagged_code, "a1").await).0, "admit");
    assert_eq!(verdict(&third.scan(&flagged_code, "c1").await).0, "admit");
    let mut both = format!("gatemesh-ledger 1 {EVENT}\n").into_bytes();
    both.extend(third.node.export_ledger().await.unwrap());
    third.stop().await;
    let r = gate
        .client
        .post(format!("{}/v1/import", gate.base))
        .header("content-type", "application/octet-stream")
        .body(both)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let before = super::abuse::stored(&gate).await;
    assert_eq!(before["flags"], json!([flagged.as_str()]));

    // The attacker's page, on another loopback origin.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let page = format!("http://{}/", listener.local_addr().unwrap());
    let app = axum::Router::new().route(
        "/",
        axum::routing::get(|| async {
            axum::response::Html("<!doctype html><title>ads</title><body>a page</body>")
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });

    let work = tempfile::tempdir().unwrap();
    let (_x, display) = xvfb();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let _driver = Guard(
        Command::new(DRIVER)
            .arg(format!("--port={port}"))
            .env("DISPLAY", &display)
            .env("XDG_DATA_HOME", work.path().join("data"))
            .env("XDG_CACHE_HOME", work.path().join("cache"))
            .env("XDG_CONFIG_HOME", work.path().join("config"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("WebKitWebDriver runs"),
    );
    let http = gatemesh_node::edge::pinned_builder(None)
        .unwrap()
        .timeout(Duration::from_secs(60))
        .no_proxy()
        .build()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let started = Instant::now();
    let id = loop {
        let r = http
            .post(format!("{base}/session"))
            .json(&json!({ "capabilities": { "alwaysMatch": {
                "webkitgtk:browserOptions": { "binary": MINI_BROWSER, "args": ["--automation"] },
            }}}))
            .send()
            .await;
        match r {
            Ok(r) => {
                let v: Value = r.json().await.unwrap();
                let id = v["value"]["sessionId"].as_str().map(str::to_owned);
                break id.unwrap_or_else(|| panic!("no WebDriver session: {v}"));
            }
            Err(_) if started.elapsed() < Duration::from_secs(20) => {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("WebKitWebDriver did not answer: {e}"),
        }
    };
    let s = Session { http, base, id };

    s.go(&page).await;
    let fresh = issuer.ticket(&TicketId::generate());
    use base64::Engine;
    let out = s
        .run(
            ATTACKS,
            json!([
                gate.base,
                base64::engine::general_purpose::STANDARD.encode(&ledger),
                json!({ "code": fresh, "scanner": "page" }).to_string(),
                { "tid": flagged, "body": json!({ "action": "deny", "staff": "Mallory" }).to_string() },
            ]),
        )
        .await;
    eprintln!("what the page saw: {out:#}");
    let tried = out.as_object().expect("the attacks ran");
    assert_eq!(tried.len(), 8, "{out}");
    for (name, seen) in tried {
        // Sent, but unreadable (opaque, a form's frame) or refused before the body went
        // (preflight): never a response the page could read.
        let readable = seen["type"] == "basic" || seen["type"] == "cors";
        assert!(!readable, "{name}: the page read an answer: {seen}");
    }
    // The simple requests and the forms did reach the gate: the browser got answers it
    // keeps from the page (opaque; a cross-origin frame that loaded).
    for (name, kind) in [
        ("scan, simple fetch", "opaque"),
        ("resolve, simple fetch", "opaque"),
        ("import, simple fetch", "opaque"),
        ("scan, form", "form"),
        ("resolve, form", "form"),
    ] {
        assert_eq!(out[name]["type"], kind, "{name}: {}", out[name]);
    }

    // A page under another name for the gate's address (what DNS rebinding gives it):
    // same origin as the API, so it could read an answer; it gets a refusal.
    let port = gate.base.rsplit(':').next().unwrap();
    s.go(&format!(
        "http://rebound.localhost:{port}/v1/export?format=json"
    ))
    .await;
    let shown = s
        .run(
            "arguments[0](document.body ? document.body.innerText : '')",
            json!([]),
        )
        .await;
    let shown = shown.as_str().unwrap_or_default().to_owned();
    eprintln!("the rebound page shows: {shown}");
    assert!(shown.contains("wrong_host"), "{shown}");
    assert!(!shown.contains(tid.as_str()), "{shown}");

    let _ = s
        .http
        .delete(format!("{}/session/{}", s.base, s.id))
        .send()
        .await;
    assert_eq!(super::abuse::stored(&gate).await, before);
    assert_eq!(
        verdict(&gate.scan(&code, "a2").await),
        ("duplicate", "already_admitted")
    );
    gate.stop().await;
}
