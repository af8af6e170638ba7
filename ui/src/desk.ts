/**
 * The app's commands (src-tauri/src/main.rs → gatemesh_node::desk), typed with the
 * generated bindings. Screens talk to a `DeskApi`, so they do not care whether it is
 * Tauri's IPC or the development stand-in.
 */

import { invoke } from "@tauri-apps/api/core";
import { listen } from "@tauri-apps/api/event";
import type {
  AppInfo,
  DeskEvent,
  FlagsView,
  ResolveAction,
  ScanView,
  StaffView,
  StatusView,
} from "./bindings";
import type { PairRequest } from "./logic/pairing";

export interface DeskApi {
  appInfo(): Promise<AppInfo>;
  signIn(pin: string): Promise<StaffView>;
  signOut(): Promise<void>;
  scan(code: string, scanner: string): Promise<ScanView>;
  status(): Promise<StatusView>;
  flags(): Promise<FlagsView>;
  resolve(tid: string, action: ResolveAction, note: string): Promise<void>;
  pair(request: PairRequest): Promise<AppInfo>;
  /** QR texts found in a frame (see logic/frame.ts for its bytes). */
  decodeFrame(frame: Uint8Array): Promise<string[]>;
  /** Calls `handler` for every `desk` event; resolves to a function that stops it. */
  onEvent(handler: (e: DeskEvent) => void): Promise<() => void>;
}

export const tauriDesk: DeskApi = {
  appInfo: () => invoke<AppInfo>("app_info"),
  signIn: (pin) => invoke<StaffView>("sign_in", { pin }),
  signOut: () => invoke<null>("sign_out").then(() => undefined),
  scan: (code, scanner) => invoke<ScanView>("scan", { code, scanner }),
  status: () => invoke<StatusView>("status"),
  flags: () => invoke<FlagsView>("flags"),
  resolve: (tid, action, note) =>
    invoke<null>("resolve", { tid, action, note }).then(() => undefined),
  pair: (r) => invoke<AppInfo>("pair", { ...r }),
  // A raw body: Tauri passes the bytes through as they are, no JSON array of numbers.
  decodeFrame: (frame) => invoke<string[]>("decode_frame", frame),
  onEvent: (handler) => listen<DeskEvent>("desk", (e) => handler(e.payload)),
};
