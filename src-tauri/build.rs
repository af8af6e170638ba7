//! Runs `tauri-build` against `tauri.conf.json` beside this crate's `Cargo.toml`, where the
//! Tauri CLI (the bundler, `scripts/package.sh`) looks for it too.

use std::process::ExitCode;

fn main() -> ExitCode {
    match tauri_build::try_build(tauri_build::Attributes::new()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: gatemesh-app build script: {err:#}");
            ExitCode::FAILURE
        }
    }
}
