use std::{
    io::{BufRead, Read},
    path::PathBuf,
    process::ExitCode,
};

use anyhow::{Context, Result};
use gatemesh_ticket::{EventId, Format, Keyring, MAX_CODE_LEN, Verifier};
use serde_json::json;

use crate::{exit::bail_usage, timefmt};

/// Verify ticket codes offline and print each result as one JSON object (one line each).
/// Exit status 0 when every ticket is valid, 1 when one is refused, 2 for a usage error.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Issuer public key: SPKI PEM or a JWK Set (issuer.jwks.json); repeat for several keys
    /// during a rotation.
    #[arg(long = "issuer", required = true, value_name = "PUB.pem|JWKS.json")]
    issuers: Vec<PathBuf>,
    /// The event the gate checks in; GM1 tickets can only be verified against one.
    #[arg(long)]
    event: Option<EventId>,
    /// Verify as of this moment instead of now (RFC 3339).
    #[arg(long)]
    at: Option<String>,
    /// The code as scanned, or `-` to read codes from standard input, one per line (each
    /// answered on its own line, in order).
    code: String,
}

pub fn load_keyring(paths: &[PathBuf]) -> Result<Keyring> {
    let mut ring = Keyring::default();
    for path in paths {
        for key in crate::keys::public(path, "--issuer")? {
            ring.add(key)
                .with_context(|| format!("adding {}", path.display()))?;
        }
    }
    Ok(ring)
}

pub fn run(args: Args) -> Result<ExitCode> {
    let at = args
        .at
        .as_deref()
        .map(timefmt::parse)
        .transpose()?
        .unwrap_or_else(timefmt::now);
    let mut verifier = Verifier::new(load_keyring(&args.issuers)?);
    if let Some(event) = args.event.clone() {
        verifier = verifier.for_event(event);
    }
    let check = |code: &str| -> Result<bool> {
        if args.event.is_none() && gatemesh_ticket::detect(code.trim()) == Some(Format::Gm1) {
            bail_usage!(
                "GM1 tickets carry only a tag of their event: pass --event EID to verify one"
            )
        }
        let answer = match verifier.verify(code, at) {
            Ok(t) => {
                let mut answer = json!({
                    "valid": true,
                    "format": t.format,
                    "tid": t.claims.tid,
                    "eid": t.claims.eid,
                    "seat": t.claims.seat,
                    "kid": t.kid,
                    "exp": t.claims.exp.map(timefmt::format),
                });
                if let Some(product) = &t.claims.product {
                    answer["product"] = json!(product);
                }
                answer
            }
            Err(e) => json!({ "valid": false, "reason": e.reason(), "detail": e.to_string() }),
        };
        println!("{answer}");
        Ok(answer["valid"] == true)
    };
    let all_valid = if args.code == "-" {
        // One code per line (a scanner's Enter, or `gatemesh decode`'s output), one answer
        // per line, in order; blank lines are skipped.
        let mut all = true;
        let mut stdin = std::io::stdin().lock();
        let mut line = String::new();
        for n in 1.. {
            line.clear();
            let read = (&mut stdin)
                .take(MAX_CODE_LEN as u64 + 2)
                .read_line(&mut line)
                .with_context(|| format!("reading line {n} of standard input"))?;
            if read == 0 {
                break;
            }
            if !line.ends_with('\n') && read > MAX_CODE_LEN {
                bail_usage!(
                    "line {n} of standard input is longer than any ticket code ({MAX_CODE_LEN} bytes)"
                );
            }
            if !line.trim().is_empty() {
                all &= check(line.trim())?;
            }
        }
        all
    } else {
        check(&args.code)?
    };
    Ok(if all_valid {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
