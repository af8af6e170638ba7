/** What the verdict panel shows for a scan: colour, icon, title and the lines under it. */

import type { CapacityLevel, ScanView, Verdict } from "../bindings";
import { reasonText } from "./reasons";
import { formatClock, timeAgo } from "./time";

export type VerdictKind = Verdict | "idle";

/** Icons are shapes, not only colours, so colour-blind staff can tell them apart. */
export type VerdictIcon = "check" | "bang" | "cross" | "scan";

export interface VerdictModel {
  kind: VerdictKind;
  /** CSS class of the panel (`verdict-admit`, …). */
  className: string;
  icon: VerdictIcon;
  title: string;
  /** The reason in plain words. */
  reason: string;
  /** The seat, large, when the ticket has one. */
  seat: string | null;
  /** Smaller lines: first use, what was wrong, transfer, ticket id, scanner. */
  lines: string[];
  /** At a gate with check-in lists: the list the ticket was taken under and who is inside. */
  list: ListLine | null;
}

/** The list line under a verdict, and its capacity warning. */
export interface ListLine {
  /** "VIP area · 9 / 10 inside". */
  text: string;
  level: CapacityLevel;
  /** "Nearly full" or "Full" for staff to act on; null below 90 %. */
  warning: string | null;
}

const WARNING: Record<CapacityLevel, string | null> = {
  ok: null,
  near: "Nearly full",
  full: "Full: tell your supervisor",
};

/** The list line for a scan taken under a list. */
export function listLine(list: NonNullable<ScanView["list"]>): ListLine {
  const of = list.capacity === null ? "" : ` / ${list.capacity}`;
  return {
    text: `${list.name} · ${list.inside}${of} inside`,
    level: list.level,
    warning: WARNING[list.level],
  };
}

const LOOK: Record<VerdictKind, { icon: VerdictIcon; title: string }> = {
  admit: { icon: "check", title: "ADMIT" },
  duplicate: { icon: "bang", title: "DUPLICATE" },
  reject: { icon: "cross", title: "REJECT" },
  idle: { icon: "scan", title: "READY" },
};

export function idleModel(observer = false): VerdictModel {
  return {
    kind: "idle",
    className: "verdict-idle",
    ...LOOK.idle,
    reason: observer
      ? "This device is an observer: it watches the gates and resolves flags, it admits no one."
      : "Scan a ticket",
    seat: null,
    lines: [],
    list: null,
  };
}

/** The panel for one scan, seen at `nowMs` (for "how long ago" on duplicates). */
export function verdictModel(scan: ScanView, nowMs: number): VerdictModel {
  const kind: VerdictKind = scan.verdict;
  const lines: string[] = [];
  if (scan.first !== null) {
    const f = scan.first;
    lines.push(
      `First used at ${f.gate}, ${f.scanner}, at ${formatClock(f.at_ms)} (${timeAgo(f.at_ms, nowMs)})`,
    );
  } else if (kind === "duplicate") {
    lines.push("Where it was first used is not known here");
  }
  if (scan.detail !== null && kind === "reject") lines.push(scan.detail);
  if (scan.transferred_to !== null) lines.push(`New ticket: ${scan.transferred_to}`);
  if (scan.tid !== null) lines.push(`Ticket ${scan.tid}`);
  lines.push(`${scan.scanner} · ${formatClock(scan.at_ms)}`);
  return {
    kind,
    className: `verdict-${kind}`,
    ...LOOK[kind],
    reason: reasonText(scan.reason),
    seat: scan.seat,
    lines,
    list: scan.list === null ? null : listLine(scan.list),
  };
}

/** A key that tells one scan from another, to show each once (the command and the event both report it). */
export function scanKey(scan: ScanView): string {
  return [scan.at_ms, scan.scanner, scan.verdict, scan.reason, scan.tid ?? ""].join("|");
}

/** Remembers the scans already shown, so a scan reported twice is shown (and sounded) once. */
export class SeenScans {
  private readonly keys: string[] = [];
  constructor(private readonly limit = 50) {}

  /** True the first time a scan is offered, false after. */
  firstTime(scan: ScanView): boolean {
    const k = scanKey(scan);
    if (this.keys.includes(k)) return false;
    this.keys.push(k);
    if (this.keys.length > this.limit) this.keys.shift();
    return true;
  }
}
