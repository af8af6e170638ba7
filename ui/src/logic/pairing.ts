/** Checks of the pairing form before it goes to the desk (which checks again). */

export interface PairForm {
  server: string;
  code: string;
  name: string;
  pin: string;
}

export interface PairRequest {
  server: string;
  code: string;
  managerName: string;
  managerPin: string;
}

/** The request to send, or the first problem in words. */
export function checkPairForm(f: PairForm): { ok: PairRequest } | { error: string } {
  const server = f.server.trim().replace(/\/+$/, "");
  if (!/^https?:\/\/[^\s/]+/i.test(server)) {
    return { error: "The server address starts with http:// or https://" };
  }
  const code = f.code.trim();
  if (code.length === 0) return { error: "Enter the pairing code from the organizer" };
  const name = f.name.trim();
  if (name.length === 0) return { error: "Enter your name" };
  if (!/^\d{4,}$/.test(f.pin)) return { error: "A PIN is at least four digits" };
  return { ok: { server, code, managerName: name, managerPin: f.pin } };
}
