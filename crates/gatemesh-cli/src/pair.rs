//! `gatemesh pair`: turns a pairing code from the server into everything a gate needs.

use std::{path::PathBuf, process::ExitCode};

use anyhow::{Result, bail};

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
    let pairing = runtime.block_on(gatemesh_node::pairing::pair(&args.server, &args.code))?;
    gatemesh_node::pairing::write_identity(&args.out.join("identity"), &pairing.answer.identity)?;
    // One file a key (several while keys rotate): issuer.pub.pem, issuer-1.pub.pem, …
    for (i, pem) in pairing.issuer_pems().iter().enumerate() {
        let name = if i == 0 {
            "issuer.pub.pem".to_owned()
        } else {
            format!("issuer-{i}.pub.pem")
        };
        std::fs::write(args.out.join(name), pem)?;
    }
    let paired = pairing.gate_file();
    paired.create(&args.out)?;
    println!(
        "{}",
        serde_json::json!({ "event": paired.event, "name": paired.name, "role": paired.role, "dir": args.out })
    );
    Ok(ExitCode::SUCCESS)
}
