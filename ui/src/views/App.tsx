import { useEffect, useRef, useState } from "preact/hooks";
import type { AppInfo, DeskEvent, ScanView, StaffView, StatusView } from "../bindings";
import { playVerdict, unlockAudio } from "../audio";
import type { DeskApi } from "../desk";
import { errorText, isSignedOutError } from "../logic/errors";
import { canScan, ROLE_LABEL } from "../logic/roles";
import { IDLE_NOTICE } from "../logic/signin";
import {
  loadScanners,
  loadSelected,
  saveScanners,
  saveSelected,
  type KeyValue,
} from "../logic/scanners";
import { SeenScans } from "../logic/verdict";
import { Flags } from "./Flags";
import { Gates } from "./Gates";
import { useNow, usePoll } from "./hooks";
import { Scan } from "./Scan";
import { FirstSetup, Setup } from "./Setup";
import { SignIn } from "./SignIn";

type Screen = "scan" | "gates" | "flags" | "setup";

const SCREENS: { id: Screen; label: string }[] = [
  { id: "scan", label: "Scan" },
  { id: "gates", label: "Gates" },
  { id: "flags", label: "Flags" },
  { id: "setup", label: "Setup" },
];

/** How long a verdict stays on screen when no other scan follows (ms). */
const VERDICT_MS = 6000;

function storage(): KeyValue | null {
  try {
    return window.localStorage;
  } catch {
    return null; // Storage disabled: scanner names last for this session only.
  }
}

export function App({ desk }: { desk: DeskApi }) {
  const [info, setInfo] = useState<AppInfo | null>(null);
  const [fatal, setFatal] = useState<string | null>(null);
  const [screen, setScreen] = useState<Screen>("scan");
  const [notice, setNotice] = useState<string | null>(null);
  const [status, setStatus] = useState<StatusView | null>(null);
  const [statusError, setStatusError] = useState<string | null>(null);
  const [scanners, setScanners] = useState<string[]>(() => loadScanners(storage()));
  const [scanner, setScanner] = useState<string>(() => loadSelected(storage(), scanners));
  const [shown, setShown] = useState<ScanView | null>(null);
  const [scanError, setScanError] = useState<string | null>(null);
  const [flagsChanged, setFlagsChanged] = useState(0);
  const now = useNow(1000);
  const seen = useRef(new SeenScans());
  const statusBusy = useRef(false);
  const statusAgain = useRef(false);

  const who: StaffView | null = info?.signed_in ?? null;
  const observer = info?.observer ?? false;

  const loadInfo = (): void => {
    desk
      .appInfo()
      .then((i) => {
        setInfo(i);
        setFatal(null);
      })
      .catch((e: unknown) => setFatal(errorText(e)));
  };
  useEffect(loadInfo, [desk]);

  // Sound needs a person's gesture first; any key or click will do.
  useEffect(() => {
    window.addEventListener("pointerdown", unlockAudio, true);
    window.addEventListener("keydown", unlockAudio, true);
    return () => {
      window.removeEventListener("pointerdown", unlockAudio, true);
      window.removeEventListener("keydown", unlockAudio, true);
    };
  }, []);

  const signedOut = (message: string): void => {
    setInfo((i) => (i === null ? i : { ...i, signed_in: null }));
    setShown(null);
    setScreen("scan");
    setNotice(message);
  };

  const refreshStatus = (): void => {
    // One request at a time; a refresh asked for meanwhile (after a scan) runs right after,
    // so the count never shows the answer of a request that started before the scan.
    if (statusBusy.current) {
      statusAgain.current = true;
      return;
    }
    statusBusy.current = true;
    statusAgain.current = false;
    desk
      .status()
      .then((s) => {
        setStatus(s);
        setStatusError(null);
      })
      .catch((e: unknown) => {
        // The desk ends an idle session; the next poll finds it ended.
        if (isSignedOutError(e)) signedOut(IDLE_NOTICE);
        else setStatusError(errorText(e));
      })
      .finally(() => {
        statusBusy.current = false;
        if (statusAgain.current) refreshStatus();
      });
  };
  const ready = info !== null && !info.needs_setup && who !== null;
  usePoll(refreshStatus, 2000, ready);

  // The verdict stays until the next scan, or a few seconds.
  useEffect(() => {
    if (shown === null) return undefined;
    const t = setTimeout(() => setShown(null), VERDICT_MS);
    return () => clearTimeout(t);
  }, [shown]);

  const screenRef = useRef(screen);
  screenRef.current = screen;
  const whoRef = useRef(who);
  whoRef.current = who;
  const present = (scan: ScanView): void => {
    // The command's answer and the `desk` event report the same scan: show it once.
    if (!seen.current.firstTime(scan)) return;
    setShown(scan);
    setScanError(null);
    // Sound only where staff watch the verdicts: on the scan screen, signed in.
    if (screenRef.current === "scan" && whoRef.current !== null) playVerdict(scan.verdict);
    refreshStatus();
  };

  const scannerRef = useRef(scanner);
  scannerRef.current = scanner;
  const submitCode = (code: string): void => {
    if (!canScan(who, observer)) return;
    desk
      .scan(code, scannerRef.current)
      .then(present)
      .catch((e: unknown) => {
        if (isSignedOutError(e)) signedOut(IDLE_NOTICE);
        else setScanError(`Not checked: ${errorText(e)}`);
      });
  };

  /** Checks in a guest found by search; the verdict shows as a scan's would. */
  const checkInGuest = (tid: string): Promise<void> => {
    if (!canScan(who, observer)) return Promise.resolve();
    return desk
      .checkInGuest(tid, scannerRef.current)
      .then(present)
      .catch((e: unknown) => {
        if (isSignedOutError(e)) signedOut(IDLE_NOTICE);
        else setScanError(`Not checked in: ${errorText(e)}`);
      });
  };

  const onEvent = (e: DeskEvent): void => {
    if (e.type === "verdict") present(e.scan);
    else {
      setFlagsChanged((n) => n + 1);
      refreshStatus();
    }
  };
  const eventRef = useRef(onEvent);
  eventRef.current = onEvent;
  useEffect(() => {
    let stop: (() => void) | null = null;
    let gone = false;
    desk
      .onEvent((e) => eventRef.current(e))
      .then((f) => {
        if (gone) f();
        else stop = f;
      })
      .catch(() => undefined); // No live events: the polls still refresh every screen.
    return () => {
      gone = true;
      stop?.();
    };
  }, [desk]);

  if (fatal !== null && info === null) {
    return (
      <main class="screen fatal">
        <h1>gatemesh</h1>
        <p class="error">The gate did not answer: {fatal}</p>
        <button type="button" class="big" onClick={loadInfo}>
          Try again
        </button>
      </main>
    );
  }
  if (info === null) {
    return <main class="screen muted">Starting…</main>;
  }
  if (info.needs_setup) {
    return (
      <FirstSetup
        desk={desk}
        onSetUp={(i, how) => {
          setInfo(i);
          setNotice(
            how === "demo"
              ? `The demo event: ${i.gate_name ?? "this gate"} at ${i.event ?? "the demo"}. Sign in with a PIN shown below.`
              : `${how === "paired" ? "Paired" : "Set up"}: ${i.gate_name ?? "this gate"} at ${i.event ?? "the event"}. Sign in with your manager PIN.`,
          );
        }}
      />
    );
  }
  if (who === null) {
    return (
      <SignIn
        desk={desk}
        info={info}
        notice={notice}
        onSignedIn={(w) => {
          setInfo({ ...info, signed_in: w });
          setNotice(null);
          setScanError(null);
          setScreen(info.observer ? "gates" : "scan");
        }}
      />
    );
  }

  const signOut = (): void => {
    desk
      .signOut()
      .catch(() => undefined)
      .finally(() => signedOut("Signed out."));
  };

  return (
    <div class="shell">
      <header class="topbar">
        <div class="where">
          <span class="brand">gatemesh</span>
          <span class="gate-name">{info.gate_name}</span>
        </div>
        <nav>
          {SCREENS.map((s) => (
            <button
              type="button"
              key={s.id}
              id={`nav-${s.id}`}
              class={screen === s.id ? "nav current" : "nav"}
              aria-current={screen === s.id ? "page" : undefined}
              onClick={() => setScreen(s.id)}
            >
              {s.label}
              {s.id === "flags" && status !== null && status.flagged > 0 && (
                <span class="count-badge">{status.flagged}</span>
              )}
            </button>
          ))}
        </nav>
        <div class="who">
          <span id="signed-in">{who.name}</span>
          <span class="role">{ROLE_LABEL[who.role]}</span>
          <button type="button" id="sign-out" onClick={signOut}>
            Sign out
          </button>
        </div>
      </header>
      {screen === "scan" && (
        <Scan
          desk={desk}
          observer={observer}
          scanners={scanners}
          scanner={scanner}
          onScanner={(s) => {
            // At once, not at the next render: a wedge scan can follow the choice within
            // milliseconds, and it must go out under the scanner just chosen.
            scannerRef.current = s;
            setScanner(s);
            saveSelected(storage(), s);
          }}
          shown={shown}
          now={now}
          admitted={status?.admitted_total ?? null}
          capacity={status?.capacity ?? info.capacity}
          onCode={submitCode}
          onGuest={checkInGuest}
          error={scanError}
        />
      )}
      {screen === "gates" && <Gates status={status} error={statusError} now={now} />}
      {screen === "flags" && <Flags desk={desk} who={who} changed={flagsChanged} now={now} />}
      {screen === "setup" && (
        <Setup
          desk={desk}
          info={info}
          who={who}
          scanners={scanners}
          onScanners={(names) => {
            const kept = saveScanners(storage(), names);
            setScanners(kept);
            if (!kept.includes(scanner)) {
              const first = kept[0] ?? scanner;
              scannerRef.current = first;
              setScanner(first);
              saveSelected(storage(), first);
            }
            return kept;
          }}
          onSignOut={signOut}
        />
      )}
    </div>
  );
}
