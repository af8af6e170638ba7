//! `gatemesh`: the one binary for organisers, gates and servers.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod decode;
mod issue;
mod keygen;
mod timefmt;
mod verify;

/// Offline QR ticket check-in for venue entrances.
#[derive(Debug, Parser)]
#[command(name = "gatemesh", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Keygen(keygen::Args),
    Issue(issue::Args),
    Verify(verify::Args),
    Decode(decode::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Keygen(args) => keygen::run(args),
        Command::Issue(args) => issue::run(args),
        Command::Verify(args) => verify::run(args),
        Command::Decode(args) => decode::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
