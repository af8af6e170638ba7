//! Where a rehearsal's processes live and how its network faults are made.
//!
//! - **Namespaces** (root with iproute2): every gate in a network namespace of its own with
//!   two cables — `eth0` on the venue LAN (a bridge, mDNS on) and `wan0` on an "internet"
//!   bridge where the server lives in its namespace. A partition moves gates' LAN ports to a
//!   second bridge; a lost uplink takes a gate's WAN port down. The scanners of a gate talk to
//!   its API on the gate's own loopback, from threads that entered its namespace (`setns`),
//!   as a USB scanner plugged into that laptop would.
//! - **Loopback** (anyone): gates on 127.0.0.1 with discovery off; every mesh link goes
//!   through a UDP relay of ours and every uplink through a TCP proxy of ours, which is where
//!   partitions and lost uplinks are made.
//!
//! mDNS never runs in the machine's own namespace.

use std::{
    net::SocketAddr,
    path::Path,
    process::Command,
    sync::{Arc, Mutex},
};

use anyhow::{Result, bail};
use gatemesh_netns::{Namespace, NsId};
use tokio::{
    net::{TcpListener, TcpStream, UdpSocket},
    runtime::{Handle, Runtime},
    sync::watch,
};

const SERVER_PORT: u16 = 8080;
const GATE_API_PORT: u16 = 7070;
const GATE_MESH_PORT: u16 = 7443;

/// Where one process runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    Server,
    Gate(usize),
}

/// The rehearsal's network, made on `new` and taken down on drop.
pub struct Lan {
    gates: usize,
    kind: Kind,
}

impl std::fmt::Debug for Lan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lan")
            .field("gates", &self.gates)
            .field("mode", &self.mode())
            .finish()
    }
}

enum Kind {
    Netns(Netns),
    Loopback(Loopback),
}

/// Fields drop in this order: hosts (gates, then the server), then the hub.
struct Netns {
    /// One runtime per namespace: gates first, the server's last (as in `hosts`).
    runtimes: Vec<Runtime>,
    hosts: Vec<Namespace>,
    /// The switches: `br0` and `br1` for the venue LAN (side A and side B of a partition),
    /// `brw` for the "internet" between the gates and the server.
    hub: Namespace,
    /// Room in the machine's neighbour table for every gate's neighbours (each gate talks
    /// to every other and the server: 32 gates pass the kernel's default bound).
    _neighbours: gatemesh_netns::NeighbourRoom,
}

struct Loopback {
    handle: Handle,
    server_port: u16,
    api_ports: Vec<u16>,
    mesh_ports: Vec<u16>,
    /// relays[i][j]: where gate i reaches gate j.
    relays: Vec<Vec<Option<SocketAddr>>>,
    /// Which side of a partition each gate is on (all false: one LAN).
    side_b: Arc<Mutex<Vec<bool>>>,
    proxies: Vec<(u16, watch::Sender<bool>)>,
    stop: watch::Sender<bool>,
}

/// A runtime whose every thread lives in the namespace `ns`. Built here rather than by the
/// binary: its threads must enter `ns` as they start.
fn runtime_in(ns: &Namespace) -> Result<Runtime> {
    let handle = ns.handle()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .max_blocking_threads(2)
        .enable_all()
        .thread_name(format!("ns-{}", ns.name()))
        .on_thread_start(move || {
            if let Err(e) = handle.enter() {
                // A thread left in the machine's namespace would send the rehearsal's
                // traffic where it must not go.
                eprintln!("error: {:#}", anyhow::Error::from(e));
                std::process::abort();
            }
        })
        .build()?;
    // Proof that the threads are where they should be (a plain channel: this runs inside
    // the main runtime, which must not block on another).
    let want = ns.id()?;
    let (tx, rx) = std::sync::mpsc::channel();
    runtime.spawn(async move {
        let _ = tx.send(NsId::of_current_thread());
    });
    let got = rx.recv_timeout(std::time::Duration::from_secs(10))??;
    if want != got {
        bail!("the runtime for {} is not inside it", ns.name());
    }
    Ok(runtime)
}

fn free_tcp_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

fn free_udp_port() -> Result<u16> {
    Ok(std::net::UdpSocket::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

impl Lan {
    /// Namespaces when `netns`, loopback otherwise. Call from inside the main runtime.
    pub async fn new(gates: usize, netns: bool) -> Result<Self> {
        let kind = if netns {
            // What an earlier rehearsal killed outright left behind goes first.
            for name in gatemesh_netns::remove_orphans("gmr")? {
                eprintln!("rehearsal: removed {name}, left by a rehearsal that was killed");
            }
            let prefix = format!("gmr{}", std::process::id());
            let mut lan = Self {
                gates,
                kind: Kind::Netns(Netns {
                    runtimes: Vec::new(),
                    hosts: Vec::new(),
                    hub: Namespace::create(format!("{prefix}hub"))?,
                    _neighbours: gatemesh_netns::NeighbourRoom::at_least(
                        (gates as u64 + 1) * (gates as u64 + 1) + 256,
                    )?,
                }),
            };
            // Built inside `lan`, so a failure half-way still cleans up on drop.
            if let Kind::Netns(n) = &mut lan.kind {
                build_namespaces(n, &prefix, gates)?;
            }
            return Ok(lan);
        } else {
            let (stop, _) = watch::channel(false);
            let side_b = Arc::new(Mutex::new(vec![false; gates]));
            let mesh_ports = (0..gates)
                .map(|_| free_udp_port())
                .collect::<Result<Vec<_>>>()?;
            let api_ports = (0..gates)
                .map(|_| free_tcp_port())
                .collect::<Result<Vec<_>>>()?;
            let server_port = free_tcp_port()?;
            let mut relays = vec![vec![None; gates]; gates];
            for (i, row) in relays.iter_mut().enumerate() {
                for (j, slot) in row.iter_mut().enumerate() {
                    if i != j {
                        let target = SocketAddr::from(([127, 0, 0, 1], mesh_ports[j]));
                        *slot = Some(relay(i, j, target, side_b.clone(), stop.subscribe()).await?);
                    }
                }
            }
            let mut proxies = Vec::new();
            for _ in 0..gates {
                let (cut, _) = watch::channel(false);
                let port = proxy(server_port, cut.subscribe(), stop.subscribe()).await?;
                proxies.push((port, cut));
            }
            Kind::Loopback(Loopback {
                handle: Handle::current(),
                server_port,
                api_ports,
                mesh_ports,
                relays,
                side_b,
                proxies,
                stop,
            })
        };
        Ok(Self { gates, kind })
    }

    pub fn mode(&self) -> &'static str {
        match self.kind {
            Kind::Netns(_) => "network namespaces (mDNS discovery on the venue LAN)",
            Kind::Loopback(_) => "loopback (static peers through relays, discovery off)",
        }
    }

    /// A command that runs `program` in `place`.
    pub fn command(&self, place: Place, program: &Path) -> Command {
        match &self.kind {
            Kind::Netns(n) => {
                let i = match place {
                    Place::Server => self.gates,
                    Place::Gate(i) => i,
                };
                n.hosts[i].command(program)
            }
            Kind::Loopback(_) => Command::new(program),
        }
    }

    /// Where the server listens (in its place).
    pub fn server_listen(&self) -> SocketAddr {
        match &self.kind {
            Kind::Netns(_) => SocketAddr::from(([0, 0, 0, 0], SERVER_PORT)),
            Kind::Loopback(l) => SocketAddr::from(([127, 0, 0, 1], l.server_port)),
        }
    }

    /// The server as the organiser reaches it (from [`Lan::handle`] of `Place::Server`).
    pub fn server_url(&self) -> String {
        match &self.kind {
            Kind::Netns(_) => format!("https://127.0.0.1:{SERVER_PORT}"),
            Kind::Loopback(l) => format!("https://127.0.0.1:{}", l.server_port),
        }
    }

    /// The server as gate `i` reaches it over its uplink.
    pub fn uplink_url(&self, i: usize) -> String {
        match &self.kind {
            Kind::Netns(_) => format!("https://10.78.0.254:{SERVER_PORT}"),
            Kind::Loopback(l) => format!("https://127.0.0.1:{}", l.proxies[i].0),
        }
    }

    /// Gate `i`'s API, as its scanners reach it (from [`Lan::handle`] of `Place::Gate(i)`).
    pub fn gate_api(&self, i: usize) -> String {
        match &self.kind {
            Kind::Netns(_) => format!("http://127.0.0.1:{GATE_API_PORT}"),
            Kind::Loopback(l) => format!("http://127.0.0.1:{}", l.api_ports[i]),
        }
    }

    /// The `gatemesh gate` arguments for API, mesh endpoint and discovery of gate `i`.
    pub fn gate_args(&self, i: usize) -> Vec<String> {
        match &self.kind {
            Kind::Netns(_) => vec![
                "--api".into(),
                format!("127.0.0.1:{GATE_API_PORT}"),
                "--mesh".into(),
                format!("0.0.0.0:{GATE_MESH_PORT}"),
                "--discovery".into(),
                "on".into(),
                "--mdns-interface".into(),
                "eth0".into(),
            ],
            Kind::Loopback(l) => {
                let mut args = vec![
                    "--api".into(),
                    format!("127.0.0.1:{}", l.api_ports[i]),
                    "--mesh".into(),
                    format!("127.0.0.1:{}", l.mesh_ports[i]),
                    "--discovery".into(),
                    "off".into(),
                ];
                for addr in l.relays[i].iter().flatten() {
                    args.push("--peer".into());
                    args.push(addr.to_string());
                }
                args
            }
        }
    }

    /// The runtime whose tasks act from `place` (scanners at a gate, the organiser at the
    /// server).
    pub fn handle(&self, place: Place) -> Handle {
        match &self.kind {
            Kind::Netns(n) => match place {
                Place::Gate(i) => n.runtimes[i].handle().clone(),
                Place::Server => n.runtimes[self.gates].handle().clone(),
            },
            Kind::Loopback(l) => l.handle.clone(),
        }
    }

    /// Splits the LAN: the gates in `side_b` see each other and no other.
    pub fn partition(&self, side_b: &[usize]) -> Result<()> {
        self.set_sides(side_b)
    }

    pub fn heal(&self) -> Result<()> {
        self.set_sides(&[])
    }

    fn set_sides(&self, side_b: &[usize]) -> Result<()> {
        match &self.kind {
            Kind::Netns(n) => {
                for i in 0..self.gates {
                    let bridge = if side_b.contains(&i) { "br1" } else { "br0" };
                    n.hub.set_master(&format!("hv{i}"), bridge)?;
                }
            }
            Kind::Loopback(l) => {
                let mut sides = l.side_b.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
                for (i, s) in sides.iter_mut().enumerate() {
                    *s = side_b.contains(&i);
                }
            }
        }
        Ok(())
    }

    /// Cuts (`up = false`) or restores gate `i`'s uplink.
    pub fn uplink(&self, i: usize, up: bool) -> Result<()> {
        match &self.kind {
            Kind::Netns(n) => Ok(n.hub.set_link(&format!("wv{i}"), up)?),
            Kind::Loopback(l) => {
                let _ = l.proxies[i].1.send(!up);
                Ok(())
            }
        }
    }
}

/// The hub's bridges, the server's namespace and one per gate; `n.hosts` holds every
/// namespace made so far (for the clean-up), gates first.
fn build_namespaces(n: &mut Netns, prefix: &str, gates: usize) -> Result<()> {
    for br in ["br0", "br1", "brw"] {
        n.hub.add_bridge(br)?;
    }
    for i in 0..gates {
        let gate = Namespace::create(format!("{prefix}g{i}"))?;
        n.hosts.push(gate);
        let gate = &n.hosts[i];
        n.hub.plug(
            &format!("hv{i}"),
            "br0",
            gate,
            "eth0",
            &format!("10.77.0.{}/24", i + 1),
        )?;
        n.hub.plug(
            &format!("wv{i}"),
            "brw",
            gate,
            "wan0",
            &format!("10.78.0.{}/24", i + 1),
        )?;
        // mDNS goes out on the LAN cable only.
        gate.route_multicast("eth0")?;
    }
    let server = Namespace::create(format!("{prefix}srv"))?;
    n.hosts.push(server);
    n.hub
        .plug("ws", "brw", &n.hosts[gates], "wan0", "10.78.0.254/24")?;
    // Gates first, the server's last: the order `Lan::handle` reads them in.
    for ns in &n.hosts {
        n.runtimes.push(runtime_in(ns)?);
    }
    Ok(())
}

impl Drop for Lan {
    fn drop(&mut self) {
        match &mut self.kind {
            // The runtimes stop first (dropping one here, inside the main runtime, would
            // panic); the namespaces go when the fields drop.
            Kind::Netns(n) => {
                for rt in n.runtimes.drain(..) {
                    rt.shutdown_background();
                }
            }
            Kind::Loopback(l) => {
                let _ = l.stop.send(true);
            }
        }
    }
}

/// A UDP relay for the mesh link from gate `from` to gate `to`: what `from` sends to the
/// relay goes on to `target`, the answers come back; nothing passes while the two are on
/// different sides of a partition.
async fn relay(
    from: usize,
    to: usize,
    target: SocketAddr,
    side_b: Arc<Mutex<Vec<bool>>>,
    mut stop: watch::Receiver<bool>,
) -> Result<SocketAddr> {
    let front = UdpSocket::bind("127.0.0.1:0").await?;
    let back = UdpSocket::bind("127.0.0.1:0").await?;
    let addr = front.local_addr()?;
    let apart = move || side_b.lock().map(|s| s[from] != s[to]).unwrap_or(true);
    tokio::spawn(async move {
        let mut client: Option<SocketAddr> = None;
        let (mut a, mut b) = (vec![0u8; 65_536], vec![0u8; 65_536]);
        loop {
            tokio::select! {
                _ = stop.changed() => return,
                r = front.recv_from(&mut a) => {
                    let Ok((n, src)) = r else { continue };
                    client = Some(src);
                    if !apart() {
                        let _ = back.send_to(&a[..n], target).await;
                    }
                }
                r = back.recv_from(&mut b) => {
                    let Ok((n, _)) = r else { continue };
                    if let (Some(c), false) = (client, apart()) {
                        let _ = front.send_to(&b[..n], c).await;
                    }
                }
            }
        }
    });
    Ok(addr)
}

/// A TCP proxy for one gate's uplink to the server on `upstream`; while `cut` holds, open
/// connections are dropped and new ones closed at once.
async fn proxy(
    upstream: u16,
    cut: watch::Receiver<bool>,
    mut stop: watch::Receiver<bool>,
) -> Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                _ = stop.changed() => return,
                a = listener.accept() => a,
            };
            let Ok((mut inbound, _)) = accepted else {
                continue;
            };
            if *cut.borrow() {
                continue;
            }
            let mut cut = cut.clone();
            tokio::spawn(async move {
                let Ok(mut outbound) = TcpStream::connect(("127.0.0.1", upstream)).await else {
                    return;
                };
                tokio::select! {
                    _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                    _ = cut.wait_for(|c| *c) => {}
                }
            });
        }
    });
    Ok(port)
}

/// Gate names as staff would see them.
pub fn gate_name(i: usize) -> String {
    const NAMES: [&str; 8] = [
        "Main-Entrance",
        "North-Gate",
        "South-Gate",
        "Side-Door",
        "East-Gate",
        "West-Gate",
        "VIP-Door",
        "Box-Office",
    ];
    NAMES
        .get(i)
        .map_or_else(|| format!("Gate-{}", i + 1), |n| (*n).to_owned())
}
