//! `gatemesh`: the one binary for organisers, gates and servers.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod bench;
mod decode;
mod exit;
mod gate;
mod issue;
mod keygen;
mod keys;
mod pair;
mod rehearse;
mod server;
mod timefmt;
mod verify;

/// Offline QR ticket check-in for venue entrances.
#[derive(Debug, Parser)]
#[command(name = "gatemesh", version, about, propagate_version = true, after_help = exit::HELP)]
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
    Gate(Box<gate::Args>),
    Token(gate::TokenArgs),
    Export(gate::ExportArgs),
    Import(gate::ImportArgs),
    Bench(gatemesh_rehearse::bench::Args),
    MeshCa(gate::MeshCaArgs),
    Enroll(gate::EnrollArgs),
    Server(server::Args),
    Pair(pair::Args),
    Rehearse(gatemesh_rehearse::rehearse::Options),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Keygen(args) => keygen::run(args),
        Command::Issue(args) => issue::run(args),
        Command::Verify(args) => verify::run(args),
        Command::Decode(args) => decode::run(args),
        Command::Gate(args) => gate::run(*args),
        Command::Token(args) => gate::token(args),
        Command::Export(args) => gate::export(args),
        Command::Import(args) => gate::import(args),
        Command::Bench(args) => bench::run(args),
        Command::MeshCa(args) => gate::mesh_ca(args),
        Command::Enroll(args) => gate::enroll(args),
        Command::Server(args) => server::run(args),
        Command::Pair(args) => pair::run(args),
        Command::Rehearse(args) => rehearse::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            exit::code(&e)
        }
    }
}
