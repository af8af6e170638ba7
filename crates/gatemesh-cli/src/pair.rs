//! `gatemesh pair`: turns a pairing code from the server into everything a gate needs.

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
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
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let answer = runtime.block_on(gatemesh_node::pairing::pair(&args.server, &args.code))?;
    gatemesh_node::pairing::write_identity(&args.out.join("identity"), &answer)?;
    // One file a key (several while keys rotate): issuer.pub.pem, issuer-1.pub.pem, …
    for (i, pem) in answer.issuer_pems.iter().enumerate() {
        let name = if i == 0 {
            "issuer.pub.pem".to_owned()
        } else {
            format!("issuer-{i}.pub.pem")
        };
        std::fs::write(args.out.join(name), pem)?;
    }
    let paired = Paired {
        server: answer.server,
        event: answer.event,
        name: answer.name,
        role: answer.role,
        token: answer.token,
    };
    write_private(
        &args.out.join("gate.json"),
        &serde_json::to_string_pretty(&paired)?,
    )?;
    println!(
        "{}",
        serde_json::json!({ "event": paired.event, "name": paired.name, "role": paired.role, "dir": args.out })
    );
    Ok(ExitCode::SUCCESS)
}
