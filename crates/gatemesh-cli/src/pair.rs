//! `gatemesh pair`: turns a pairing link (or a code and the server's address) into everything
//! a gate needs.

use std::{path::PathBuf, process::ExitCode};

use anyhow::{Context, Result};
use gatemesh_wire::{CertFingerprint, PairingLink};

use crate::exit::{UsageExt, bail_usage};

/// Join an event with a pairing link from the server: pins the server's certificate, makes
/// the device's mesh key here and sends only a signing request, then writes the identity,
/// the issuer key, the pinned fingerprint and the uplink credential into DIR, for
/// `gatemesh gate --paired DIR`. Nothing is written when pairing fails.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("target").args(["link", "server"]).required(true)))]
pub struct Args {
    /// The pairing link the organizer's server made for this device
    /// (gatemesh://pair?server=…&code=…&fp=sha256:…).
    #[arg(long, conflicts_with_all = ["code", "fingerprint"])]
    link: Option<String>,
    /// Instead of --link: the central server (https://HOST:PORT, or http:// on loopback).
    #[arg(long, requires = "code")]
    server: Option<String>,
    /// With --server: the pairing code (e.g. 7K2QM-X9D4R).
    #[arg(long, requires = "server")]
    code: Option<String>,
    /// With --server: the server's certificate fingerprint (sha256:HEX), needed for https://.
    #[arg(long, requires = "server")]
    fingerprint: Option<CertFingerprint>,
    /// Where to write the device's files (must not exist yet).
    #[arg(long)]
    out: PathBuf,
}

pub fn run(args: Args) -> Result<ExitCode> {
    if args.out.exists() {
        bail_usage!(
            "{} already exists; pair into a new directory",
            args.out.display()
        );
    }
    let link = match (&args.link, &args.server, &args.code) {
        (Some(link), _, _) => PairingLink::parse(link).usage()?,
        (None, Some(server), Some(code)) => {
            if !server.contains("://") {
                bail_usage!(
                    "--server {server} needs its scheme: https://{server} (or http://{server} \
                     on loopback)"
                );
            }
            PairingLink::new(server, code, args.fingerprint).usage()?
        }
        _ => bail_usage!("--link, or --server with --code, is needed"),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let pairing = runtime.block_on(gatemesh_node::pairing::pair(&link))?;
    let written = write(&args.out, &pairing);
    if written.is_err() {
        // A half-written directory would look paired; the code is spent either way.
        let _ = std::fs::remove_dir_all(&args.out);
    }
    written?;
    let paired = pairing.gate_file();
    println!(
        "{}",
        serde_json::json!({ "event": paired.event, "name": paired.name, "role": paired.role, "dir": args.out })
    );
    Ok(ExitCode::SUCCESS)
}

fn write(out: &std::path::Path, pairing: &gatemesh_node::pairing::Pairing) -> Result<()> {
    pairing
        .write_identity(&out.join("identity"))
        .context("writing the device identity")?;
    // One file a key (several while keys rotate): issuer.pub.pem, issuer-1.pub.pem, …
    for (i, pem) in pairing.issuer_pems().iter().enumerate() {
        let name = if i == 0 {
            "issuer.pub.pem".to_owned()
        } else {
            format!("issuer-{i}.pub.pem")
        };
        std::fs::write(out.join(name), pem)?;
    }
    pairing.gate_file().create(out)
}
