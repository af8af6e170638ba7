/* eslint-disable @typescript-eslint/prefer-promise-reject-errors --
   The real commands reject with the desk's ErrorView ({code, message}); the stand-in does too. */
/**
 * A stand-in gate for `npm run dev` in a plain browser (no Tauri): enough behaviour to look
 * at every screen. Only imported under `import.meta.env.DEV`, so never shipped.
 */

import type {
  AppInfo,
  DeskEvent,
  ErrorCode,
  ErrorView,
  FlagView,
  ScanView,
  SettingsView,
  StaffRole,
  StaffView,
  StatusView,
} from "../bindings";
import type { DeskApi } from "../desk";
import { PIN_TEXT, pinProblem } from "../logic/rules";

const STAFF: { name: string; role: StaffRole; pin: string }[] = [
  { name: "Sam", role: "staff", pin: "1111" },
  { name: "Kim", role: "supervisor", pin: "2222" },
  { name: "Alex", role: "manager", pin: "3333" },
];

/** A refusal shaped as the desk's (gatemesh_desk::ErrorView). */
const refuse = (code: ErrorCode, message: string): Promise<never> =>
  Promise.reject({ code, message } satisfies ErrorView);

/** The development stand-in's check-in lists. */
const LISTS = [
  { id: "main", name: "Main entrance" },
  { id: "backstage", name: "Backstage" },
];

/** The development stand-in's guest list (tickets whose codes are `GM1:<tid>`). */
const GUESTS = [
  { tid: "T-ADA001", seat: "B-14", holder: "Ada Lovelace", order: "ORD-1001" },
  { tid: "T-ALAN02", seat: "B-15", holder: "Alan Turing", order: "ORD-1002" },
  { tid: "T-GRACE3", seat: "C-2", holder: "Grace Hopper", order: "ORD-2001" },
];

export function mockDesk(): DeskApi {
  const params = new URLSearchParams(window.location.search);
  let setUp = !params.has("setup");
  let who: StaffView | null = null;
  const auto = params.get("as");
  const found = STAFF.find((s) => s.name === auto);
  if (found !== undefined) who = { name: found.name, role: found.role };
  const used = new Map<string, { gate: string; scanner: string; at_ms: number }>();
  const listeners = new Set<(e: DeskEvent) => void>();
  const start = Date.now();
  const t0 = start - 4 * 60_000;
  let open: FlagView[] = [
    {
      tid: "T-7QK2M",
      open: true,
      redemptions: [
        { id: "r1", gate: "Main-Entrance", scanner: "Lane 1", at_ms: t0, concurrent: true },
        { id: "r2", gate: "Side-Door", scanner: "Lane 2", at_ms: t0 + 43_000, concurrent: true },
      ],
      audit: [],
    },
  ];
  const resolved: FlagView[] = [];
  let admitted = 37;
  const series = (seed: number) =>
    Array.from({ length: 30 }, (_, i) => Math.max(0, Math.round(6 + 5 * Math.sin(i / 3 + seed))));
  let event = "DEMO-20261106";
  let running = {
    gate_name: "Main-Entrance",
    reentry: false,
    reject_unlisted: false,
    idle_sign_out_min: 15,
  };
  let saved = { ...running };
  let chosenLists = ["main"];
  let capacity: number | null = 200;
  let mesh = true;
  const settings = (): SettingsView => ({
    ...saved,
    running_gate_name: running.gate_name,
    restart_needed:
      saved.gate_name !== running.gate_name ||
      saved.reentry !== running.reentry ||
      saved.reject_unlisted !== running.reject_unlisted,
    staff: STAFF.map((s) => ({ name: s.name, role: s.role })),
    locked: [...locked],
    server: mesh ? "https://tickets.example.org" : null,
    mesh,
    discovery: true,
    peers: [],
    lists: LISTS.map((l) => ({ ...l, chosen: chosenLists.includes(l.id) })),
  });
  const locked = new Set<string>();
  const failures = new Map<string, number>();
  const manager = (): Promise<never> | null =>
    who === null
      ? refuse("signed_out", "sign in first")
      : who.role !== "manager"
        ? refuse("not_allowed", `a ${who.role} may not do this`)
        : null;
  const info = (): AppInfo => ({
    needs_setup: !setUp,
    event: setUp ? event : null,
    gate_name: setUp ? running.gate_name : null,
    capacity: setUp ? capacity : null,
    observer: false,
    signed_in: who,
    staff_names: setUp ? STAFF.map((s) => s.name) : [],
    demo_pins: setUp ? STAFF.map((s) => ({ ...s })) : [],
    api: setUp ? "http://127.0.0.1:41234" : null,
    api_token_file: setUp ? "/home/staff/.local/share/gatemesh/gate/api.token" : null,
    tickets_pdf: setUp ? "/home/gate/.local/share/gatemesh/demo/tickets/tickets.pdf" : null,
  });
  const emit = (e: DeskEvent) => setTimeout(() => listeners.forEach((l) => l(e)), 5);
  const later = <T>(v: T): Promise<T> => new Promise((r) => setTimeout(() => r(v), 30));

  // Screenshot helpers: `?click=#nav-gates,#x` clicks in turn; `?emit=CODE` reports a scan
  // as if it came through the gate's HTTP API.
  const clicks = (params.get("click") ?? "").split(",").filter((c) => c.length > 0);
  clicks.forEach((sel, i) =>
    setTimeout(() => document.querySelector<HTMLElement>(sel)?.click(), 400 * (i + 1)),
  );
  const emitCode = params.get("emit");
  // `?wedge=CODE` types CODE as a fast keyboard-wedge burst (ending in Enter unless
  // `&noenter`), after the clicks.
  const wedge = params.get("wedge");
  if (wedge !== null) {
    const begin = 400 * (clicks.length + 2);
    const keys = [...Array.from(wedge), ...(params.has("noenter") ? [] : ["Enter"])];
    keys.forEach((key, i) =>
      setTimeout(
        () => {
          const target = document.activeElement ?? document.body;
          target.dispatchEvent(new KeyboardEvent("keydown", { key, bubbles: true }));
        },
        begin + i * 4,
      ),
    );
  }

  const desk: DeskApi = {
    appInfo: () => later(info()),
    signIn(name, pin) {
      if (pinProblem(pin) !== null) return refuse("bad_input", PIN_TEXT);
      if (locked.has(name)) return refuse("locked", `${name} is locked after too many wrong PINs`);
      const s = STAFF.find((x) => x.name === name && x.pin === pin);
      if (s === undefined) {
        const n = (failures.get(name) ?? 0) + 1;
        failures.set(name, n);
        if (n >= 5) locked.add(name);
        return refuse("wrong_pin", "wrong name or PIN");
      }
      failures.delete(name);
      who = { name: s.name, role: s.role };
      return later(who);
    },
    signOut() {
      who = null;
      return later(undefined);
    },
    searchGuests(query) {
      if (who === null) return refuse("signed_out", "sign in first");
      const q = query.trim().toLowerCase();
      const guests = GUESTS.filter(
        (g) => g.holder.toLowerCase().includes(q) || g.order.toLowerCase().includes(q),
      ).map((g) => {
        const first = used.get(g.tid);
        return {
          tid: g.tid,
          seat: g.seat,
          holder: g.holder,
          order: g.order,
          entries: first === undefined ? 0 : 1,
          first_gate: first?.gate ?? null,
          first_at_ms: first?.at_ms ?? null,
        };
      });
      return later({ search: true, guests });
    },
    checkInGuest(tid, scanner) {
      if (who === null) return refuse("signed_out", "sign in first");
      const g = GUESTS.find((x) => x.tid === tid);
      if (g === undefined) return refuse("not_found", `no guest with ticket ${tid}`);
      return this.scan(`GM1:${tid}`, scanner);
    },
    scan(code, scanner) {
      if (who === null) return refuse("signed_out", "sign in first");
      const at_ms = Date.now();
      const base = {
        tid: null,
        seat: null,
        scanner,
        first: null,
        transferred_to: null,
        at_ms,
        list: null,
        detail: null,
      };
      let v: ScanView;
      if (code.startsWith("GM1:")) {
        const tid = code.slice(4, 12) || "T-0000";
        const first = used.get(tid);
        if (first === undefined) {
          used.set(tid, { gate: "Main-Entrance", scanner, at_ms });
          admitted += 1;
          v = { ...base, verdict: "admit", reason: "valid", tid, seat: "B-14" };
        } else {
          v = {
            ...base,
            verdict: "duplicate",
            reason: "already_admitted",
            tid,
            seat: "B-14",
            first,
          };
        }
      } else if (code.startsWith("OLD")) {
        v = {
          ...base,
          verdict: "duplicate",
          reason: "already_admitted",
          tid: "T-OLD",
          seat: "C-2",
          first: { gate: "Side-Door", scanner: "Lane 2", at_ms: at_ms - 125_000 },
        };
      } else if (code.startsWith("BAD")) {
        v = { ...base, verdict: "reject", reason: "bad_signature" };
      } else {
        v = { ...base, verdict: "reject", reason: "unreadable" };
      }
      emit({ type: "verdict", scan: v });
      return later(v);
    },
    status: () =>
      later<StatusView>({
        event: "DEMO-20261106",
        gate_name: "Main-Entrance",
        capacity: 200,
        admitted_total: admitted,
        flagged: open.length,
        minute_ms: Date.now() - (Date.now() % 60_000),
        lists: [{ name: "Main entrance", inside: admitted, capacity: 200, level: "ok" }],
        refusals: [
          { reason: "bad_signature", count: 3 },
          { reason: "not_on_list", count: 1 },
        ],
        gates: [
          {
            name: "Main-Entrance",
            this_gate: true,
            online: true,
            last_seen_ms: Date.now(),
            admitted: admitted - 12,
            duplicates: 3,
            rejects: 1,
            refusals: [{ reason: "bad_signature", count: 1 }],
            scans_per_minute: 7,
            per_minute: series(0),
            uplink: "offline",
            pending_uploads: 14,
            rtt_ms: null,
          },
          {
            name: "Side-Door",
            this_gate: false,
            online: true,
            last_seen_ms: Date.now() - 3000,
            admitted: 12,
            duplicates: null,
            rejects: null,
            refusals: [],
            scans_per_minute: 4,
            per_minute: series(2),
            uplink: null,
            pending_uploads: null,
            rtt_ms: 1.2,
          },
          {
            name: "North-Gate",
            this_gate: false,
            online: false,
            last_seen_ms: start - 600_000,
            admitted: 0,
            duplicates: null,
            rejects: null,
            refusals: [],
            scans_per_minute: 0,
            per_minute: Array.from({ length: 30 }, () => 0),
            uplink: null,
            pending_uploads: null,
            rtt_ms: null,
          },
        ],
      }),
    flags: () => later({ open, resolved }),
    resolve(tid, action, note) {
      if (who === null) return refuse("signed_out", "sign in first");
      if (who.role === "staff") return refuse("not_allowed", "a Staff may not do this");
      const f = open.find((x) => x.tid === tid);
      if (f === undefined) return refuse("not_found", "no such flag");
      open = open.filter((x) => x.tid !== tid);
      resolved.unshift({
        ...f,
        open: false,
        audit: [{ at_ms: Date.now(), actor: who.name, action: `resolve:${action}`, detail: note }],
      });
      emit({ type: "flags" });
      return later(undefined);
    },
    pair(r) {
      if (pinProblem(r.managerPin) !== null) return refuse("bad_input", PIN_TEXT);
      setUp = true;
      return later(info());
    },
    setupFiles(r) {
      if (pinProblem(r.managerPin) !== null) return refuse("bad_input", PIN_TEXT);
      if (!r.setup.issuer_pem.includes("PUBLIC KEY") && !r.setup.issuer_pem.includes('"keys"'))
        return refuse("bad_input", "the issuer key (a PEM public key or a JWK Set)");
      event = r.setup.event;
      running = {
        gate_name: r.setup.gate_name,
        reentry: false,
        reject_unlisted: false,
        idle_sign_out_min: 15,
      };
      saved = { ...running };
      capacity = r.setup.capacity;
      mesh = r.setup.identity_dir !== null;
      STAFF.splice(0, STAFF.length, { name: r.managerName, role: "manager", pin: r.managerPin });
      setUp = true;
      return later(info());
    },
    openDemo() {
      setUp = true;
      return later(info());
    },
    settings: () => later(settings()),
    updateSettings(f) {
      const refused = manager();
      if (refused !== null) return refused;
      saved = {
        gate_name: f.gateName,
        reentry: f.reentry,
        reject_unlisted: f.rejectUnlisted,
        idle_sign_out_min: f.idleSignOutMin,
      };
      return later(settings());
    },
    putStaff(name, role, pin) {
      const refused = manager();
      if (refused !== null) return refused;
      if (pinProblem(pin) !== null) return refuse("bad_input", PIN_TEXT);
      locked.delete(name);
      const i = STAFF.findIndex((s) => s.name === name);
      if (i >= 0) STAFF.splice(i, 1);
      STAFF.push({ name, role, pin });
      return later(settings());
    },
    removeStaff(name) {
      const refused = manager();
      if (refused !== null) return refused;
      const left = STAFF.filter((s) => s.name !== name);
      if (!left.some((s) => s.role === "manager"))
        return refuse("conflict", "keep at least one manager");
      STAFF.splice(0, STAFF.length, ...left);
      return later(settings());
    },
    chooseLists(lists) {
      const refused = manager();
      if (refused !== null) return refused;
      const unknown = lists.find((id) => !LISTS.some((l) => l.id === id));
      if (unknown !== undefined) return refuse("bad_input", `there is no list ${unknown}`);
      chosenLists = [...lists];
      return later(settings());
    },
    unlockStaff(name) {
      const refused = manager();
      if (refused !== null) return refused;
      locked.delete(name);
      failures.delete(name);
      return later(settings());
    },
    decodeFrame: () => later([]),
    onEvent(handler) {
      listeners.add(handler);
      return Promise.resolve(() => listeners.delete(handler));
    },
  };
  if (emitCode !== null)
    setTimeout(() => void desk.scan(emitCode, "HTTP"), 400 * (clicks.length + 1));
  return desk;
}
