//! gatemesh desktop shell: one Tauri window showing the web UI built from `ui/` into `ui/dist`.
//!
//! The configuration lives at the repository root (`../tauri.conf.json` from this crate), and
//! the built front end is embedded at compile time, so build `ui/` before this crate.

// Release builds on Windows should not open a console window next to the app.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

use std::process::ExitCode;

fn main() -> ExitCode {
    let context = tauri::generate_context!("../tauri.conf.json");
    match tauri::Builder::default().run(context) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("gatemesh-app: {err}");
            ExitCode::FAILURE
        }
    }
}
