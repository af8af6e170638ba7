//! `gatemesh rehearse`: the venue simulator of `gatemesh_rehearse`, with its report printed,
//! written as JSON and SVG on request, and the exit code (1: an invariant does not hold).

use std::{process::ExitCode, time::Duration};

use anyhow::{Context, Result, anyhow};
use gatemesh_rehearse::rehearse::{self, Options, Rehearsal};

pub fn run(args: Options) -> Result<ExitCode> {
    let rehearsal = Rehearsal::prepare(&args, std::env::current_exe()?)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let outcome = runtime.block_on(async {
        tokio::select! {
            r = rehearsal.play() => r,
            () = crate::stop::asked() => Err(anyhow!("interrupted")),
        }
    });
    // Everything the rehearsal started is stopped by now (drop order inside `play`).
    runtime.shutdown_timeout(Duration::from_secs(5));
    let report = outcome?;
    print!("{}", rehearse::text(&report));
    if let Some(path) = &args.report {
        std::fs::write(path, serde_json::to_string_pretty(&report)?)
            .with_context(|| format!("writing {}", path.display()))?;
        let svg = path.with_extension("svg");
        std::fs::write(&svg, rehearse::svg(&report))
            .with_context(|| format!("writing {}", svg.display()))?;
        eprintln!("report: {} and {}", path.display(), svg.display());
    }
    if report["ok"] == true {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("error: an invariant does not hold (see \"invariants\" in the report)");
        Ok(ExitCode::FAILURE)
    }
}
