//! Network namespaces for gatemesh's harnesses: the one place that makes them, cables them
//! and takes them down again. `gatemesh rehearse` (shipped in the binary) builds its venue
//! from these, and so does the tests' `Net` in `gatemesh-testkit`.
//!
//! - [`Namespace`]: `ip netns add` on [`Namespace::create`], `ip netns del` on drop, so a
//!   harness that fails half-way leaves nothing behind. Inside one: bridges (multicast
//!   snooping off, so mDNS floods like on a plain switch), veth cables from a bridge to
//!   another namespace ([`Namespace::plug`]), links up and down, a slow link
//!   ([`Namespace::throttle`], a token bucket), a multicast route, and commands run inside it
//!   (`ip netns exec`).
//! - [`NeighbourRoom`]: room in the machine's one neighbour (ARP) table for every
//!   namespace's neighbours (a venue of 32 gates passes the kernel's default bound).
//! - [`NsHandle`]: an open namespace a thread can enter (`setns`), for clients that must act
//!   from inside one; [`NsId`] tells where a thread is.
//!
//! Everything goes through iproute2 (`ip`, and `tc` for a slow link) and needs root
//! ([`available`]). Nothing here sends a
//! packet: what runs inside the namespaces is the caller's.
//!
//! ```no_run
//! use gatemesh_netns::Namespace;
//!
//! // A hub holding a bridge, and one host cabled to it.
//! let hub = Namespace::create("demo-hub")?;
//! hub.add_bridge("br0")?;
//! let host = Namespace::create("demo-h0")?;
//! hub.plug("hv0", "br0", &host, "eth0", "10.77.0.1/24")?;
//! let shown = host.command("ip").args(["addr", "show", "eth0"]).status();
//! hub.set_link("hv0", false)?; // the cable is cut
//! # let _ = shown;
//! drop((host, hub)); // both namespaces are deleted
//! # Ok::<(), gatemesh_netns::Error>(())
//! ```
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod neighbours;
pub use neighbours::NeighbourRoom;

use std::{
    ffi::OsStr,
    fs::File,
    os::{fd::AsFd, unix::fs::MetadataExt},
    path::{Path, PathBuf},
    process::{Command, Stdio},
    sync::Arc,
};

/// What went wrong making or using a namespace.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("running ip (iproute2)")]
    Spawn {
        #[source]
        source: std::io::Error,
    },
    #[error("{command}: {stderr}")]
    Failed { command: String, stderr: String },
    #[error("opening {}", path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("entering a network namespace")]
    Enter {
        #[source]
        source: nix::Error,
    },
}

/// Whether namespaces can be made here: root, and iproute2 present.
pub fn available() -> bool {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    root && Command::new("ip")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn ip(args: &[&str]) -> Result<(), Error> {
    run(Command::new("ip").args(args))
}

fn run(command: &mut Command) -> Result<(), Error> {
    let out = command.output().map_err(|source| Error::Spawn { source })?;
    if !out.status.success() {
        let words: Vec<_> = std::iter::once(command.get_program())
            .chain(command.get_args())
            .map(|w| w.to_string_lossy())
            .collect();
        return Err(Error::Failed {
            command: words.join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    Ok(())
}

/// Deletes the namespaces named `kind` then a process id, then anything, whose process is
/// gone: what a harness killed with SIGKILL (a timeout, an operator) left behind, its
/// drops never run. A namespace whose process id is alive is left alone (even if the id
/// was reused: the cautious way round). Returns the names deleted.
pub fn remove_orphans(kind: &str) -> Result<Vec<String>, Error> {
    let dir = Path::new("/run/netns");
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(Error::Open {
                path: dir.to_path_buf(),
                source,
            });
        }
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = orphan_pid(&name, kind) else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            ip(&["netns", "del", &name])?;
            removed.push(name);
        }
    }
    removed.sort();
    Ok(removed)
}

/// The process id in a namespace name `kind` + digits + anything, if it is one.
fn orphan_pid(name: &str, kind: &str) -> Option<u32> {
    let rest = name.strip_prefix(kind)?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// A named network namespace, deleted (with every link inside it) when dropped.
#[derive(Debug)]
pub struct Namespace {
    name: String,
}

impl Namespace {
    /// `ip netns add NAME`, with its loopback up.
    pub fn create(name: impl Into<String>) -> Result<Self, Error> {
        let name = name.into();
        ip(&["netns", "add", &name])?;
        // Owned from here, so a failure below still deletes it.
        let ns = Self { name };
        ns.ip(&["link", "set", "lo", "up"])?;
        Ok(ns)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// `ip -n NAME ARGS…`
    fn ip(&self, args: &[&str]) -> Result<(), Error> {
        let mut all = vec!["-n", &self.name];
        all.extend_from_slice(args);
        ip(&all)
    }

    /// A bridge in this namespace, up, with multicast snooping off: a snooping bridge drops
    /// mDNS until it has seen a membership report, a plain switch does not.
    pub fn add_bridge(&self, bridge: &str) -> Result<(), Error> {
        self.ip(&[
            "link",
            "add",
            bridge,
            "type",
            "bridge",
            "mcast_snooping",
            "0",
        ])?;
        self.set_link(bridge, true)
    }

    /// A cable: a veth pair from `port` on `bridge` here to `inner` in `host`, which gets the
    /// address `cidr` (`10.77.0.1/24`). Both ends are up.
    pub fn plug(
        &self,
        port: &str,
        bridge: &str,
        host: &Namespace,
        inner: &str,
        cidr: &str,
    ) -> Result<(), Error> {
        self.ip(&[
            "link", "add", port, "type", "veth", "peer", "name", inner, "netns", &host.name,
        ])?;
        self.ip(&["link", "set", port, "master", bridge, "up"])?;
        host.ip(&["addr", "add", cidr, "dev", inner])?;
        host.set_link(inner, true)
    }

    /// Takes `dev` down (a cut cable) or up again.
    pub fn set_link(&self, dev: &str, up: bool) -> Result<(), Error> {
        self.ip(&["link", "set", dev, if up { "up" } else { "down" }])
    }

    /// Makes what `dev` sends a slow link: at most `rate` (in `tc`'s units, `64kbit`), with
    /// at most 100 ms of it queued and the rest dropped, as a saturated Wi-Fi link would
    /// (`tc qdisc replace … tbf`). Only what leaves through `dev` is slowed: throttle both
    /// ends of a cable for both directions.
    pub fn throttle(&self, dev: &str, rate: &str) -> Result<(), Error> {
        run(self.command("tc").args([
            "qdisc", "replace", "dev", dev, "root", "tbf", "rate", rate, "burst", "4kb", "latency",
            "100ms",
        ]))
    }

    /// Takes [`Namespace::throttle`]'s limit off `dev` again.
    pub fn unthrottle(&self, dev: &str) -> Result<(), Error> {
        run(self
            .command("tc")
            .args(["qdisc", "del", "dev", dev, "root"]))
    }

    /// Moves `dev` onto `bridge`.
    pub fn set_master(&self, dev: &str, bridge: &str) -> Result<(), Error> {
        self.ip(&["link", "set", dev, "master", bridge])
    }

    /// Sends multicast (`224.0.0.0/4`, mDNS among it) out on `dev`: without a default route
    /// a namespace has nowhere to send it.
    pub fn route_multicast(&self, dev: &str) -> Result<(), Error> {
        self.ip(&["route", "add", "224.0.0.0/4", "dev", dev])
    }

    /// A command that runs `program` inside this namespace (`ip netns exec`).
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name]).arg(program);
        c
    }

    fn path(&self) -> PathBuf {
        Path::new("/var/run/netns").join(&self.name)
    }

    /// An open handle a thread can enter this namespace by. It stays valid while the
    /// namespace exists.
    pub fn handle(&self) -> Result<NsHandle, Error> {
        let path = self.path();
        let file = File::open(&path).map_err(|source| Error::Open { path, source })?;
        Ok(NsHandle(Arc::new(file)))
    }

    /// Which namespace this is, to compare with [`NsId::of_current_thread`].
    pub fn id(&self) -> Result<NsId, Error> {
        NsId::of(self.path())
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.name]);
    }
}

/// An open network namespace (cheap to clone and to send to the thread that enters it).
#[derive(Debug, Clone)]
pub struct NsHandle(Arc<File>);

impl NsHandle {
    /// Moves the calling thread into the namespace (`setns`); its sockets live there from
    /// now on. Other threads stay where they are.
    pub fn enter(&self) -> Result<(), Error> {
        nix::sched::setns(self.0.as_fd(), nix::sched::CloneFlags::CLONE_NEWNET)
            .map_err(|source| Error::Enter { source })
    }
}

/// The identity of a network namespace (device and inode of its file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NsId {
    dev: u64,
    ino: u64,
}

impl NsId {
    /// The namespace the calling thread is in.
    pub fn of_current_thread() -> Result<Self, Error> {
        Self::of(PathBuf::from("/proc/thread-self/ns/net"))
    }

    fn of(path: PathBuf) -> Result<Self, Error> {
        let m = std::fs::metadata(&path).map_err(|source| Error::Open { path, source })?;
        Ok(Self {
            dev: m.dev(),
            ino: m.ino(),
        })
    }
}

#[cfg(test)]
mod tests;
