//! `gatemesh`: the one binary for organisers, gates and servers.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

use std::process::ExitCode;

use clap::{CommandFactory as _, Parser, Subcommand};

mod bench;
mod decode;
mod docs;
mod exit;
mod gate;
mod issue;
mod keygen;
mod keys;
mod lists;
mod log;
mod pair;
mod rehearse;
mod server;
mod stop;
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
// Each command's help ends with examples that work as written, one after the other: keys,
// a batch, a check, a gate.
enum Command {
    #[command(
        after_help = "Examples:\n  gatemesh keygen --out keys\n  gatemesh keygen --out keys-2027 --kid box-office-2027"
    )]
    Keygen(keygen::Args),
    #[command(
        after_help = "Examples:\n  gatemesh issue --key keys/issuer.key.pem --event ROCK-2026 --count 500 --out batch1\n  gatemesh issue --key keys/issuer.key.pem --event ROCK-2026 --seats seats.csv --out batch2"
    )]
    Issue(issue::Args),
    #[command(
        after_help = "Examples:\n  gatemesh verify --issuer keys/issuer.pub.pem --event ROCK-2026 'GM1:…'\n  gatemesh decode batch1/png/*.png | gatemesh verify --issuer keys/issuer.pub.pem --event ROCK-2026 -"
    )]
    Verify(verify::Args),
    #[command(
        after_help = "Examples:\n  gatemesh decode photo.jpg\n  gatemesh decode --json batch1/png/*.png"
    )]
    Decode(decode::Args),
    #[command(
        after_help = "Examples:\n  gatemesh gate --data north --event ROCK-2026 --name North-1 --issuer keys/issuer.pub.pem --manifest batch1/tickets.csv\n  gatemesh gate --data north --paired north-paired"
    )]
    Gate(Box<gate::Args>),
    #[command(after_help = "Examples:\n  gatemesh token --data north")]
    Token(gate::TokenArgs),
    #[command(
        after_help = "Examples:\n  gatemesh export --data north --event ROCK-2026 --out /media/stick/north.gm"
    )]
    Export(gate::ExportArgs),
    #[command(
        after_help = "Examples:\n  gatemesh import --data south --event ROCK-2026 --identity south-id /media/stick/north.gm"
    )]
    Import(gate::ImportArgs),
    #[command(
        after_help = "Examples:\n  gatemesh bench gate --report gate.json\n  gatemesh bench mesh"
    )]
    Bench(gatemesh_rehearse::bench::Args),
    #[command(after_help = "Examples:\n  gatemesh mesh-ca --event ROCK-2026 --out mesh-ca")]
    MeshCa(gate::MeshCaArgs),
    #[command(
        after_help = "Examples:\n  gatemesh enroll --ca mesh-ca --name North-1 --out north-id\n  gatemesh enroll --ca mesh-ca --name Office --role observer --out office-id"
    )]
    Enroll(gate::EnrollArgs),
    #[command(
        after_help = "Examples:\n  gatemesh server --data srv\n  gatemesh server --data srv --db postgres://gatemesh@127.0.0.1:5432/gatemesh --listen 0.0.0.0:8443 --public-url https://tickets.example.org:8443"
    )]
    Server(server::Args),
    #[command(
        after_help = "Examples:\n  gatemesh pair --link 'gatemesh://pair?server=https://…&code=…&fp=sha256:…' --out north-paired\n  gatemesh pair --server http://127.0.0.1:8080 --code 7K2QM-X9D4R --out north-paired"
    )]
    Pair(pair::Args),
    #[command(
        after_help = "Examples:\n  gatemesh rehearse\n  gatemesh rehearse --gates 8 --attendees 20000 --report rehearsal.json"
    )]
    Rehearse(gatemesh_rehearse::rehearse::Options),
    #[command(
        after_help = "Examples:\n  gatemesh completions bash > ~/.local/share/bash-completion/completions/gatemesh\n  gatemesh completions fish > ~/.config/fish/completions/gatemesh.fish"
    )]
    Completions(docs::CompletionsArgs),
    #[command(after_help = "Examples:\n  gatemesh man man1 && man -l man1/gatemesh-issue.1")]
    Man(docs::ManArgs),
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
        Command::Completions(args) => docs::completions(Cli::command(), args),
        Command::Man(args) => docs::man(Cli::command(), args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            exit::code(&e)
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::Cli;

    /// Every option and argument of every command, as `gatemesh … --help` lists them.
    fn walk(cmd: &clap::Command, path: &str, found: &mut Vec<(String, clap::Arg)>) {
        for arg in cmd.get_arguments() {
            found.push((path.to_owned(), arg.clone()));
        }
        for sub in cmd.get_subcommands() {
            walk(sub, &format!("{path} {}", sub.get_name()), found);
        }
    }

    #[test]
    fn every_option_says_what_it_is_for() {
        let mut cli = Cli::command();
        cli.build();
        let mut found = Vec::new();
        walk(&cli, "gatemesh", &mut found);
        let missing: Vec<String> = found
            .iter()
            .filter(|(_, arg)| !matches!(arg.get_id().as_str(), "help" | "version"))
            .filter(|(_, arg)| arg.get_help().is_none() && arg.get_long_help().is_none())
            .map(|(path, arg)| format!("{path} {}", arg.get_id()))
            .collect();
        assert!(missing.is_empty(), "no help text: {missing:#?}");
    }

    #[test]
    fn every_command_ends_its_help_with_examples() {
        let mut cli = Cli::command();
        cli.build();
        let missing: Vec<&str> = cli
            .get_subcommands()
            .filter(|sub| sub.get_name() != "help")
            .filter(|sub| {
                !sub.get_after_help()
                    .is_some_and(|h| h.to_string().contains("\n  gatemesh "))
            })
            .map(|sub| sub.get_name())
            .collect();
        assert!(missing.is_empty(), "no examples: {missing:?}");
        let top = cli.render_long_help().to_string();
        assert!(top.contains("Exit codes:"), "{top}");
        assert!(!top.contains("later the gate"), "{top}");
    }
}
