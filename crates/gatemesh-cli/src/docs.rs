//! `gatemesh completions SHELL` and `gatemesh man DIR`: shell completions and man pages,
//! generated from the same clap definitions that parse the command line, so they name
//! exactly the commands and options this binary has. `scripts/package.sh` ships both in
//! the desktop app's packages.

use std::{io::Write, path::PathBuf, process::ExitCode};

use anyhow::Context as _;
use clap_complete::aot::{Shell, generate};

use crate::exit::{UsageExt as _, usage};

/// Print a completion script for bash, zsh, fish, elvish or PowerShell.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete for; the script goes to standard output.
    #[arg(value_enum)]
    shell: Shell,
}

/// Write the man pages: one for gatemesh and one for each of its commands.
#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Directory for the pages (made if missing): gatemesh.1 and one gatemesh-COMMAND.1 per
    /// command; pages already there are replaced.
    dir: PathBuf,
}

/// Writes the completion script for `args.shell` to standard output.
pub fn completions(mut cli: clap::Command, args: CompletionsArgs) -> anyhow::Result<ExitCode> {
    let mut script = Vec::new();
    generate(args.shell, &mut cli, "gatemesh", &mut script);
    let mut out = std::io::stdout().lock();
    out.write_all(&script)
        .and_then(|()| out.flush())
        .context("writing the completion script")?;
    Ok(ExitCode::SUCCESS)
}

/// Writes a man page per command (section 1) into `args.dir`.
pub fn man(cli: clap::Command, args: ManArgs) -> anyhow::Result<ExitCode> {
    if args.dir.exists() && !args.dir.is_dir() {
        return Err(usage!("{} is not a directory", args.dir.display()));
    }
    std::fs::create_dir_all(&args.dir)
        .with_context(|| format!("making {}", args.dir.display()))
        .usage()?;
    clap_mangen::generate_to(cli, &args.dir)
        .with_context(|| format!("writing man pages into {}", args.dir.display()))?;
    println!("man pages written to {}", args.dir.display());
    Ok(ExitCode::SUCCESS)
}
