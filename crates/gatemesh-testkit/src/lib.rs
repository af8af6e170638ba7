//! Helpers for gatemesh's integration tests. Everything here drives real parts: the
//! `gatemesh` binary, real network namespaces, real processes. Tests only; never a dependency
//! of shipped code.
//!
//! - [`World`]: an issuer key, a batch of tickets and (on demand) a mesh CA and device
//!   identities, made by the binary under test in a temporary directory.
//! - [`Net`]: gates on a virtual LAN — network namespaces joined by veth pairs to a bridge in
//!   a namespace of its own — with links that can be cut. mDNS multicast stays inside.
//! - [`pg::Database`]: a fresh PostgreSQL database on the test cluster, and
//!   [`on_both_backends!`], which runs a test once on SQLite and once on PostgreSQL.
//! - [`pg::Cluster`]: a PostgreSQL cluster of one test's own, which it may stop and start.
//! - [`jose`]: a `tools/jose` script (the npm `jose` library) as an outside referee.
//! - [`fuzz::post_bodies`]: fuzzed request bodies posted to an HTTP API, every answer held
//!   to the rule for bad input.
//! - [`bomb`]: automerge chunks that inflate far past the ledger's bound.
//! - [`author::sign_as_author`]: a dishonest device's crafted changes, signed with its key.
//! - [`mitm::Mitm`]: a TLS man in the middle on loopback, with a certificate of its own.
//! - [`eventually`], [`poll`] and [`poll_async`]: waiting until something holds.

use std::{
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use gatemesh_netns::Namespace;
use serde_json::Value;

pub mod author;
pub mod bomb;
pub mod fuzz;
pub mod mitm;
pub mod pg;

#[cfg(test)]
mod tests;

/// Copies the directory `from` (a stopped gate's data, say) to `to`, files and folders
/// within, as an operator's backup or a copy to a spare laptop would.
pub fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Polls `check` every 200 ms for up to 30 s; panics naming `what` if it never holds.
pub fn eventually(what: &str, check: impl FnMut() -> bool) {
    poll(
        what,
        Duration::from_secs(30),
        Duration::from_millis(200),
        check,
    );
}

/// Polls `check` every `every` until it holds; panics naming `what` once `within` has passed.
pub fn poll(what: &str, within: Duration, every: Duration, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(every);
    }
}

/// [`poll`] for an async `check`: it sleeps on the runtime between looks.
pub async fn poll_async(
    what: &str,
    within: Duration,
    every: Duration,
    mut check: impl AsyncFnMut() -> bool,
) {
    let deadline = Instant::now() + within;
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(every).await;
    }
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap_or_default()
}

/// Keys, tickets and identities for one event, made by `gatemesh` itself.
#[derive(Debug)]
pub struct World {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub bin: PathBuf,
    pub event: String,
    /// `(tid, code)` of every ticket issued.
    pub codes: Vec<(String, String)>,
}

impl World {
    /// An issuer key in `root/keys` and `count` GM1 tickets for `event` in `root/batch`.
    pub fn new(bin: &Path, event: &str, count: usize) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let root = dir.path().to_owned();
        let w = Self {
            _dir: dir,
            root,
            bin: bin.to_owned(),
            event: event.to_owned(),
            codes: Vec::new(),
        };
        w.run(&["keygen", "--out", p(&w.root.join("keys"))]);
        let codes = w.issue("batch", &["--count", &count.to_string()]);
        Self { codes, ..w }
    }

    /// Issues another batch of this event's tickets into `root/<batch>`: `args` say how many
    /// and of what (`--count 2 --product VIP --lists FILE`). Returns their `(tid, code)`.
    pub fn issue(&self, batch: &str, args: &[&str]) -> Vec<(String, String)> {
        let out = self.root.join(batch);
        let key = self.root.join("keys/issuer.key.pem");
        let mut all = vec!["issue", "--key", p(&key), "--event", &self.event];
        all.extend_from_slice(args);
        all.extend(["--no-png", "--no-pdf", "--out", p(&out)]);
        self.run(&all);
        let mut reader = csv::Reader::from_path(out.join("tickets.csv")).expect("tickets.csv");
        reader
            .records()
            .map(|r| r.map(|r| (r[0].to_owned(), r[4].to_owned())))
            .collect::<Result<_, _>>()
            .expect("a readable tickets.csv")
    }

    /// Runs the binary and insists that it succeeds.
    pub fn run(&self, args: &[&str]) -> String {
        let out = Command::new(&self.bin)
            .args(args)
            .output()
            .expect("gatemesh runs");
        assert!(
            out.status.success(),
            "gatemesh {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn issuer_pub(&self) -> PathBuf {
        self.root.join("keys/issuer.pub.pem")
    }

    /// The device identity `name` under this event's mesh CA (both made on first use).
    pub fn identity(&self, name: &str) -> PathBuf {
        let ca = self.root.join("ca");
        if !ca.exists() {
            self.run(&["mesh-ca", "--event", &self.event, "--out", p(&ca)]);
        }
        let dir = self.root.join(format!("id-{name}"));
        if !dir.exists() {
            self.run(&["enroll", "--ca", p(&ca), "--name", name, "--out", p(&dir)]);
        }
        dir
    }
}

/// Starts `command` and reads the one JSON line a gatemesh service prints when ready.
pub fn spawn_ready(mut command: Command) -> (Child, Value) {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the process starts");
    let mut line = String::new();
    if let Some(out) = child.stdout.take() {
        let _ = BufReader::new(out).read_line(&mut line);
    }
    let ready = serde_json::from_str(&line)
        .unwrap_or_else(|_| panic!("{command:?} did not start: {line:?}"));
    (child, ready)
}

/// The token of the gate whose ready line is `ready` (`gatemesh gate` names the file
/// holding it as `api_token`).
pub fn api_token(ready: &Value) -> String {
    let file = ready["api_token"]
        .as_str()
        .unwrap_or_else(|| panic!("no api_token in the ready line {ready}"));
    std::fs::read_to_string(file)
        .unwrap_or_else(|e| panic!("reading {file}: {e}"))
        .trim()
        .to_owned()
}

/// A client that sends `token` as `Authorization: Bearer` with every request, as the gate's
/// operator; `timeout` bounds each request.
pub fn api_client(token: &str, timeout: Duration) -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    let value = format!("Bearer {token}")
        .parse()
        .expect("a token is a header value");
    headers.insert(reqwest::header::AUTHORIZATION, value);
    // reqwest is built without a crypto provider of its own: ring, as everywhere else.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .default_headers(headers)
        .timeout(timeout)
        .build()
        .expect("a client")
}

/// A virtual LAN: one hub namespace holding a bridge (multicast snooping off), and one
/// namespace per host with `eth0` at 10.77.0.(i+1)/24, built from `gatemesh-netns` (the
/// rehearsal's namespaces come from there too). Everything made is deleted on drop,
/// processes started through it are killed first, also when a test fails.
#[derive(Debug)]
pub struct Net {
    children: Vec<Child>,
    /// The API token of the gate on each host, sent by [`Net::http`] from there.
    tokens: std::collections::HashMap<usize, String>,
    // Hosts before the hub: fields drop in this order.
    hosts: Vec<Namespace>,
    hub: Namespace,
}

fn must<T>(step: Result<T, gatemesh_netns::Error>) -> T {
    step.unwrap_or_else(|e| panic!("{e}"))
}

impl Net {
    /// `n` hosts; with `multicast`, each gets a `224.0.0.0/4` route so mDNS works. `None`,
    /// with a message, where namespaces cannot be made (not root, no iproute2).
    pub fn new(n: usize, multicast: bool) -> Option<Self> {
        if !gatemesh_netns::available() {
            eprintln!(
                "SKIPPED: network-namespace tests need root and iproute2 (the README test command runs as root)"
            );
            return None;
        }
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let k = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // What a test process killed outright (a timeout) left behind goes first.
        must(gatemesh_netns::remove_orphans("gmt"));
        let prefix = format!("gmt{}x{k}", std::process::id());
        // Built into `net` step by step, so a failure half-way still cleans up on drop.
        let mut net = Self {
            children: Vec::new(),
            tokens: std::collections::HashMap::new(),
            hosts: Vec::new(),
            hub: must(Namespace::create(format!("{prefix}hub"))),
        };
        must(net.hub.add_bridge("br0"));
        for i in 0..n {
            net.hosts
                .push(must(Namespace::create(format!("{prefix}h{i}"))));
            let host = &net.hosts[i];
            let cidr = format!("{}/24", net.ip(i));
            must(net.hub.plug(&format!("hv{i}"), "br0", host, "eth0", &cidr));
            if multicast {
                must(host.route_multicast("eth0"));
            }
        }
        Some(net)
    }

    pub fn ip(&self, i: usize) -> String {
        format!("10.77.0.{}", i + 1)
    }

    /// Cuts (`up = false`) or restores host `i`'s cable.
    pub fn link(&self, i: usize, up: bool) {
        must(self.hub.set_link(&format!("hv{i}"), up));
    }

    /// Makes host `i`'s cable a slow link both ways, at most `rate` (`64kbit`) each way
    /// (see [`Namespace::throttle`]).
    pub fn throttle(&self, i: usize, rate: &str) {
        must(self.hub.throttle(&format!("hv{i}"), rate));
        must(self.hosts[i].throttle("eth0", rate));
    }

    /// Lifts [`Net::throttle`].
    pub fn unthrottle(&self, i: usize) {
        must(self.hub.unthrottle(&format!("hv{i}")));
        must(self.hosts[i].unthrottle("eth0"));
    }

    /// A command that runs `program` inside host `i`.
    pub fn command(&self, i: usize, program: &Path) -> Command {
        self.hosts[i].command(program)
    }

    /// Starts a gatemesh service inside the network (see [`spawn_ready`]); returns its ready
    /// line and a handle for [`Net::kill`]. The process is killed when the network goes.
    pub fn start(&mut self, command: Command) -> (Value, usize) {
        let (child, ready) = spawn_ready(command);
        self.children.push(child);
        (ready, self.children.len() - 1)
    }

    /// SIGKILL, as a crash or a power cut would.
    pub fn kill(&mut self, process: usize) {
        let child = &mut self.children[process];
        let _ = child.kill();
        let _ = child.wait();
    }

    /// Host `i`'s gate wants `token` (see [`api_token`]); [`Net::http`] sends it from there.
    pub fn set_token(&mut self, i: usize, token: String) {
        self.tokens.insert(i, token);
    }

    /// An HTTP request made from inside host `i` (with curl), answered as JSON (`Null` for an
    /// answer that does not read); with the API token of the gate there, if one was set.
    pub fn http(&self, i: usize, method: &str, url: &str, body: Option<Value>) -> Value {
        self.requests(i, method, url, &[body]).remove(0)
    }

    /// Many requests to one URL from inside host `i`, one after another on one connection
    /// (one curl), each answered as [`Net::http`] answers, in order. For hundreds of scans,
    /// where [`Net::http`] would start a process for each.
    pub fn http_many(&self, i: usize, method: &str, url: &str, bodies: &[Value]) -> Vec<Value> {
        let bodies: Vec<Option<Value>> = bodies.iter().cloned().map(Some).collect();
        self.requests(i, method, url, &bodies)
    }

    fn requests(&self, i: usize, method: &str, url: &str, bodies: &[Option<Value>]) -> Vec<Value> {
        use std::fmt::Write as _;
        // A curl config on stdin: the token and the bodies are on no command line.
        let quoted = |s: &str| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""));
        let mut config = String::new();
        for (k, body) in bodies.iter().enumerate() {
            if k > 0 {
                config.push_str("next\n");
            }
            let _ = writeln!(config, "url = {}", quoted(url));
            let _ = writeln!(config, "request = {}", quoted(method));
            let _ = writeln!(config, "max-time = 10\nsilent\nwrite-out = \"\\n\"");
            if let Some(token) = self.tokens.get(&i) {
                let _ = writeln!(
                    config,
                    "header = {}",
                    quoted(&format!("authorization: Bearer {token}"))
                );
            }
            if let Some(body) = body {
                let _ = writeln!(config, "header = \"content-type: application/json\"");
                let _ = writeln!(config, "data = {}", quoted(&body.to_string()));
            }
        }
        let mut child = self.hosts[i]
            .command("curl")
            .args(["-K", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("curl runs");
        if let Some(mut stdin) = child.stdin.take() {
            use std::io::Write;
            stdin
                .write_all(config.as_bytes())
                .expect("curl reads its config");
        }
        let out = child.wait_with_output().expect("curl runs");
        if bodies.len() == 1 {
            // One answer: all of it, on however many lines.
            return vec![serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)];
        }
        let mut answers: Vec<Value> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or(Value::Null))
            .collect();
        answers.resize(bodies.len(), Value::Null);
        answers
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        // The processes go first; the namespaces (hosts, then the hub) when the fields drop.
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Runs `tools/jose/SCRIPT` (the npm `jose` library as an outside referee) with `request` on
/// its standard input and returns the one JSON line it prints. Panics when `npm ci` has not
/// been run in tools/jose (the test command runs it): the check must not pass by skipping.
pub fn jose(script: &str, request: &Value) -> Value {
    use std::io::Write;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools/jose");
    assert!(
        dir.join("node_modules/jose").exists(),
        "run `npm ci` in tools/jose first (scripts/install-deps.sh does)"
    );
    let mut child = Command::new("node")
        .arg(dir.join(script))
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
    let out = child.wait_with_output().unwrap();
    let answer: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{script} printed no JSON ({e}): {out:?}"));
    assert!(out.status.success(), "{script} failed: {answer}");
    answer
}
