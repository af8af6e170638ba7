//! gatemesh desktop app: a thin Tauri shell around the gate-supervisor desk
//! (`gatemesh_desk`). Every command forwards to the desk and every node event is
//! forwarded to the window as a `desk` event; nothing here decides anything (who may run a
//! command is the desk's to check too). A refused command fails with the desk's error, which
//! reaches the UI as `{code, message}`.
//!
//! `gatemesh-app [--demo] [--data DIR]`: the app keeps its gate in DIR (default
//! `$XDG_DATA_HOME/gatemesh`, or `…/gatemesh/demo` with `--demo`). With `--demo` it sets up a
//! demo event on first start (keys, a printable batch of tickets, a second gate on loopback).
//!
//! The configuration is `tauri.conf.json` beside this crate's `Cargo.toml`, and
//! the built front end is embedded at compile time, so build `ui/` before this crate.

// Release builds on Windows should not open a console window next to the app.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

use std::{path::PathBuf, process::ExitCode, sync::Arc};

use gatemesh_desk::{
    Action, AppInfo, Desk, DeskError, DeskEvent, FileSetup, FlagsView, GuestsView, ScanView,
    SettingsView, StaffEntry, StaffRole, StaffView, StatusView, desk_event,
};
use tauri::{Emitter, Manager, State};
use tokio::sync::RwLock;

struct AppState {
    root: PathBuf,
    /// Where the demo event lives when the first-run screen opens it: apart from `root`, so
    /// trying the demo never stands in the way of setting up the real event.
    demo_root: PathBuf,
    desk: RwLock<Option<Arc<Desk>>>,
}

/// What a command answers: its value, or the desk's error as `{code, message}`.
type Answer<T> = Result<T, DeskError>;

async fn desk(state: &State<'_, AppState>) -> Answer<Arc<Desk>> {
    state.desk.read().await.clone().ok_or(DeskError::NotSetUp)
}

#[tauri::command]
async fn app_info(state: State<'_, AppState>) -> Answer<AppInfo> {
    Ok(match state.desk.read().await.as_ref() {
        Some(d) => d.info(),
        None => AppInfo::not_set_up(),
    })
}

#[tauri::command]
async fn sign_in(state: State<'_, AppState>, name: String, pin: String) -> Answer<StaffView> {
    desk(&state).await?.sign_in(&name, &pin).await
}

#[tauri::command]
async fn sign_out(state: State<'_, AppState>) -> Answer<()> {
    desk(&state).await?.sign_out();
    Ok(())
}

#[tauri::command]
async fn scan(state: State<'_, AppState>, code: String, scanner: String) -> Answer<ScanView> {
    desk(&state).await?.scan(&code, &scanner).await
}

#[tauri::command]
async fn search_guests(state: State<'_, AppState>, query: String) -> Answer<GuestsView> {
    desk(&state).await?.search_guests(&query).await
}

#[tauri::command]
async fn check_in_guest(
    state: State<'_, AppState>,
    tid: String,
    scanner: String,
) -> Answer<ScanView> {
    desk(&state).await?.check_in_guest(&tid, &scanner).await
}

#[tauri::command]
async fn choose_lists(state: State<'_, AppState>, lists: Vec<String>) -> Answer<SettingsView> {
    desk(&state).await?.choose_lists(&lists)
}

#[tauri::command]
async fn status(state: State<'_, AppState>) -> Answer<StatusView> {
    desk(&state).await?.status().await
}

#[tauri::command]
async fn flags(state: State<'_, AppState>) -> Answer<FlagsView> {
    desk(&state).await?.flags().await
}

#[tauri::command]
async fn resolve(
    state: State<'_, AppState>,
    tid: String,
    action: Action,
    note: String,
) -> Answer<()> {
    desk(&state).await?.resolve(&tid, action, &note).await
}

/// Puts a newly set-up desk in place (once), its first manager being `manager_name` with
/// `manager_pin`, and forwards its events to the window.
async fn install<F>(
    app: &tauri::AppHandle,
    state: &State<'_, AppState>,
    manager_name: &str,
    manager_pin: &str,
    set_up: impl FnOnce(Vec<StaffEntry>) -> F,
) -> Answer<AppInfo>
where
    F: std::future::Future<Output = Answer<Desk>>,
{
    let manager = StaffEntry::new(manager_name, StaffRole::Manager, manager_pin)?;
    put_in_place(app, state, set_up(vec![manager])).await
}

/// Puts the desk `opening` makes in place, once, and forwards its events to the window.
async fn put_in_place(
    app: &tauri::AppHandle,
    state: &State<'_, AppState>,
    opening: impl std::future::Future<Output = Answer<Desk>>,
) -> Answer<AppInfo> {
    let mut slot = state.desk.write().await;
    if slot.is_some() {
        return Err(DeskError::AlreadySetUp);
    }
    let desk = Arc::new(opening.await?);
    forward_events(app, &desk);
    let info = desk.info();
    *slot = Some(desk);
    Ok(info)
}

/// Opens the demo event from the first-run screen (set up on first use, as `--demo` does,
/// in its own directory): staff sign in with the PINs it shows.
#[tauri::command]
async fn open_demo(app: tauri::AppHandle, state: State<'_, AppState>) -> Answer<AppInfo> {
    let root = state.demo_root.clone();
    put_in_place(&app, &state, async move { Desk::demo(&root).await }).await
}

/// Joins an event with a pairing link from the server.
#[tauri::command]
async fn pair(
    app: tauri::AppHandle,
    state: State<'_, AppState>,
    link: String,
    manager_name: String,
    manager_pin: String,
) -> Answer<AppInfo> {
    let root = state.root.clone();
    install(
        &app,
        &state,
        &manager_name,
        &manager_pin,
        |staff| async move { Desk::pair(&root, &link, staff).await },
    )
    .await
}

/// Sets up an event from files (issuer key text, optional identity directory).
#[tauri::command]
async fn setup_files(
    app: tauri::AppHandle,
    state: State<'_, AppState>,
    setup: FileSetup,
    manager_name: String,
    manager_pin: String,
) -> Answer<AppInfo> {
    let root = state.root.clone();
    install(
        &app,
        &state,
        &manager_name,
        &manager_pin,
        |staff| async move { Desk::from_files(&root, setup, staff).await },
    )
    .await
}

#[tauri::command]
async fn settings(state: State<'_, AppState>) -> Answer<SettingsView> {
    desk(&state).await?.settings()
}

#[tauri::command]
async fn update_settings(
    state: State<'_, AppState>,
    gate_name: String,
    reentry: bool,
    reject_unlisted: bool,
    idle_sign_out_min: u32,
) -> Answer<SettingsView> {
    desk(&state)
        .await?
        .update_settings(&gate_name, reentry, reject_unlisted, idle_sign_out_min)
}

#[tauri::command]
async fn put_staff(
    state: State<'_, AppState>,
    name: String,
    role: StaffRole,
    pin: String,
) -> Answer<SettingsView> {
    desk(&state).await?.put_staff(&name, role, &pin)
}

#[tauri::command]
async fn remove_staff(state: State<'_, AppState>, name: String) -> Answer<SettingsView> {
    desk(&state).await?.remove_staff(&name)
}

#[tauri::command]
async fn unlock_staff(state: State<'_, AppState>, name: String) -> Answer<SettingsView> {
    desk(&state).await?.unlock_staff(&name)
}

/// Decodes QR codes in a camera frame, sent as a raw body (`gatemesh_desk::decode_frame`).
#[tauri::command]
async fn decode_frame(
    state: State<'_, AppState>,
    request: tauri::ipc::Request<'_>,
) -> Answer<Vec<String>> {
    let tauri::ipc::InvokeBody::Raw(bytes) = request.body() else {
        return Err(DeskError::BadInput("send the frame as raw bytes".into()));
    };
    desk(&state).await?.decode_frame(bytes)
}

fn forward_events(app: &tauri::AppHandle, desk: &Desk) {
    let mut events = desk.events();
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        loop {
            match events.recv().await {
                Ok(e) => {
                    let _ = app.emit("desk", desk_event(&e));
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                    let _ = app.emit("desk", DeskEvent::Flags);
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            }
        }
    });
}

struct Args {
    demo: bool,
    data: Option<PathBuf>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        demo: false,
        data: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--demo" => args.demo = true,
            "--data" => args.data = Some(it.next().ok_or("--data needs a directory")?.into()),
            "--help" | "-h" => {
                return Err("usage: gatemesh-app [--demo] [--data DIR]".into());
            }
            other => return Err(format!("unknown argument {other:?} (try --help)")),
        }
    }
    Ok(args)
}

fn default_root(demo: bool) -> PathBuf {
    let base = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("."))
        .join("gatemesh");
    if demo { base.join("demo") } else { base }
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let demo_root = match &args.data {
        Some(data) if !args.demo => data.join("demo"),
        _ => default_root(true),
    };
    let root = args.data.unwrap_or_else(|| default_root(args.demo));
    let opened = tauri::async_runtime::block_on(async {
        if args.demo {
            Desk::demo(&root).await.map(Some)
        } else {
            Desk::open(&root).await
        }
    });
    let desk = match opened {
        Ok(d) => d.map(Arc::new),
        Err(e) => {
            eprintln!("gatemesh-app: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(d) = &desk
        && let Some(api) = d.info().api
    {
        // One line for scripts and tests, like `gatemesh gate`.
        let info = d.info();
        println!(
            "{}",
            serde_json::json!({ "api": api, "api_token": info.api_token_file, "event": info.event })
        );
    }
    let context = tauri::generate_context!();
    let built = tauri::Builder::default()
        .manage(AppState {
            root,
            demo_root,
            desk: RwLock::new(desk.clone()),
        })
        // The scan screen's camera: allowed without a prompt (the app asks for nothing
        // else, and door staff cannot answer a browser dialog mid-queue).
        .on_permission_request(|_webview, kind| match kind {
            tauri::webview::PermissionKind::Camera => tauri::webview::PermissionResponse::Allow,
            _ => tauri::webview::PermissionResponse::Default,
        })
        .setup(move |app| {
            if let Some(d) = &desk {
                forward_events(app.handle(), d);
            }
            Ok(())
        })
        .invoke_handler(tauri::generate_handler![
            app_info,
            sign_in,
            sign_out,
            scan,
            search_guests,
            check_in_guest,
            choose_lists,
            status,
            flags,
            resolve,
            pair,
            setup_files,
            open_demo,
            settings,
            update_settings,
            put_staff,
            remove_staff,
            unlock_staff,
            decode_frame
        ])
        .build(context);
    let app = match built {
        Ok(app) => app,
        Err(err) => {
            eprintln!("gatemesh-app: {err}");
            return ExitCode::FAILURE;
        }
    };
    app.run(|handle, event| {
        if let tauri::RunEvent::Exit = event {
            // Let the gate finish its queue and compact its ledger before the process ends.
            let state = handle.state::<AppState>();
            let desk = tauri::async_runtime::block_on(state.desk.write()).take();
            if let Some(desk) = desk.and_then(|d| Arc::try_unwrap(d).ok()) {
                tauri::async_runtime::block_on(desk.shutdown());
            }
        }
    });
    ExitCode::SUCCESS
}
