//! `gatemesh pair`: turns a pairing code from the server into everything a gate needs.

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
    time::Duration,
};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

/// Join an event with a pairing code from the server: writes the device's mesh identity,
/// the issuer key and its uplink credential into DIR, for `gatemesh gate --paired DIR`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The central server (http(s)://HOST:PORT).
    #[arg(long)]
    server: String,
    /// The pairing code an organizer created for this device (e.g. 7K2QM-X9D4R).
    #[arg(long)]
    code: String,
    /// Where to write the device's files (must not exist yet).
    #[arg(long)]
    out: PathBuf,
}

/// What `pair` writes to `gate.json`.
#[derive(Debug, Serialize, Deserialize)]
pub struct Paired {
    pub server: String,
    pub event: String,
    pub name: String,
    pub role: String,
    pub token: String,
}

impl Paired {
    pub fn load(dir: &Path) -> Result<Self> {
        let path = dir.join("gate.json");
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {} (made by `gatemesh pair`)", path.display()))?;
        serde_json::from_str(&text).with_context(|| format!("reading {}", path.display()))
    }
}

fn write_private(path: &Path, text: &str) -> Result<()> {
    use std::{io::Write, os::unix::fs::OpenOptionsExt};
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    f.write_all(text.as_bytes())?;
    f.sync_all()?;
    Ok(())
}

pub fn run(args: Args) -> Result<ExitCode> {
    if args.out.exists() {
        bail!(
            "{} already exists; pair into a new directory",
            args.out.display()
        );
    }
    let server = args.server.trim_end_matches('/').to_owned();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let answer: serde_json::Value = runtime.block_on(async {
        let response = reqwest::Client::new()
            .post(format!("{server}/v1/pair"))
            .timeout(Duration::from_secs(30))
            .json(&serde_json::json!({ "code": args.code }))
            .send()
            .await
            .with_context(|| format!("reaching {server}"))?;
        let status = response.status();
        let body: serde_json::Value = response.json().await.unwrap_or_default();
        if !status.is_success() {
            bail!(
                "the server refused the code: {}",
                body["error"]["message"].as_str().unwrap_or(status.as_str())
            );
        }
        Ok(body)
    })?;
    let text = |v: &serde_json::Value, what: &str| -> Result<String> {
        v.as_str()
            .map(str::to_owned)
            .with_context(|| format!("the server's answer lacks {what}"))
    };
    let identity = args.out.join("identity");
    std::fs::create_dir_all(&identity)?;
    use gatemesh_mesh::pki::{CA_CERT, DEVICE_CERT, DEVICE_KEY};
    write_private(
        &identity.join(DEVICE_KEY),
        &text(&answer["identity"]["device_key"], "the device key")?,
    )?;
    std::fs::write(
        identity.join(DEVICE_CERT),
        text(&answer["identity"]["device_pem"], "the device certificate")?,
    )?;
    std::fs::write(
        identity.join(CA_CERT),
        text(&answer["identity"]["ca_pem"], "the CA certificate")?,
    )?;
    std::fs::write(
        args.out.join("issuer.pub.pem"),
        text(&answer["keys"][0]["pem"], "the issuer key")?,
    )?;
    let paired = Paired {
        server,
        event: text(&answer["event"], "the event")?,
        name: text(&answer["name"], "the device name")?,
        role: text(&answer["role"], "the role")?,
        token: text(&answer["token"], "the credential")?,
    };
    write_private(
        &args.out.join("gate.json"),
        &serde_json::to_string_pretty(&paired)?,
    )?;
    // Check what was written loads as a device identity.
    gatemesh_mesh::pki::Identity::load(&identity).context("loading the new identity")?;
    println!(
        "{}",
        serde_json::json!({ "event": paired.event, "name": paired.name, "role": paired.role, "dir": args.out })
    );
    Ok(ExitCode::SUCCESS)
}
