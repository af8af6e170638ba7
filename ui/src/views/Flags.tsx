import { useEffect, useRef, useState } from "preact/hooks";
import { LIMITS, type Action, type FlagView, type FlagsView, type StaffView } from "../bindings";
import type { DeskApi } from "../desk";
import { errorText } from "../logic/errors";
import { canResolve, RESOLVE_HINT } from "../logic/roles";
import { formatClock, formatDateTime, timeAgo, timeApart } from "../logic/time";
import { usePoll } from "./hooks";

/** Every action staff may take on a flag, in button order (Rust gaining one fails the type check). */
const ACTION_TEXT: Record<Action, { label: string; help: string }> = {
  accept: { label: "Accept", help: "Same person: keep the ticket admitted" },
  deny: { label: "Deny", help: "A second person: refuse the ticket from now on" },
  revert: { label: "Revert", help: "Undo the admission: the ticket can be used again" },
};
const ACTIONS = (Object.keys(ACTION_TEXT) as Action[]).map((action) => ({
  action,
  ...ACTION_TEXT[action],
}));

export function Flags(props: {
  desk: DeskApi;
  who: StaffView | null;
  /** Changes when the desk says the flags changed. */
  changed: number;
  now: number;
}) {
  const { desk } = props;
  const [flags, setFlags] = useState<FlagsView | null>(null);
  const [error, setError] = useState<string | null>(null);
  const inFlight = useRef(false);

  const load = (): void => {
    if (inFlight.current) return;
    inFlight.current = true;
    desk
      .flags()
      .then((f) => {
        setFlags(f);
        setError(null);
      })
      .catch((e: unknown) => setError(errorText(e)))
      .finally(() => {
        inFlight.current = false;
      });
  };
  usePoll(load, 3000);
  const latestLoad = useRef(load);
  latestLoad.current = load;
  useEffect(() => {
    if (props.changed > 0) latestLoad.current();
  }, [props.changed]);

  const allowed = canResolve(props.who);
  return (
    <main class="screen flags">
      <h1>Flags</h1>
      <p class="muted">
        Tickets admitted at two places while those gates could not see each other. Check the guest,
        then decide.
      </p>
      {error !== null && <p class="error">{error}</p>}
      {flags === null ? (
        error === null && <p class="muted">Loading…</p>
      ) : (
        <>
          <section>
            <h2>Open ({flags.open.length})</h2>
            {flags.open.length === 0 && <p class="muted">Nothing to review.</p>}
            {flags.open.map((f) => (
              <OpenFlag
                key={f.tid}
                flag={f}
                desk={desk}
                allowed={allowed}
                now={props.now}
                onDone={load}
              />
            ))}
          </section>
          <section>
            <h2>Resolved ({flags.resolved.length})</h2>
            {flags.resolved.length === 0 && <p class="muted">None yet.</p>}
            {flags.resolved.map((f) => (
              <ResolvedFlag key={f.tid} flag={f} />
            ))}
          </section>
        </>
      )}
    </main>
  );
}

function byTime(f: FlagView) {
  return [...f.redemptions].sort((a, b) => a.at_ms - b.at_ms);
}

function Redemptions({ flag, now }: { flag: FlagView; now: number | null }) {
  const list = byTime(flag);
  const first = list[0];
  return (
    <div class="redemptions">
      {list.map((r, i) => (
        <div key={r.id} class={r.concurrent ? "redemption concurrent" : "redemption"}>
          <div class="r-gate">{r.gate}</div>
          <div class="r-scanner">{r.scanner}</div>
          <div class="r-time">
            {formatClock(r.at_ms)}
            {now !== null && <span class="muted"> · {timeAgo(r.at_ms, now)}</span>}
          </div>
          <div class="r-gap">
            {i === 0 || first === undefined ? "First" : timeApart(r.at_ms, first.at_ms)}
          </div>
          {r.concurrent && <div class="badge">while cut off</div>}
        </div>
      ))}
    </div>
  );
}

function OpenFlag(props: {
  flag: FlagView;
  desk: DeskApi;
  allowed: boolean;
  now: number;
  onDone: () => void;
}) {
  const { flag } = props;
  const [note, setNote] = useState("");
  const [busy, setBusy] = useState<Action | null>(null);
  const [error, setError] = useState<string | null>(null);

  const resolve = async (action: Action): Promise<void> => {
    setBusy(action);
    setError(null);
    try {
      await props.desk.resolve(flag.tid, action, note.trim());
      setNote("");
      props.onDone();
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(null);
    }
  };

  const noteId = `note-${flag.tid}`;
  return (
    <article class="flag card" data-flag-tid={flag.tid}>
      <h3>
        Ticket <span class="mono">{flag.tid}</span>
        <span class="sub"> · admitted {flag.redemptions.length} times</span>
      </h3>
      <Redemptions flag={flag} now={props.now} />
      <label for={noteId}>Note (why you decided)</label>
      <textarea
        id={noteId}
        data-note
        rows={2}
        value={note}
        maxLength={LIMITS.note_bytes}
        onInput={(e) => setNote(e.currentTarget.value)}
        placeholder="e.g. same person, came back for a coat"
      />
      <div class="actions">
        {ACTIONS.map((a) => (
          <button
            key={a.action}
            type="button"
            data-action={a.action}
            class={`action action-${a.action}`}
            disabled={!props.allowed || busy !== null}
            title={props.allowed ? a.help : RESOLVE_HINT}
            onClick={() => void resolve(a.action)}
          >
            <span class="action-label">{busy === a.action ? "…" : a.label}</span>
            <span class="action-help">{a.help}</span>
          </button>
        ))}
      </div>
      {!props.allowed && <p class="hint">{RESOLVE_HINT}</p>}
      {error !== null && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </article>
  );
}

function ResolvedFlag({ flag }: { flag: FlagView }) {
  return (
    <article class="flag card resolved" data-resolved-tid={flag.tid}>
      <h3>
        Ticket <span class="mono">{flag.tid}</span>
      </h3>
      {flag.redemptions.length > 0 && <Redemptions flag={flag} now={null} />}
      <h4>History</h4>
      <ol class="audit" data-audit>
        {flag.audit.map((a, i) => (
          <li key={`${a.at_ms}-${i}`}>
            <span class="a-time">{formatDateTime(a.at_ms)}</span>{" "}
            <span class="a-action mono">{a.action}</span> <span class="a-actor">by {a.actor}</span>
            {a.detail.length > 0 && (
              <>
                {" "}
                <span class="a-detail">“{a.detail}”</span>
              </>
            )}
          </li>
        ))}
      </ol>
    </article>
  );
}
