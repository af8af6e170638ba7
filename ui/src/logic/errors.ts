/** Commands fail with the desk's message as a plain string; other failures are Errors. */
export function errorText(e: unknown): string {
  if (typeof e === "string") return e.length > 0 ? e : "Something went wrong";
  if (e instanceof Error) return e.message.length > 0 ? e.message : e.name;
  if (typeof e === "object" && e !== null && "message" in e) {
    const m = e.message;
    if (typeof m === "string" && m.length > 0) return m;
  }
  return "Something went wrong";
}

/** The desk forgot who was signed in (it refused with "sign in first"). */
export function isSignedOutError(e: unknown): boolean {
  return errorText(e).trim().toLowerCase() === "sign in first";
}
