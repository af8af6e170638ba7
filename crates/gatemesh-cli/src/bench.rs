//! `gatemesh bench …`: the measurements of `gatemesh_rehearse::bench`, printed as JSON and
//! written to `--report`; exit code 1 when a correctness check failed while measuring.

use std::process::ExitCode;

use anyhow::Result;
use gatemesh_rehearse::bench::{self, Args};
use serde_json::Value;

pub fn run(args: Args) -> Result<ExitCode> {
    let gatemesh = std::env::current_exe()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let report = runtime.block_on(bench::run(&args, &gatemesh))?;
    println!("{}", serde_json::to_string_pretty(&report)?);
    if let Some(path) = args.report() {
        std::fs::write(path, serde_json::to_string_pretty(&report)?)?;
    }
    // A bench that checks correctness as it goes (the server's) reports a failed check after
    // the numbers, so they are kept for the diagnosis.
    if report.pointer("/checks/ok") == Some(&Value::Bool(false)) {
        eprintln!("error: a correctness check failed; see \"checks\" in the report");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}
