//! The processes a rehearsal starts and the clients that talk to them from where they
//! stand: the organiser at the server, each gate's scanners at that gate.

use std::{
    collections::HashMap,
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::Stdio,
    sync::{Arc, Mutex},
    time::Duration,
};

use anyhow::{Context, Result, anyhow, bail};
use serde_json::Value;
use tokio::runtime::Handle;

use super::{
    load::{Cpu, cpu_time, cpu_time_of_killed, peak_memory},
    net::{Lan, Place},
};

/// An HTTP client acting from one place (each namespace needs its own connection pool:
/// `127.0.0.1:7070` is a different gate in each).
#[derive(Clone)]
pub(super) struct At {
    handle: Handle,
    client: reqwest::Client,
    base: String,
    token: Option<String>,
}

impl At {
    /// `pin`: the server's certificate, for an https:// `base`.
    pub(super) fn new(
        handle: Handle,
        base: String,
        token: Option<String>,
        pin: Option<gatemesh_wire::CertFingerprint>,
    ) -> Result<Self> {
        let client = gatemesh_node::edge::pinned_builder(pin)?
            .timeout(Duration::from_secs(10))
            .no_proxy()
            .build()?;
        Ok(Self {
            handle,
            client,
            base,
            token,
        })
    }

    /// A request made from this place; `Err` for a transport failure or a non-2xx answer.
    /// `within`: how long to wait for the answer, if not the client's 10 s.
    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
        within: Option<Duration>,
    ) -> Result<Value> {
        self.answer(method, path, body, within, |body| {
            Ok(serde_json::from_slice(body).unwrap_or(Value::Null))
        })
        .await
    }

    /// A request made from this place, its answer's body read by `read`; `Err` for a
    /// transport failure or a non-2xx answer.
    async fn answer<T: Send + 'static>(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
        within: Option<Duration>,
        read: impl FnOnce(&[u8]) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let this = self.clone();
        let path = path.to_owned();
        self.handle
            .spawn(async move {
                let mut req = this.client.request(method, format!("{}{path}", this.base));
                if let Some(within) = within {
                    req = req.timeout(within);
                }
                if let Some(t) = &this.token {
                    req = req.bearer_auth(t);
                }
                if let Some(b) = body {
                    req = req.json(&b);
                }
                let resp = req.send().await?;
                let status = resp.status();
                let bytes = resp.bytes().await?;
                if !status.is_success() {
                    bail!("{status} for {path}: {}", String::from_utf8_lossy(&bytes));
                }
                read(&bytes).with_context(|| format!("the answer to {path}"))
            })
            .await?
    }

    pub(super) async fn get(&self, path: &str) -> Result<Value> {
        self.call(reqwest::Method::GET, path, None, None).await
    }

    /// A GET whose answer is read straight into `T`, keeping only what `T` names: a gate's
    /// export of 60,000 redemptions read as a `Value` held hundreds of megabytes, and the
    /// end-of-event look read eight at once (and the server's 60,000 tickets), which ran
    /// the machine out of memory at a stadium's size.
    pub(super) async fn get_as<T: serde::de::DeserializeOwned + Send + 'static>(
        &self,
        path: &str,
    ) -> Result<T> {
        self.answer(reqwest::Method::GET, path, None, None, |body| {
            Ok(serde_json::from_slice(body)?)
        })
        .await
    }

    pub(super) async fn post(&self, path: &str, body: Value) -> Result<Value> {
        self.call(reqwest::Method::POST, path, Some(body), None)
            .await
    }

    pub(super) async fn put(&self, path: &str, body: Value) -> Result<Value> {
        self.call(reqwest::Method::PUT, path, Some(body), None)
            .await
    }

    /// Follows the server-sent events at `path` from this place, handing each event's name
    /// and data to `each` as it comes, until the stream ends (`Ok`) or breaks, or the place
    /// does not answer (`Err`).
    pub(super) async fn follow(
        &self,
        path: &str,
        mut each: impl FnMut(&str, &str) + Send + 'static,
    ) -> Result<()> {
        let this = self.clone();
        let path = path.to_owned();
        self.handle
            .spawn(async move {
                let mut req = this
                    .client
                    .get(format!("{}{path}", this.base))
                    .timeout(FOLLOW_MOST);
                if let Some(t) = &this.token {
                    req = req.bearer_auth(t);
                }
                let mut resp = req.send().await?.error_for_status()?;
                let mut pending: Vec<u8> = Vec::new();
                while let Some(chunk) = resp.chunk().await? {
                    pending.extend_from_slice(&chunk);
                    while let Some(end) = pending.windows(2).position(|w| w == b"\n\n") {
                        let block: Vec<u8> = pending.drain(..end + 2).collect();
                        let (name, data) = sse_event(&String::from_utf8_lossy(&block));
                        each(&name, &data);
                    }
                }
                Ok(())
            })
            .await?
    }

    /// A scanner's ask for a code's answer, given up after [`SCAN_TIMEOUT`]; `Err` as for
    /// [`Self::post`] ([`timed_out`] tells an ask the gate took in and did not answer).
    pub(super) async fn scan(&self, body: Value) -> Result<Value> {
        self.call(
            reqwest::Method::POST,
            "/v1/scan",
            Some(body),
            Some(SCAN_TIMEOUT),
        )
        .await
    }
}

/// Longest a live stream is followed on one connection (a rehearsal is shorter).
const FOLLOW_MOST: Duration = Duration::from_secs(24 * 3600);

/// An event of a server-sent stream (its lines up to the blank one): its name (`message`
/// when it names none) and its data lines joined.
fn sse_event(block: &str) -> (String, String) {
    let mut name = "message".to_owned();
    let mut data: Vec<&str> = Vec::new();
    for line in block.lines() {
        let field = |prefix: &str| {
            line.strip_prefix(prefix)
                .map(|v| v.strip_prefix(' ').unwrap_or(v))
        };
        if let Some(v) = field("event:") {
            v.clone_into(&mut name);
        } else if let Some(v) = field("data:") {
            data.push(v);
        }
    }
    (name, data.join("\n"))
}

/// How long a scanner waits for a gate's answer before it asks again: well within the gate's
/// repeat window (`Policy::repeat_window_ms`, 10 s), so that a gate that was slow to answer
/// answers the second ask of one presentation as it decided the first (green for the holder,
/// not yellow). A scanner that waited as long as the window would always ask again outside
/// it.
pub(super) const SCAN_TIMEOUT: Duration = Duration::from_secs(4);

/// Whether a request failed because its answer did not come in time: the gate took it in
/// and may have decided it.
pub(super) fn timed_out(e: &anyhow::Error) -> bool {
    e.downcast_ref::<reqwest::Error>()
        .is_some_and(reqwest::Error::is_timeout)
}

/// Starts a gatemesh service and reads the one JSON line it prints when ready.
pub(super) fn spawn_ready(
    mut command: std::process::Command,
    log: &Path,
) -> Result<(std::process::Child, Value)> {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)?;
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .with_context(|| format!("starting {command:?}"))?;
    let mut line = String::new();
    let out = child.stdout.take().ok_or_else(|| anyhow!("no stdout"))?;
    let mut reader = BufReader::new(out);
    reader.read_line(&mut line)?;
    // Keep draining, so the process never blocks on a full pipe.
    std::thread::spawn(move || std::io::copy(&mut reader, &mut std::io::sink()));
    let ready = serde_json::from_str(&line).map_err(|_| {
        let _ = child.kill();
        anyhow!("{command:?} did not start (see the log next to its data): {line:?}")
    })?;
    Ok((child, ready))
}

/// The gates' processes: how to start each (`gatemesh gate …` in its place, on its data),
/// the ones running now, and the CPU time each gate has spent over its lives.
pub(super) struct Gates {
    lan: Arc<Lan>,
    bin: PathBuf,
    dir: PathBuf,
    commands: Vec<Vec<String>>,
    children: Mutex<Children>,
    lives: Mutex<Vec<Lives>>,
}

/// One gate's CPU time: lives that ended, and where the current one's count starts; and its
/// peak memory.
#[derive(Debug, Default, Clone)]
struct Lives {
    /// CPU time of the lives that ended (counted from the doors opening).
    spent: Duration,
    /// The current process's CPU time when counting began (0 for one started since).
    base: Duration,
    lives: u32,
    /// A life whose CPU time could not be read.
    unread: bool,
    /// The most memory (resident set, bytes) any life ended so far held at once.
    peak: u64,
}

impl Gates {
    pub(super) fn new(
        lan: Arc<Lan>,
        bin: PathBuf,
        dir: PathBuf,
        commands: Vec<Vec<String>>,
    ) -> Self {
        Self {
            lan,
            bin,
            dir,
            lives: Mutex::new(vec![Lives::default(); commands.len()]),
            commands,
            children: Mutex::new(Children::default()),
        }
    }

    /// The process id of gate `i`, when it runs.
    fn pid(&self, i: usize) -> Result<Option<u32>> {
        let children = self.children.lock().map_err(|_| anyhow!("poisoned"))?;
        Ok(children
            .0
            .get(&format!("gate-{i}"))
            .map(std::process::Child::id))
    }

    /// The doors open: every gate's CPU time counts from now (its start-up is not the
    /// event's).
    pub(super) fn count_cpu_from_now(&self) -> Result<()> {
        for i in 0..self.commands.len() {
            let base = match self.pid(i)? {
                Some(pid) => cpu_time(pid).ok(),
                None => None,
            };
            let mut lives = self.lives.lock().map_err(|_| anyhow!("poisoned"))?;
            lives[i] = Lives {
                spent: Duration::ZERO,
                base: base.unwrap_or_default(),
                lives: 1,
                unread: base.is_none(),
                peak: lives[i].peak,
            };
        }
        Ok(())
    }

    /// Gate `i`'s CPU time since the doors opened, over every life; `None` if a life's
    /// could not be read.
    pub(super) fn cpu(&self, i: usize) -> Result<Option<Cpu>> {
        let pid = self.pid(i)?;
        let now = match pid {
            Some(pid) => cpu_time(pid).ok(),
            None => Some(Duration::ZERO),
        };
        let peak_now = pid.and_then(|pid| peak_memory(pid).ok()).unwrap_or(0);
        let lives = self.lives.lock().map_err(|_| anyhow!("poisoned"))?;
        let l = &lives[i];
        let peak = l.peak.max(peak_now);
        Ok(match now {
            Some(now) if !l.unread => Some(Cpu {
                spent: l.spent + now.saturating_sub(l.base),
                lives: l.lives,
                peak_memory: (peak > 0).then_some(peak),
            }),
            _ => None,
        })
    }

    /// Starts gate `i` and waits for its ready line (blocking).
    pub(super) fn start(&self, i: usize) -> Result<()> {
        let mut cmd = self.lan.command(Place::Gate(i), &self.bin);
        cmd.args(&self.commands[i]);
        let (child, _) = spawn_ready(cmd, &self.dir.join(format!("gate-{i}.log")))?;
        // A new process: all of its CPU time is this life's (before the doors open,
        // `count_cpu_from_now` starts the count again).
        if let Ok(mut lives) = self.lives.lock() {
            lives[i].base = Duration::ZERO;
            lives[i].lives += 1;
        }
        self.children
            .lock()
            .map_err(|_| anyhow!("poisoned"))?
            .0
            .insert(format!("gate-{i}"), child);
        Ok(())
    }

    /// SIGKILL for gate `i`, as a crash or a power cut would (blocking). The CPU time of
    /// the life it ends is kept.
    pub(super) fn kill(&self, i: usize) -> Result<()> {
        let mut children = self.children.lock().map_err(|_| anyhow!("poisoned"))?;
        if let Some(mut c) = children.0.remove(&format!("gate-{i}")) {
            let before = cpu_time(c.id()).ok();
            // A dead process's status has no memory lines: read before the kill.
            let peak = peak_memory(c.id()).unwrap_or(0);
            c.kill()?;
            // Killed and not yet reaped, it still reports its whole life.
            let last = cpu_time_of_killed(c.id()).ok().or(before);
            c.wait()?;
            let mut lives = self.lives.lock().map_err(|_| anyhow!("poisoned"))?;
            let l = &mut lives[i];
            l.peak = l.peak.max(peak);
            match last {
                Some(t) => l.spent += t.saturating_sub(l.base),
                None => l.unread = true,
            }
            l.base = Duration::ZERO;
        }
        Ok(())
    }
}

/// Keeps the processes a rehearsal starts, and kills them (SIGKILL) when dropped.
#[derive(Debug, Default)]
pub struct Children(pub HashMap<String, std::process::Child>);

impl Drop for Children {
    fn drop(&mut self) {
        for c in self.0.values_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scanner_asks_again_within_the_gates_repeat_window() {
        let window = gatemesh_ledger::Policy::default().repeat_window_ms;
        // Room for the second ask to wait for the writer behind the first.
        assert!(2 * SCAN_TIMEOUT.as_millis() < u128::try_from(window).unwrap());
    }

    #[test]
    fn an_event_of_a_live_stream_reads_as_its_name_and_data() {
        let read = |block: &str| sse_event(block);
        assert_eq!(
            read("event: standing\ndata: {\"tid\":\"A1\"}\n\n"),
            ("standing".into(), "{\"tid\":\"A1\"}".into())
        );
        // No space after the colon; data over two lines; a comment line.
        assert_eq!(
            read(": keep-alive\nevent:flagged\ndata:one\ndata: two\n\n"),
            ("flagged".into(), "one\ntwo".into())
        );
        // A keep-alive alone: an unnamed event with no data, which nobody follows.
        assert_eq!(read(":\n\n"), ("message".into(), String::new()));
    }
}
