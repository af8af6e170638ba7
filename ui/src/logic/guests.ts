/** A guest found by search, as one line staff read before checking them in. */

import type { GuestView } from "../bindings";
import { formatHourMinute } from "./time";

/** The shortest search the gate answers (one letter would find half the venue). */
export const SHORTEST_QUERY = 2;

/** Whether `query` is long enough to search. */
export function searchable(query: string): boolean {
  // Code points, as the gate counts them.
  return Array.from(query.trim()).length >= SHORTEST_QUERY;
}

/** What the row says of the guest: who, which order and seat, whether they are in. */
export interface GuestLine {
  title: string;
  detail: string;
  /** Already in: the check-in button warns instead of inviting. */
  inside: boolean;
  status: string;
}

export function guestLine(g: GuestView): GuestLine {
  const detail = [
    g.order === null ? null : `Order ${g.order}`,
    g.seat === null ? null : `Seat ${g.seat}`,
    `Ticket ${g.tid}`,
  ]
    .filter((p): p is string => p !== null)
    .join(" · ");
  const inside = g.entries > 0;
  const status =
    !inside || g.first_gate === null
      ? "Not checked in"
      : `In at ${g.first_gate}${g.first_at_ms === null ? "" : `, ${formatHourMinute(g.first_at_ms)}`}`;
  return { title: g.holder ?? "No name on the ticket", detail, inside, status };
}
