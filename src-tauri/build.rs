//! Runs `tauri-build` against the repository-root `tauri.conf.json`, where the product keeps
//! it; `capabilities/` stays in this crate.

use std::process::ExitCode;

fn main() -> ExitCode {
    let attributes = tauri_build::Attributes::new().config_path("../tauri.conf.json");
    match tauri_build::try_build(attributes) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: gatemesh-app build script: {err:#}");
            ExitCode::FAILURE
        }
    }
}
