/** Camera failures in words a person at the gate can act on. */

/** Why the camera could not start, in words for the screen. */
export function cameraProblem(e: unknown): string {
  const name = typeof e === "object" && e !== null && "name" in e ? String(e.name) : "";
  switch (name) {
    case "NotFoundError":
    case "OverconstrainedError":
      return "No camera found on this computer. Use a barcode scanner or type the code.";
    case "NotAllowedError":
    case "SecurityError":
      return "Camera access was refused. Allow the camera for gatemesh, or use a barcode scanner.";
    case "TimeoutError":
      return "The camera did not answer. Use a barcode scanner or type the code.";
    case "NotReadableError":
    case "AbortError":
      return "The camera is busy or failed to start (another program may be using it).";
    default:
      return e instanceof Error && e.message.length > 0
        ? `The camera did not start: ${e.message}`
        : "The camera did not start.";
  }
}
