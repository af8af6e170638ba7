//! `gatemesh bench …`: the measurements of `gatemesh_rehearse::bench`, printed as JSON and
//! written to `--report`; exit code 1 when a correctness check failed while measuring.

use std::process::ExitCode;

use anyhow::Result;
use gatemesh_rehearse::bench::{self, Args};
use serde_json::Value;

pub fn run(args: Args) -> Result<ExitCode> {
    // The gates a bench runs in this process log only when asked (GATEMESH_LOG or
    // RUST_LOG): what they did is part of a diagnosis, not of the report.
    if std::env::var_os("GATEMESH_LOG").is_some() || std::env::var_os("RUST_LOG").is_some() {
        crate::log::init(crate::log::LogFormat::Text);
    }
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
