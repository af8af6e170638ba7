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

use super::net::{Lan, Place};

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
    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value> {
        let this = self.clone();
        let path = path.to_owned();
        self.handle
            .spawn(async move {
                let mut req = this.client.request(method, format!("{}{path}", this.base));
                if let Some(t) = &this.token {
                    req = req.bearer_auth(t);
                }
                if let Some(b) = body {
                    req = req.json(&b);
                }
                let resp = req.send().await?;
                let status = resp.status();
                let value: Value = resp.json().await.unwrap_or(Value::Null);
                if !status.is_success() {
                    bail!("{status} for {path}: {value}");
                }
                Ok(value)
            })
            .await?
    }

    pub(super) async fn get(&self, path: &str) -> Result<Value> {
        self.call(reqwest::Method::GET, path, None).await
    }

    pub(super) async fn post(&self, path: &str, body: Value) -> Result<Value> {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }
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
/// and the ones running now.
pub(super) struct Gates {
    lan: Arc<Lan>,
    bin: PathBuf,
    dir: PathBuf,
    commands: Vec<Vec<String>>,
    children: Mutex<Children>,
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
            commands,
            children: Mutex::new(Children::default()),
        }
    }

    /// Starts gate `i` and waits for its ready line (blocking).
    pub(super) fn start(&self, i: usize) -> Result<()> {
        let mut cmd = self.lan.command(Place::Gate(i), &self.bin);
        cmd.args(&self.commands[i]);
        let (child, _) = spawn_ready(cmd, &self.dir.join(format!("gate-{i}.log")))?;
        self.children
            .lock()
            .map_err(|_| anyhow!("poisoned"))?
            .0
            .insert(format!("gate-{i}"), child);
        Ok(())
    }

    /// SIGKILL for gate `i`, as a crash or a power cut would (blocking).
    pub(super) fn kill(&self, i: usize) -> Result<()> {
        let mut children = self.children.lock().map_err(|_| anyhow!("poisoned"))?;
        if let Some(mut c) = children.0.remove(&format!("gate-{i}")) {
            c.kill()?;
            c.wait()?;
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
