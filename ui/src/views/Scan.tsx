import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import type { GuestsView, ScanView } from "../bindings";
import { unlockAudio } from "../audio";
import { CameraUnavailable, startCamera, type CameraSession } from "../camera";
import type { DeskApi } from "../desk";
import { percentOf } from "../logic/chart";
import { errorText } from "../logic/errors";
import { guestLine, searchable } from "../logic/guests";
import { RepeatFilter } from "../logic/frame";
import { idleModel, verdictModel } from "../logic/verdict";
import { isTypingTarget, WedgeReader } from "../logic/wedge";
import { VerdictSymbol } from "./Icons";

export interface ScanProps {
  desk: DeskApi;
  observer: boolean;
  scanners: string[];
  scanner: string;
  onScanner: (name: string) => void;
  /** The scan on show, or null for the ready state. */
  shown: ScanView | null;
  now: number;
  admitted: number | null;
  capacity: number | null;
  /** Sends a code to the gate with the chosen scanner. */
  onCode: (code: string) => void;
  /** Checks in a guest found by search (their code cannot be scanned). */
  onGuest: (tid: string) => Promise<void>;
  error: string | null;
}

export function Scan(props: ScanProps) {
  const { onCode, observer } = props;
  const model = props.shown === null ? idleModel(observer) : verdictModel(props.shown, props.now);
  const fill = percentOf(props.admitted ?? 0, props.capacity);

  useWedge(onCode, !observer);

  return (
    <main class="screen scan">
      <div class="scan-bar">
        <label class="scanner-pick">
          Scanner
          <select
            id="scanner-select"
            value={props.scanner}
            onChange={(e) => {
              props.onScanner(e.currentTarget.value);
              // Hand the keyboard back to the scan reader (a focused <select> would take
              // the scanner's keys as type-ahead).
              e.currentTarget.blur();
            }}
          >
            {props.scanners.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <div class="inside">
          <span class="inside-label">Inside</span>
          <span id="admitted-count" class="inside-count">
            {props.admitted ?? "—"} / {props.capacity ?? "—"}
          </span>
          {fill !== null && (
            <span class="bar" aria-hidden="true">
              <span class="bar-fill" style={{ "--fill": `${fill.toFixed(1)}%` }} />
            </span>
          )}
        </div>
      </div>

      <section
        id="verdict"
        class={`verdict ${model.className}`}
        data-verdict={model.kind}
        aria-live="assertive"
      >
        <VerdictSymbol icon={model.icon} />
        <div class="verdict-text">
          <div class="verdict-title">{model.title}</div>
          {model.seat !== null && <div class="verdict-seat">Seat {model.seat}</div>}
          <div class="verdict-reason">{model.reason}</div>
          {model.list !== null && (
            <div id="verdict-list" class={`verdict-list capacity-${model.list.level}`}>
              {model.list.text}
              {model.list.warning !== null && (
                <strong class="capacity-warning" role="status">
                  {" "}
                  {model.list.warning}
                </strong>
              )}
            </div>
          )}
          {model.lines.length > 0 && (
            <ul class="verdict-lines">
              {model.lines.map((l) => (
                <li key={l}>{l}</li>
              ))}
            </ul>
          )}
        </div>
      </section>

      {props.error !== null && (
        <p class="error" role="alert">
          {props.error}
        </p>
      )}

      {!observer && (
        <div class="scan-tools">
          <ManualEntry onCode={onCode} />
          <Camera desk={props.desk} onCode={onCode} />
          <GuestSearch desk={props.desk} onGuest={props.onGuest} />
        </div>
      )}
    </main>
  );
}

/** Keyboard-wedge scanners type anywhere in the app; no field needs the focus. */
function useWedge(onCode: (code: string) => void, enabled: boolean): void {
  const latest = useRef(onCode);
  latest.current = onCode;
  useEffect(() => {
    if (!enabled) return undefined;
    const reader = new WedgeReader();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const schedule = (): void => {
      if (timer !== undefined) clearTimeout(timer);
      const due = reader.deadline();
      if (due === null) return;
      timer = setTimeout(
        () => {
          const code = reader.tick(performance.now());
          if (code !== null) latest.current(code);
          schedule();
        },
        Math.max(0, due - performance.now()) + 1,
      );
    };
    const onKey = (e: KeyboardEvent): void => {
      unlockAudio();
      if (e.isComposing || isTypingTarget(document.activeElement)) {
        return;
      }
      const out = reader.key(
        {
          key: e.key,
          ctrlKey: e.ctrlKey,
          altKey: e.altKey,
          metaKey: e.metaKey,
          altGraph: e.getModifierState("AltGraph"),
        },
        performance.now(),
      );
      if (out.consumed) e.preventDefault();
      if (out.code !== null) latest.current(out.code);
      schedule();
    };
    // Capture: the reader sees keys before a focused button can act on Enter or Space.
    window.addEventListener("keydown", onKey, true);
    return () => {
      window.removeEventListener("keydown", onKey, true);
      if (timer !== undefined) clearTimeout(timer);
    };
  }, [enabled]);
}

function ManualEntry({ onCode }: { onCode: (code: string) => void }) {
  const [code, setCode] = useState("");
  const field = useRef<HTMLInputElement>(null);
  const submit = (): void => {
    const c = code.trim();
    if (c.length === 0) {
      field.current?.focus();
      return;
    }
    onCode(c);
    setCode("");
    // Leave the field so the next wedge scan is read app-wide again.
    field.current?.blur();
  };
  return (
    <form
      class="manual"
      onSubmit={(e) => {
        e.preventDefault();
        submit();
      }}
    >
      <label for="manual-code">Type or paste a ticket code</label>
      <div class="row">
        <input
          id="manual-code"
          ref={field}
          type="text"
          autoComplete="off"
          spellcheck={false}
          value={code}
          onInput={(e) => setCode(e.currentTarget.value)}
          placeholder="GM1:… or a ticket's text"
        />
        <button id="manual-submit" type="submit" class="primary">
          Check
        </button>
      </div>
    </form>
  );
}

/** Finds a guest whose code cannot be scanned, by name, order, ticket or seat. */
function GuestSearch({
  desk,
  onGuest,
}: {
  desk: DeskApi;
  onGuest: (tid: string) => Promise<void>;
}) {
  const [query, setQuery] = useState("");
  const [found, setFound] = useState<GuestsView | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const field = useRef<HTMLInputElement>(null);
  const search = async (q: string): Promise<void> => {
    if (!searchable(q)) {
      setMessage("Type at least two letters of a name, an order, a ticket or a seat.");
      field.current?.focus();
      return;
    }
    setBusy(true);
    try {
      const answer = await desk.searchGuests(q.trim());
      setFound(answer);
      setMessage(
        !answer.search
          ? "This gate has no guest list to search: the organizer did not allow it, or the server's list has not come yet."
          : answer.guests.length === 0
            ? `No guest matches “${q.trim()}”.`
            : null,
      );
    } catch (e) {
      setMessage(`Not searched: ${errorText(e)}`);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form
      class="guest-search"
      onSubmit={(e) => {
        e.preventDefault();
        void search(query);
      }}
    >
      <label for="guest-query">Find a guest (phone dead, ticket at home)</label>
      <div class="row">
        <input
          id="guest-query"
          ref={field}
          type="search"
          autoComplete="off"
          spellcheck={false}
          value={query}
          onInput={(e) => setQuery(e.currentTarget.value)}
          placeholder="Name, order, ticket or seat"
        />
        <button id="guest-find" type="submit" disabled={busy}>
          {busy ? "Finding…" : "Find"}
        </button>
      </div>
      {message !== null && (
        <p class="guest-message" role="status">
          {message}
        </p>
      )}
      {found !== null && found.guests.length > 0 && (
        <ul id="guest-results" class="guest-results">
          {found.guests.map((g) => {
            const line = guestLine(g);
            return (
              <li key={g.tid} class={line.inside ? "guest inside" : "guest"}>
                <div class="guest-who">
                  <strong>{line.title}</strong>
                  <span>{line.detail}</span>
                  <span class="guest-status">{line.status}</span>
                </div>
                <button
                  type="button"
                  class={line.inside ? "" : "primary"}
                  data-tid={g.tid}
                  onClick={(e) => {
                    e.currentTarget.blur();
                    void onGuest(g.tid).then(() => search(query));
                  }}
                >
                  Check in
                </button>
              </li>
            );
          })}
        </ul>
      )}
    </form>
  );
}

function Camera({ desk, onCode }: { desk: DeskApi; onCode: (code: string) => void }) {
  const video = useRef<HTMLVideoElement>(null);
  const session = useRef<CameraSession | null>(null);
  const [state, setState] = useState<"off" | "starting" | "on">("off");
  const [message, setMessage] = useState<string | null>(null);
  const latest = useRef(onCode);
  latest.current = onCode;
  const repeats = useMemo(() => new RepeatFilter(5000), []);

  useEffect(() => () => session.current?.stop(), []);

  const toggle = async (): Promise<void> => {
    unlockAudio();
    if (session.current !== null) {
      session.current.stop();
      session.current = null;
      setState("off");
      return;
    }
    const v = video.current;
    if (v === null || state === "starting") return;
    setState("starting");
    setMessage(null);
    try {
      session.current = await startCamera(
        v,
        (frame) => desk.decodeFrame(frame),
        (codes) => {
          const now = Date.now();
          for (const c of codes) if (repeats.accept(c, now)) latest.current(c);
        },
        setMessage,
      );
      setState("on");
    } catch (e) {
      setState("off");
      setMessage(
        e instanceof CameraUnavailable ? e.message : `The camera did not start: ${String(e)}`,
      );
    }
  };

  return (
    <div class={`camera camera-${state}`}>
      <div class="tool-label">Laptop camera</div>
      <button id="camera-toggle" type="button" onClick={() => void toggle()}>
        {state === "on" ? "Stop camera" : state === "starting" ? "Starting camera…" : "Camera"}
      </button>
      <video ref={video} class="camera-view" muted playsInline />
      {message !== null && (
        <p class="camera-message" role="status">
          {message}
        </p>
      )}
    </div>
  );
}
