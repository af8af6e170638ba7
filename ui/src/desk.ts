/**
 * The app's commands (src-tauri/src/main.rs → gatemesh_desk), typed with the generated
 * bindings. A command the desk refuses rejects with an `ErrorView` ({code, message}; see
 * logic/errors.ts). Screens talk to a `DeskApi`, so they do not care whether it is Tauri's
 * IPC or the development stand-in.
 */

import { invoke } from "@tauri-apps/api/core";
import { listen } from "@tauri-apps/api/event";
import type {
  AppInfo,
  DeskEvent,
  FlagsView,
  Action,
  GuestsView,
  ScanView,
  SettingsView,
  StaffRole,
  StaffView,
  StatusView,
} from "./bindings";
import type { PairRequest } from "./logic/pairing";
import type { FileSetupRequest, SettingsForm } from "./logic/settings";

export interface DeskApi {
  appInfo(): Promise<AppInfo>;
  /** Signs `name` in (one of `AppInfo.staff_names`) with their PIN. */
  signIn(name: string, pin: string): Promise<StaffView>;
  signOut(): Promise<void>;
  scan(code: string, scanner: string): Promise<ScanView>;
  /** Guests found by part of a name or order, or by ticket id or seat. */
  searchGuests(query: string): Promise<GuestsView>;
  /** Checks a guest found by search in, in the signed-in person's name. */
  checkInGuest(tid: string, scanner: string): Promise<ScanView>;
  status(): Promise<StatusView>;
  flags(): Promise<FlagsView>;
  resolve(tid: string, action: Action, note: string): Promise<void>;
  pair(request: PairRequest): Promise<AppInfo>;
  /** Sets up an event from the organizer's files (issuer key, optional identity). */
  setupFiles(request: FileSetupRequest): Promise<AppInfo>;
  /** Opens the demo event (set up on first use, kept apart from the real one). */
  openDemo(): Promise<AppInfo>;
  settings(): Promise<SettingsView>;
  /** Managers: saved now, used from the app's next start. */
  updateSettings(form: SettingsForm): Promise<SettingsView>;
  /** Managers: adds a person, or gives one a new role and PIN. */
  putStaff(name: string, role: StaffRole, pin: string): Promise<SettingsView>;
  removeStaff(name: string): Promise<SettingsView>;
  /** Managers: the check-in lists this gate checks (none: all), at once. */
  chooseLists(lists: string[]): Promise<SettingsView>;
  /** Managers: lets a name locked after wrong PINs sign in again. */
  unlockStaff(name: string): Promise<SettingsView>;
  /** QR texts found in a frame (see logic/frame.ts for its bytes). */
  decodeFrame(frame: Uint8Array): Promise<string[]>;
  /** Calls `handler` for every `desk` event; resolves to a function that stops it. */
  onEvent(handler: (e: DeskEvent) => void): Promise<() => void>;
}

export const tauriDesk: DeskApi = {
  appInfo: () => invoke<AppInfo>("app_info"),
  signIn: (name, pin) => invoke<StaffView>("sign_in", { name, pin }),
  signOut: () => invoke<null>("sign_out").then(() => undefined),
  scan: (code, scanner) => invoke<ScanView>("scan", { code, scanner }),
  searchGuests: (query) => invoke<GuestsView>("search_guests", { query }),
  checkInGuest: (tid, scanner) => invoke<ScanView>("check_in_guest", { tid, scanner }),
  status: () => invoke<StatusView>("status"),
  flags: () => invoke<FlagsView>("flags"),
  resolve: (tid, action, note) =>
    invoke<null>("resolve", { tid, action, note }).then(() => undefined),
  pair: (r) => invoke<AppInfo>("pair", { ...r }),
  setupFiles: (r) => invoke<AppInfo>("setup_files", { ...r }),
  openDemo: () => invoke<AppInfo>("open_demo"),
  settings: () => invoke<SettingsView>("settings"),
  updateSettings: (f) => invoke<SettingsView>("update_settings", { ...f }),
  putStaff: (name, role, pin) => invoke<SettingsView>("put_staff", { name, role, pin }),
  removeStaff: (name) => invoke<SettingsView>("remove_staff", { name }),
  unlockStaff: (name) => invoke<SettingsView>("unlock_staff", { name }),
  chooseLists: (lists) => invoke<SettingsView>("choose_lists", { lists }),
  // A raw body: Tauri passes the bytes through as they are, no JSON array of numbers.
  decodeFrame: (frame) => invoke<string[]>("decode_frame", frame),
  onEvent: (handler) => listen<DeskEvent>("desk", (e) => handler(e.payload)),
};
