use std::{io::Read, path::PathBuf, process::ExitCode};

use anyhow::{Context, Result, bail};
use gatemesh_ticket::{EventId, Format, Keyring, MAX_CODE_LEN, PublicKey, Verifier};
use serde_json::json;

use crate::timefmt;

/// Verify one ticket code offline and print the result as one JSON object.
/// Exit status 0 for a valid ticket, 1 for a refused one, 2 for a usage error.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Issuer public key (SPKI PEM); repeat for several keys during a rotation.
    #[arg(long = "issuer", required = true, value_name = "PUB.pem")]
    issuers: Vec<PathBuf>,
    /// The event the gate checks in; GM1 tickets can only be verified against one.
    #[arg(long)]
    event: Option<EventId>,
    /// Verify as of this moment instead of now (RFC 3339).
    #[arg(long)]
    at: Option<String>,
    /// The code as scanned, or `-` to read it from standard input.
    code: String,
}

pub fn load_keyring(paths: &[PathBuf]) -> Result<Keyring> {
    let mut ring = Keyring::default();
    for path in paths {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading issuer key {}", path.display()))?;
        let key = PublicKey::from_pem(&text)
            .with_context(|| format!("reading issuer key {}", path.display()))?;
        ring.add(key)
            .with_context(|| format!("adding {}", path.display()))?;
    }
    Ok(ring)
}

pub fn run(args: Args) -> Result<ExitCode> {
    let code = if args.code == "-" {
        let mut buf = String::new();
        std::io::stdin()
            .take(MAX_CODE_LEN as u64 + 1)
            .read_to_string(&mut buf)
            .context("reading the code from standard input")?;
        buf
    } else {
        args.code
    };
    let at = args
        .at
        .as_deref()
        .map(timefmt::parse)
        .transpose()?
        .unwrap_or_else(timefmt::now);
    let mut verifier = Verifier::new(load_keyring(&args.issuers)?);
    match args.event {
        Some(event) => verifier = verifier.for_event(event),
        None if gatemesh_ticket::detect(code.trim()) == Some(Format::Gm1) => {
            bail!("GM1 tickets carry only a tag of their event: pass --event EID to verify one")
        }
        None => {}
    }
    let answer = match verifier.verify(&code, at) {
        Ok(t) => json!({
            "valid": true,
            "format": t.format,
            "tid": t.claims.tid,
            "eid": t.claims.eid,
            "seat": t.claims.seat,
            "kid": t.kid,
            "exp": t.claims.exp.map(timefmt::format),
        }),
        Err(e) => json!({ "valid": false, "reason": e.reason(), "detail": e.to_string() }),
    };
    println!("{answer}");
    Ok(if answer["valid"] == true {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
