//! Gates on a real (virtual) LAN: each in its own network namespace, joined by veth pairs to a
//! bridge that lives in a namespace of its own, so nothing touches the machine's own network
//! and mDNS multicast stays inside. Discovery, partitions cut with `ip link set … down`,
//! static peers. Needs root and iproute2; without them the tests say so and skip, but the
//! README's test command runs as root and runs them.

use std::{
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use serde_json::{Value, json};

const EVENT: &str = "LAN-2026";
const MESH_PORT: u16 = 7400;

fn run(args: &[&str]) -> bool {
    Command::new(args[0])
        .args(&args[1..])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn must(args: &[&str]) {
    let out = Command::new(args[0]).args(&args[1..]).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A test network: one hub namespace with a bridge, one namespace per gate.
struct Net {
    hub: String,
    hosts: Vec<String>,
    children: Vec<Child>,
}

impl Net {
    /// `None` (with a message) where namespaces cannot be made.
    fn new(n: usize, multicast: bool) -> Option<Self> {
        let uid = Command::new("id")
            .arg("-u")
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
        if uid.as_deref() != Some("0") || !run(&["ip", "-V"]) {
            eprintln!(
                "SKIPPED: network-namespace tests need root and iproute2 (the README test command runs as root)"
            );
            return None;
        }
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let k = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let prefix = format!("gmt{}x{k}", std::process::id());
        let mut net = Self {
            hub: format!("{prefix}hub"),
            hosts: Vec::new(),
            children: Vec::new(),
        };
        must(&["ip", "netns", "add", &net.hub]);
        must(&["ip", "-n", &net.hub, "link", "set", "lo", "up"]);
        must(&[
            "ip",
            "-n",
            &net.hub,
            "link",
            "add",
            "br0",
            "type",
            "bridge",
            "mcast_snooping",
            "0",
        ]);
        must(&["ip", "-n", &net.hub, "link", "set", "br0", "up"]);
        for i in 0..n {
            let ns = format!("{prefix}h{i}");
            net.hosts.push(ns.clone());
            must(&["ip", "netns", "add", &ns]);
            let port = format!("hv{i}");
            must(&[
                "ip", "-n", &net.hub, "link", "add", &port, "type", "veth", "peer", "name", "eth0",
                "netns", &ns,
            ]);
            must(&[
                "ip", "-n", &net.hub, "link", "set", &port, "master", "br0", "up",
            ]);
            must(&[
                "ip",
                "-n",
                &ns,
                "addr",
                "add",
                &format!("{}/24", net.ip(i)),
                "dev",
                "eth0",
            ]);
            must(&["ip", "-n", &ns, "link", "set", "eth0", "up"]);
            must(&["ip", "-n", &ns, "link", "set", "lo", "up"]);
            if multicast {
                must(&[
                    "ip",
                    "-n",
                    &ns,
                    "route",
                    "add",
                    "224.0.0.0/4",
                    "dev",
                    "eth0",
                ]);
            }
        }
        Some(net)
    }

    fn ip(&self, i: usize) -> String {
        format!("10.77.0.{}", i + 1)
    }

    fn mesh_addr(&self, i: usize) -> String {
        format!("{}:{MESH_PORT}", self.ip(i))
    }

    /// Cuts (or restores) host `i`'s cable.
    fn link(&self, i: usize, up: bool) {
        must(&[
            "ip",
            "-n",
            &self.hub,
            "link",
            "set",
            &format!("hv{i}"),
            if up { "up" } else { "down" },
        ]);
    }

    /// Starts `gatemesh gate` inside host `i`; returns its API base URL (inside that host).
    fn gate(&mut self, i: usize, w: &World, extra: &[String]) -> String {
        self.gate_process(i, w, extra).0
    }

    /// Like `gate`, and also returns the index of its process for `kill`.
    fn gate_process(&mut self, i: usize, w: &World, extra: &[String]) -> (String, usize) {
        let name = format!("gate-{}", (b'a' + i as u8) as char);
        let mut child = Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.hosts[i],
                env!("CARGO_BIN_EXE_gatemesh"),
                "gate",
            ])
            .arg("--data")
            .arg(w.root.join(format!("data-{name}")))
            .args(["--event", EVENT, "--name", &name, "--api", "127.0.0.1:7070"])
            .arg("--issuer")
            .arg(w.root.join("keys/issuer.pub.pem"))
            .arg("--identity")
            .arg(w.identity(&name))
            .args(["--mesh", &format!("0.0.0.0:{MESH_PORT}")])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let ready: Value = serde_json::from_str(&line)
            .unwrap_or_else(|_| panic!("{name} did not start: {line:?}"));
        self.children.push(child);
        (
            format!("http://{}", ready["api"].as_str().unwrap()),
            self.children.len() - 1,
        )
    }

    /// SIGKILL, as a power cut or a crash would.
    fn kill(&mut self, process: usize) {
        let child = &mut self.children[process];
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// An HTTP request from inside host `i` (the API listens on that host's loopback).
    fn http(&self, i: usize, method: &str, url: &str, body: Option<Value>) -> Value {
        let mut cmd = Command::new("ip");
        cmd.args([
            "netns",
            "exec",
            &self.hosts[i],
            "curl",
            "-s",
            "--max-time",
            "10",
            "-X",
            method,
            url,
        ]);
        if let Some(b) = body {
            cmd.args(["-H", "content-type: application/json", "-d", &b.to_string()]);
        }
        let out = cmd.output().unwrap();
        serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for ns in self.hosts.iter().chain([&self.hub]) {
            run(&["ip", "netns", "del", ns]);
        }
    }
}

struct World {
    _dir: tempfile::TempDir,
    root: PathBuf,
    codes: Vec<(String, String)>,
}

fn gm(args: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_gatemesh"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "gatemesh {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

impl World {
    fn new() -> Self {
        Self::with_tickets(10)
    }

    fn with_tickets(count: usize) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_owned();
        gm(&["keygen", "--out", p(&root.join("keys"))]);
        gm(&[
            "issue",
            "--key",
            p(&root.join("keys/issuer.key.pem")),
            "--event",
            EVENT,
            "--count",
            &count.to_string(),
            "--no-png",
            "--no-pdf",
            "--out",
            p(&root.join("batch")),
        ]);
        gm(&["mesh-ca", "--event", EVENT, "--out", p(&root.join("ca"))]);
        let mut reader = csv::Reader::from_path(root.join("batch/tickets.csv")).unwrap();
        let codes = reader
            .records()
            .map(|r| {
                let r = r.unwrap();
                (r[0].to_owned(), r[4].to_owned())
            })
            .collect();
        Self {
            _dir: dir,
            root,
            codes,
        }
    }

    fn identity(&self, name: &str) -> PathBuf {
        let dir = self.root.join(format!("id-{name}"));
        if !dir.exists() {
            gm(&[
                "enroll",
                "--ca",
                p(&self.root.join("ca")),
                "--name",
                name,
                "--out",
                p(&dir),
            ]);
        }
        dir
    }
}

fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn scan(net: &Net, i: usize, api: &str, code: &str, scanner: &str) -> Value {
    net.http(
        i,
        "POST",
        &format!("{api}/v1/scan"),
        Some(json!({ "code": code, "scanner": scanner })),
    )
}

fn peer_names(net: &Net, i: usize, api: &str) -> Vec<String> {
    let status = net.http(i, "GET", &format!("{api}/v1/status"), None);
    let mut names: Vec<String> = status["peers"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|p| p["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn knows(net: &Net, i: usize, api: &str, tid: &str, gate: &str) -> bool {
    let t = net.http(i, "GET", &format!("{api}/v1/tickets/{tid}"), None);
    t["redemptions"]
        .as_array()
        .is_some_and(|rs| rs.iter().any(|r| r["gate"] == gate))
}

fn flagged(net: &Net, i: usize, api: &str, tid: &str) -> bool {
    let f = net.http(i, "GET", &format!("{api}/v1/flags"), None);
    f["flags"]
        .as_array()
        .is_some_and(|fs| fs.iter().any(|x| x["tid"] == tid))
}

#[test]
fn gates_discover_each_other_catch_copies_and_flag_a_partition() {
    let w = World::new();
    let Some(mut net) = Net::new(3, true) else {
        return;
    };
    let apis: Vec<String> = (0..3).map(|i| net.gate(i, &w, &[])).collect();
    for (i, api) in apis.iter().enumerate() {
        eventually("every gate has found the two others by mDNS", || {
            peer_names(&net, i, api).len() == 2
        });
    }

    // A copy admitted at A is caught at B.
    let (tid, code) = &w.codes[0];
    assert_eq!(scan(&net, 0, &apis[0], code, "a1")["verdict"], "admit");
    for i in [1, 2] {
        eventually("B and C know A admitted it", || {
            knows(&net, i, &apis[i], tid, "gate-a")
        });
    }
    let dup = scan(&net, 1, &apis[1], code, "b1");
    assert_eq!(dup["verdict"], "duplicate");
    assert_eq!(dup["first"]["gate"], "gate-a");
    eventually("B's status shows both peers caught up", || {
        let peers = net.http(1, "GET", &format!("{}/v1/status", apis[1]), None)["peers"].clone();
        peers.as_array().is_some_and(|ps| {
            ps.len() == 2
                && ps.iter().all(|p| {
                    p["connected"] == true
                        && p["behind"] == 0
                        && p["last_sync"].is_string()
                        && p["rtt_ms"].is_number()
                })
        })
    });

    // Partition {A} | {B, C}: the same ticket is admitted on both sides.
    net.link(0, false);
    let (tid, code) = &w.codes[1];
    assert_eq!(scan(&net, 0, &apis[0], code, "a1")["verdict"], "admit");
    assert_eq!(scan(&net, 1, &apis[1], code, "b1")["verdict"], "admit");
    eventually("C hears of B's admit", || {
        knows(&net, 2, &apis[2], tid, "gate-b")
    });
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        !knows(&net, 0, &apis[0], tid, "gate-b"),
        "the partition is real"
    );
    net.link(0, true);
    for (i, api) in apis.iter().enumerate() {
        eventually("all three gates list the ticket under flags", || {
            flagged(&net, i, api, tid)
        });
    }

    // Staff resolve it at C; the resolution reaches A and B.
    let r = net.http(
        2,
        "POST",
        &format!("{}/v1/flags/{tid}/resolve", apis[2]),
        Some(json!({ "action": "accept", "staff": "Sam", "note": "same person" })),
    );
    assert!(r["resolution"].is_object(), "{r}");
    for (i, api) in apis.iter().enumerate() {
        eventually("the resolution reached every gate", || {
            !flagged(&net, i, api, tid)
        });
    }
}

#[test]
fn static_peers_work_where_multicast_is_blocked() {
    let w = World::new();
    let Some(mut net) = Net::new(2, false) else {
        return;
    };
    let peer_of_a = vec![
        "--discovery".into(),
        "off".into(),
        "--peer".into(),
        net.mesh_addr(1),
    ];
    let a = net.gate(0, &w, &peer_of_a);
    let b = net.gate(1, &w, &["--discovery".into(), "off".into()]);
    eventually("A and B are connected", || {
        peer_names(&net, 0, &a) == ["gate-b"] && peer_names(&net, 1, &b) == ["gate-a"]
    });
    let (tid, code) = &w.codes[2];
    assert_eq!(scan(&net, 1, &b, code, "b1")["verdict"], "admit");
    eventually("A knows B admitted it", || {
        knows(&net, 0, &a, tid, "gate-b")
    });
}

#[test]
fn a_gate_killed_mid_sync_converges_after_restart() {
    let w = World::with_tickets(150);
    let Some(mut net) = Net::new(2, true) else {
        return;
    };
    let a = net.gate(0, &w, &[]);
    for (_, code) in &w.codes {
        assert_eq!(scan(&net, 0, &a, code, "a1")["verdict"], "admit");
    }
    let redemptions = |net: &Net, i: usize, api: &str| {
        net.http(i, "GET", &format!("{api}/v1/status"), None)["redemptions"].as_u64()
    };
    // B joins, and dies with SIGKILL while it is taking A's history in.
    let (b, process) = net.gate_process(1, &w, &[]);
    eventually("B has started to sync", || {
        redemptions(&net, 1, &b).unwrap_or(0) > 0 || peer_names(&net, 1, &b).len() == 1
    });
    net.kill(process);
    let b = net.gate(1, &w, &[]);
    eventually("B holds every admission after its restart", || {
        redemptions(&net, 1, &b) == Some(150)
    });
    let (tid, code) = &w.codes[149];
    let dup = scan(&net, 1, &b, code, "b1");
    assert_eq!(dup["verdict"], "duplicate", "{tid}: {dup}");
    assert_eq!(dup["first"]["gate"], "gate-a");
}
