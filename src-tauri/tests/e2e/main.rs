//! The real app, end to end: `gatemesh-app --demo` under Xvfb, driven through WebDriver
//! (`tauri-driver` in front of WebKitGTK's `WebKitWebDriver`), as door staff would use it:
//! sign in (a name tapped, a wrong PIN refused, then the right one), a keyboard-wedge scanner admits a ticket (green), the same code from a second
//! scanner is a duplicate naming the first gate (yellow), a forged code is refused (red),
//! and a ticket admitted by two gates that could not see each other is flagged and resolved
//! on the Flags screen, with the audit to show for it.
//!
//! With `UPDATE_SCREENSHOTS=1` the screenshots it takes of each screen are written to
//! `docs/screenshots/` (they are committed and shown in the README).

use std::{
    io::{BufRead, BufReader},
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use serde_json::{Value, json};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A process killed when the test ends, however it ends.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A process started in a process group of its own, killed with everything it started
/// (tauri-driver starts WebKitWebDriver, which starts the app).
struct GroupGuard(Child);

impl GroupGuard {
    fn spawn(command: &mut Command) -> std::io::Result<Self> {
        use std::os::unix::process::CommandExt;
        command.process_group(0).spawn().map(Self)
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        // `--`: a negative number after it is a process group, not a signal.
        let _ = Command::new("kill")
            .args(["-s", "KILL", "--", &format!("-{}", self.0.id())])
            .status();
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// An X display of our own (Xvfb on a free display number, no TCP).
fn xvfb() -> (Guard, String) {
    for n in 90..200 {
        if Path::new(&format!("/tmp/.X{n}-lock")).exists()
            || Path::new(&format!("/tmp/.X11-unix/X{n}")).exists()
        {
            continue;
        }
        let display = format!(":{n}");
        let child = Command::new("Xvfb")
            .args([&display, "-screen", "0", "1280x800x24", "-nolisten", "tcp"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("Xvfb runs (scripts/install-deps.sh installs it)");
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

fn tauri_driver() -> PathBuf {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .unwrap_or_default();
    let installed = home.join("bin/tauri-driver");
    if installed.exists() {
        installed
    } else {
        PathBuf::from("tauri-driver")
    }
}

struct Driver {
    http: reqwest::blocking::Client,
    base: String,
    session: String,
}

impl Driver {
    fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}/session/{}{path}", self.base, self.session);
        let mut r = self.http.request(method, &url);
        if let Some(b) = body {
            r = r.json(&b);
        }
        let v: Value = r.send().unwrap().json().unwrap();
        v["value"].clone()
    }

    fn find(&self, css: &str) -> Option<String> {
        let v = self.call(
            reqwest::Method::POST,
            "/element",
            Some(json!({ "using": "css selector", "value": css })),
        );
        // An error ("no such element") is an object too: not an element.
        v.as_object()
            .filter(|o| !o.contains_key("error"))
            .and_then(|o| o.values().next())
            .and_then(Value::as_str)
            .map(str::to_owned)
    }

    /// Waits (up to 20 s) for an element, returning its id.
    fn wait(&self, css: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(id) = self.find(css) {
                return id;
            }
            assert!(Instant::now() < deadline, "no element {css:?} appeared");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn wait_text(&self, css: &str, what: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(id) = self.find(css) {
                let t = self.text(&id);
                if what(&t) {
                    return t;
                }
                assert!(
                    Instant::now() < deadline,
                    "{css:?} never matched; last: {t:?}"
                );
            }
            assert!(Instant::now() < deadline, "no element {css:?} appeared");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn text(&self, id: &str) -> String {
        self.call(reqwest::Method::GET, &format!("/element/{id}/text"), None)
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    fn click(&self, css: &str) {
        let id = self.wait(css);
        let answer = self.call(
            reqwest::Method::POST,
            &format!("/element/{id}/click"),
            Some(json!({})),
        );
        assert!(answer.get("error").is_none(), "clicking {css}: {answer}");
    }

    fn type_into(&self, css: &str, text: &str) {
        let id = self.wait(css);
        self.call(
            reqwest::Method::POST,
            &format!("/element/{id}/value"),
            Some(json!({ "text": text })),
        );
    }

    /// Picks an option of a `<select>` the way a change by hand ends: value set, `change`
    /// fired. (Clicking an `<option>` through WebKitWebDriver opens GTK's popup menu, which
    /// would then eat the scanner's keys.)
    fn choose(&self, css: &str, value: &str) {
        self.wait(css);
        let done = self.call(
            reqwest::Method::POST,
            "/execute/sync",
            Some(json!({
                "script": "const s = document.querySelector(arguments[0]); s.value = arguments[1]; s.dispatchEvent(new Event('change', { bubbles: true })); return s.value;",
                "args": [css, value],
            })),
        );
        assert_eq!(done, json!(value), "{css} has no option {value:?}");
    }

    /// Types `text` then Enter as key events to whatever has focus, the way a USB
    /// keyboard-wedge scanner does (no field clicked first).
    fn wedge(&self, text: &str) {
        let mut actions = Vec::new();
        for c in text.chars().chain(['\u{E007}']) {
            actions.push(json!({ "type": "keyDown", "value": c.to_string() }));
            actions.push(json!({ "type": "keyUp", "value": c.to_string() }));
        }
        self.call(
            reqwest::Method::POST,
            "/actions",
            Some(json!({ "actions": [{ "type": "key", "id": "wedge", "actions": actions }] })),
        );
        self.call(reqwest::Method::DELETE, "/actions", None);
    }

    /// Scrolls the page so that `css` is in view (before a screenshot of it).
    fn scroll_to(&self, css: &str) {
        self.wait(css);
        self.call(
            reqwest::Method::POST,
            "/execute/sync",
            Some(json!({
                "script": "document.querySelector(arguments[0]).scrollIntoView({ block: 'center' });",
                "args": [css],
            })),
        );
    }

    /// Runs a script in the page that calls a Tauri command.
    fn invoke(&self, command: &str) -> Value {
        self.call(
            reqwest::Method::POST,
            "/execute/async",
            Some(json!({
                "script": "const done = arguments[arguments.length - 1]; window.__TAURI_INTERNALS__.invoke(arguments[0]).then(done, e => done({ error: e }));",
                "args": [command],
            })),
        )
    }

    fn screenshot(&self, name: &str, out: &Path) {
        use base64::Engine;
        let png = self.call(reqwest::Method::GET, "/screenshot", None);
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(png.as_str().unwrap_or_default())
            .unwrap();
        assert!(bytes.starts_with(b"\x89PNG"), "a PNG screenshot");
        std::fs::write(out.join(format!("{name}.png")), &bytes).unwrap();
        if std::env::var_os("UPDATE_SCREENSHOTS").is_some() {
            let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/screenshots");
            std::fs::create_dir_all(&docs).unwrap();
            std::fs::write(docs.join(format!("{name}.png")), &bytes).unwrap();
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self
            .http
            .delete(format!("{}/session/{}", self.base, self.session))
            .send();
    }
}

/// The app under test; `GATEMESH_APP` points at another build (e.g. release, to time its
/// start for BENCHMARKS.md).
fn app_binary() -> String {
    std::env::var("GATEMESH_APP").unwrap_or_else(|_| env!("CARGO_BIN_EXE_gatemesh-app").into())
}

fn gatemesh_cli() -> PathBuf {
    let app = PathBuf::from(env!("CARGO_BIN_EXE_gatemesh-app"));
    let cli = app.with_file_name("gatemesh");
    assert!(
        cli.exists(),
        "{} is missing: build the workspace (cargo build --workspace) first",
        cli.display()
    );
    cli
}

/// A headless gate of the same event that never meets the app on the network: it admits a
/// ticket, then its ledger is carried to the app (as `gatemesh export` / import would).
fn admitted_elsewhere(demo: &Path, event: &str, code: &str) -> Vec<u8> {
    let data = demo.join("far-gate");
    // A gate of the same event (enrolled under its mesh CA, so its records are signed and
    // the app's gate takes them), with no mesh to the app's.
    let identity = demo.join("far-gate-identity");
    let enrolled = Command::new(gatemesh_cli())
        .args(["enroll", "--ca"])
        .arg(demo.join("mesh-ca"))
        .args(["--name", "Far-Gate", "--out"])
        .arg(&identity)
        .output()
        .unwrap();
    assert!(
        enrolled.status.success(),
        "{}",
        String::from_utf8_lossy(&enrolled.stderr)
    );
    let mut child = Guard(
        Command::new(gatemesh_cli())
            .args(["gate", "--data", data.to_str().unwrap(), "--event", event])
            .args([
                "--name",
                "Far-Gate",
                "--api",
                "127.0.0.1:0",
                "--durability",
                "process",
                "--discovery",
                "off",
                "--mesh",
                "127.0.0.1:0",
            ])
            .arg("--identity")
            .arg(&identity)
            .arg("--issuer")
            .arg(demo.join("issuer.pub.pem"))
            // On the demo's main-entrance list, as the app's gate is: one ticket used on one
            // list at both is a copy.
            .arg("--lists")
            .arg(demo.join("lists.json"))
            .args(["--list", "main"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    BufReader::new(child.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let ready: Value = serde_json::from_str(&line).unwrap();
    let api = ready["api"].as_str().unwrap();
    let token = std::fs::read_to_string(ready["api_token"].as_str().unwrap()).unwrap();
    let r: Value = http_client()
        .build()
        .unwrap()
        .post(format!("http://{api}/v1/scan"))
        .bearer_auth(token.trim())
        .json(&json!({ "code": code, "scanner": "far-1" }))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(r["verdict"], "admit");
    drop(child);
    let file = demo.join("far-gate.ledger");
    let out = Command::new(gatemesh_cli())
        .args(["export", "--data", data.to_str().unwrap(), "--event", event])
        .arg("--out")
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read(file).unwrap()
}

/// Held while a test drives an app: two WebKitWebDriver sessions at once (nextest runs each
/// test in a process of its own) get in each other's way, so the tests take turns.
fn one_app_at_a_time() -> std::fs::File {
    let lock = std::fs::File::create(std::env::temp_dir().join("gatemesh-app-e2e.lock")).unwrap();
    lock.lock().unwrap();
    lock
}

/// The app under Xvfb with `args`, behind tauri-driver, and a WebDriver session on it (the
/// webview's storage in fresh XDG directories under `work`); when the session was asked for.
fn start_app(work: &Path, args: &[&str]) -> (Guard, GroupGuard, Driver, Instant) {
    let (x, display) = xvfb();
    let (port, native) = (free_port(), free_port());
    let driver = GroupGuard::spawn(
        Command::new(tauri_driver())
            .args([
                "--port",
                &port.to_string(),
                "--native-port",
                &native.to_string(),
            ])
            .args(["--native-driver", "/usr/bin/WebKitWebDriver"])
            .env("DISPLAY", &display)
            // The webview keeps its storage (the scanner chosen last time…) under the XDG
            // data directory: a fresh one, so no run sees another's.
            .env("XDG_DATA_HOME", work.join("xdg-data"))
            .env("XDG_CONFIG_HOME", work.join("xdg-config"))
            .env("XDG_CACHE_HOME", work.join("xdg-cache"))
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    )
    .expect("tauri-driver runs (scripts/install-deps.sh installs it)");
    let http = http_client()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let started = Instant::now();
    let session = loop {
        let r = http
            .post(format!("{base}/session"))
            .json(&json!({ "capabilities": { "alwaysMatch": {
                "browserName": "wry",
                "tauri:options": {
                    "application": app_binary(),
                    "args": args,
                },
            }}}))
            .send();
        match r {
            Ok(r) => {
                let v: Value = r.json().unwrap();
                let id = v["value"]["sessionId"].as_str().map(str::to_owned);
                break id.unwrap_or_else(|| panic!("no WebDriver session: {v}"));
            }
            Err(_) if started.elapsed() < Duration::from_secs(20) => {
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(e) => panic!("tauri-driver did not answer: {e}"),
        }
    };
    let d = Driver {
        http,
        base,
        session,
    };
    (x, driver, d, started)
}

#[test]
fn door_staff_scan_and_resolve_a_flag_in_the_real_app() {
    let _turn = one_app_at_a_time();
    let work = tempfile::tempdir().unwrap();
    let demo = work.path().join("demo");
    let shots = work.path().join("screens");
    std::fs::create_dir_all(&shots).unwrap();
    let (_x, _driver, d, started) =
        start_app(work.path(), &["--demo", "--data", demo.to_str().unwrap()]);

    // Sign in as the demo's supervisor.
    d.wait("#pin-input");
    // Launch to a usable screen, first start (the demo sets itself up): BENCHMARKS.md.
    eprintln!(
        "sign-in screen {:?} after the session was asked for",
        started.elapsed()
    );
    // The staff list arrives with the app's info; the screenshot shows it.
    d.wait("button[data-name=\"Kim\"]");
    d.wait_text(".staff-pick", |t| t.contains("Alex"));
    d.screenshot("sign-in", &shots);
    // A wrong PIN for the name is refused; then the right one.
    d.click("button[data-name=\"Kim\"]");
    d.type_into("#pin-input", "1111");
    d.click("#sign-in");
    d.wait_text(".pin-form .error", |t| t.contains("Wrong PIN"));
    // (The desk makes the next try for Kim wait a second.)
    std::thread::sleep(Duration::from_millis(1100));
    d.type_into("#pin-input", "2222");
    d.click("#sign-in");
    d.wait_text("#signed-in", |t| t.contains("Kim"));
    d.wait("#verdict[data-verdict=\"idle\"]");

    let csv = std::fs::read_to_string(demo.join("tickets/tickets.csv")).unwrap();
    let tickets: Vec<(String, String)> = csv
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[0].to_owned(), f[4].to_owned())
        })
        .collect();
    let event = csv
        .lines()
        .nth(1)
        .unwrap()
        .split(',')
        .nth(1)
        .unwrap()
        .to_owned();

    // A keyboard-wedge scanner: green.
    d.choose("#scanner-select", "Lane 1");
    d.wedge(&tickets[0].1);
    d.wait("#verdict[data-verdict=\"admit\"]");
    d.wait_text("#admitted-count", |t| t.starts_with('1'));
    d.screenshot("scan-admit", &shots);

    // The same code from a second scanner: yellow, naming the first gate.
    d.choose("#scanner-select", "Lane 2");
    d.wedge(&tickets[0].1);
    d.wait("#verdict[data-verdict=\"duplicate\"]");
    let text = d.wait_text("#verdict", |t| t.contains("Main-Entrance"));
    assert!(
        text.contains("Lane 1"),
        "names the first scanner too: {text}"
    );
    d.screenshot("scan-duplicate", &shots);

    // A forged code (one character of the signature changed): red.
    let mut forged: Vec<char> = tickets[1].1.chars().collect();
    let i = forged.len() - 3;
    forged[i] = if forged[i] == 'A' { 'B' } else { 'A' };
    d.wedge(&forged.into_iter().collect::<String>());
    d.wait("#verdict[data-verdict=\"reject\"]");
    d.screenshot("scan-reject", &shots);

    // A crew pass at the main entrance (the demo's last tickets): red, and the verdict says
    // it is for another list.
    let crew = &tickets[tickets.len() - 1];
    d.wedge(&crew.1);
    d.wait_text("#verdict", |t| t.contains("Not for this entrance"));
    d.screenshot("scan-not-on-list", &shots);

    // A guest whose phone died: found by part of their name, checked in by Kim, and their
    // code shown at another lane afterwards is yellow.
    let (guest, guest_code) = &tickets[3];
    d.type_into("#guest-query", "Edsger Love");
    d.click("#guest-find");
    let check_in = format!("button[data-tid=\"{guest}\"]");
    d.wait(&check_in);
    d.wait_text("#guest-results", |t| t.contains("Edsger Lovelace"));
    d.scroll_to("#guest-results");
    d.screenshot("scan-search", &shots);
    d.click(&check_in);
    d.wait("#verdict[data-verdict=\"admit\"]");
    d.wait_text("#guest-results", |t| t.contains("In at Main-Entrance"));
    d.choose("#scanner-select", "Lane 1");
    d.wedge(guest_code);
    d.wait("#verdict[data-verdict=\"duplicate\"]");

    // A ticket admitted here and at a gate that never met this one: flagged.
    let (tid, code) = &tickets[2];
    let far = admitted_elsewhere(&demo, &event, code);
    d.wedge(code);
    d.wait("#verdict[data-verdict=\"admit\"]");
    let info = d.invoke("app_info");
    let api = info["api"]
        .as_str()
        .unwrap_or_else(|| panic!("no API: {info}"));
    let token_file = info["api_token_file"]
        .as_str()
        .unwrap_or_else(|| panic!("no API token file: {info}"));
    let token = std::fs::read_to_string(token_file).unwrap();
    let imported = http_client()
        .build()
        .unwrap()
        .post(format!("{api}/v1/import"))
        .bearer_auth(token.trim())
        .header("content-type", "application/octet-stream")
        .body(far)
        .send()
        .unwrap();
    let status = imported.status();
    assert!(
        status.is_success(),
        "the import: {status} {}",
        imported.text().unwrap_or_default()
    );
    d.click("#nav-flags");
    let flag = format!("[data-flag-tid=\"{tid}\"]");
    d.wait(&flag);
    d.screenshot("flags", &shots);
    d.type_into(
        &format!("{flag} textarea[data-note]"),
        "same person, phone and paper",
    );
    d.click(&format!("{flag} button[data-action=\"accept\"]"));
    let audit = d.wait_text(
        &format!("[data-resolved-tid=\"{tid}\"] [data-audit]"),
        |t| t.contains("resolve:accept"),
    );
    assert!(
        audit.contains("Kim"),
        "the audit names who resolved it: {audit}"
    );
    d.screenshot("flags-resolved", &shots);

    d.click("#nav-gates");
    d.wait("[data-gate=\"Main-Entrance\"]");
    d.wait("[data-gate=\"Side-Door\"]");
    // This gate's list, who is inside it, and what it refused (the forged code, the crew
    // pass).
    d.wait_text("#gate-lists", |t| t.contains("Main entrance"));
    let refused = d.wait_text("#gate-refusals", |t| t.contains("Not for this entrance"));
    assert!(refused.contains("signature"), "the forged code: {refused}");
    d.screenshot("gates", &shots);
    d.click("#nav-setup");
    std::thread::sleep(Duration::from_millis(300));
    d.screenshot("setup", &shots);

    // The manager opens this entrance to the crew too: ticked on Setup, it counts from the
    // next scan, and the crew pass refused before is green.
    d.click("#sign-out");
    d.wait("#pin-input");
    d.click("button[data-name=\"Alex\"]");
    d.type_into("#pin-input", "3333");
    d.click("#sign-in");
    d.wait_text("#signed-in", |t| t.contains("Alex"));
    d.click("#nav-setup");
    d.wait("input[data-list=\"backstage\"]");
    d.click("input[data-list=\"backstage\"]");
    d.click("#lists-save");
    let said = d.wait_text(".lists [role]", |t| !t.is_empty());
    assert!(said.contains("Saved"), "the lists were not saved: {said}");
    d.scroll_to(".lists");
    d.screenshot("setup-lists", &shots);
    d.click("#nav-scan");
    d.wait("#verdict");
    // The scan screen reads the keyboard once it has painted (an effect): keys typed in the
    // moment it appears would go nowhere.
    std::thread::sleep(Duration::from_millis(500));
    d.wedge(&crew.1);
    d.wait("#verdict[data-verdict=\"admit\"]");
    d.wait_text("#verdict", |t| t.contains("Backstage"));
}

/// A blocking HTTP client for the app's plain-HTTP local API (reqwest's rustls backend has no
/// provider of its own: ring, as everywhere in gatemesh).
fn http_client() -> reqwest::blocking::ClientBuilder {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::blocking::Client::builder()
}

#[test]
fn a_new_laptop_opens_the_demo_event_from_its_first_run_screen() {
    let _turn = one_app_at_a_time();
    let work = tempfile::tempdir().unwrap();
    let data = work.path().join("gate");
    let (_x, _driver, d, _) = start_app(work.path(), &["--data", data.to_str().unwrap()]);
    // Nothing set up: the first-run screen, with its three ways.
    d.wait_text("h1", |t| t.contains("Set up this gate"));
    d.click("#open-demo");
    // The demo's sign-in screen, with the PINs it shows.
    d.wait("#pin-input");
    d.wait_text(".demo-pins", |t| t.contains("1111"));
    d.click("button[data-name=\"Kim\"]");
    d.type_into("#pin-input", "2222");
    d.click("#sign-in");
    d.wait_text("#signed-in", |t| t.contains("Kim"));
    // The demo lives apart from the gate's own directory, which is still not set up.
    assert!(data.join("demo").join("app.json").exists());
    assert!(!data.join("app.json").exists());
}
