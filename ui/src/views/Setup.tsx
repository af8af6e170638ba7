import { useState } from "preact/hooks";
import type { AppInfo, StaffView } from "../bindings";
import type { DeskApi } from "../desk";
import { errorText } from "../logic/errors";
import { checkPairForm } from "../logic/pairing";
import { ROLE_LABEL } from "../logic/roles";
import { PIN_DIGITS } from "../logic/rules";
import { MAX_NAME, MAX_SCANNERS } from "../logic/scanners";
import { checkFileSetupForm } from "../logic/settings";
import { Settings } from "./Settings";

/** Joining an event with a pairing link, before anything else works. */
export function PairForm(props: { desk: DeskApi; onPaired: (info: AppInfo) => void }) {
  const [link, setLink] = useState("");
  const [name, setName] = useState("");
  const [pin, setPin] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (): Promise<void> => {
    const checked = checkPairForm({ link, name, pin });
    if ("error" in checked) {
      setError(checked.error);
      return;
    }
    setBusy(true);
    setError(null);
    try {
      props.onPaired(await props.desk.pair(checked.ok));
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };

  return (
    <section class="card">
      <h2>Pair with the event's server</h2>
      <p class="muted">
        The organizer gives you a pairing link for this gate (a QR code or text starting
        gatemesh://pair). Scan it or paste it here: it names the server and the certificate this
        gate will trust, joins the event and brings the ticket keys; then you choose a manager PIN
        for this laptop.
      </p>
      <form
        class="pair-form"
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          void submit();
        }}
      >
        <label for="pair-link">Pairing link</label>
        <input
          id="pair-link"
          type="text"
          autoComplete="off"
          spellcheck={false}
          placeholder="gatemesh://pair?server=…&code=…&fp=…"
          value={link}
          onInput={(e) => setLink(e.currentTarget.value)}
        />
        <label for="pair-name">Your name</label>
        <input
          id="pair-name"
          type="text"
          autoComplete="name"
          value={name}
          onInput={(e) => setName(e.currentTarget.value)}
        />
        <label for="pair-pin">Manager PIN ({PIN_DIGITS} digits)</label>
        <input
          id="pair-pin"
          type="password"
          inputMode="numeric"
          autoComplete="new-password"
          value={pin}
          onInput={(e) => setPin(e.currentTarget.value.replace(/\D/g, ""))}
        />
        <button id="pair-submit" type="submit" class="primary big" disabled={busy}>
          {busy ? "Pairing…" : "Pair this gate"}
        </button>
        {error !== null && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
      </form>
    </section>
  );
}

/** Before anything else works: join an event by pairing link, or from files; or try the demo. */
export function FirstSetup(props: {
  desk: DeskApi;
  onSetUp: (info: AppInfo, how: "paired" | "files" | "demo") => void;
}) {
  return (
    <main class="screen setup">
      <h1>Set up this gate</h1>
      <p class="muted">
        Two ways: a pairing link from the event's server, or files from the organizer. Or try the
        demo event first.
      </p>
      <PairForm desk={props.desk} onPaired={(i) => props.onSetUp(i, "paired")} />
      <FilesForm desk={props.desk} onSetUp={(i) => props.onSetUp(i, "files")} />
      <DemoForm desk={props.desk} onOpened={(i) => props.onSetUp(i, "demo")} />
    </main>
  );
}

/** The demo event: printable tickets and a second gate, kept apart from the real event. */
function DemoForm(props: { desk: DeskApi; onOpened: (info: AppInfo) => void }) {
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const open = async (): Promise<void> => {
    setBusy(true);
    setError(null);
    try {
      props.onOpened(await props.desk.openDemo());
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="card">
      <h2>Try the demo event</h2>
      <p class="muted">
        A practice event on this laptop, with 200 printable tickets and a second gate. It is kept
        apart: setting up the real event later is unchanged.
      </p>
      {error !== null && <p class="error">{error}</p>}
      <button type="button" id="open-demo" disabled={busy} onClick={() => void open()}>
        {busy ? "Opening…" : "Open the demo event"}
      </button>
    </section>
  );
}

/** Setting up an event from files an organizer handed over (no server needed). */
export function FilesForm(props: { desk: DeskApi; onSetUp: (info: AppInfo) => void }) {
  const [event, setEvent] = useState("");
  const [gate, setGate] = useState("");
  const [capacity, setCapacity] = useState("");
  const [pem, setPem] = useState("");
  const [identity, setIdentity] = useState("");
  const [name, setName] = useState("");
  const [pin, setPin] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const readPem = (file: File | undefined): void => {
    if (file === undefined) return;
    const reader = new FileReader();
    reader.onload = () => {
      if (typeof reader.result === "string") {
        setPem(reader.result);
        setError(null);
      }
    };
    reader.onerror = () => setError(`Could not read ${file.name}`);
    reader.readAsText(file);
  };

  const submit = async (): Promise<void> => {
    const checked = checkFileSetupForm({ event, gate, capacity, pem, identity, name, pin });
    if ("error" in checked) {
      setError(checked.error);
      return;
    }
    setBusy(true);
    setError(null);
    try {
      props.onSetUp(await props.desk.setupFiles(checked.ok));
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };

  return (
    <section class="card">
      <h2>Set up from files</h2>
      <p class="muted">
        No server? The organizer hands over the event id and the ticket issuer's public key (a .pem
        file, or issuer.jwks.json when the key has a chosen id), and for the mesh a device identity.
      </p>
      <form
        class="pair-form files-form"
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          void submit();
        }}
      >
        <label for="files-event">Event id</label>
        <input
          id="files-event"
          type="text"
          autoComplete="off"
          spellcheck={false}
          placeholder="CONCERT-20261106"
          value={event}
          onInput={(e) => setEvent(e.currentTarget.value)}
        />
        <label for="files-gate">Gate name</label>
        <input
          id="files-gate"
          type="text"
          autoComplete="off"
          placeholder="Main-Entrance"
          value={gate}
          onInput={(e) => setGate(e.currentTarget.value)}
        />
        <label for="files-capacity">Capacity (optional)</label>
        <input
          id="files-capacity"
          type="text"
          inputMode="numeric"
          autoComplete="off"
          value={capacity}
          onInput={(e) => setCapacity(e.currentTarget.value)}
        />
        <label for="files-pem">Issuer public key (PEM or JWK Set)</label>
        <textarea
          id="files-pem"
          class="mono"
          rows={5}
          spellcheck={false}
          placeholder={"-----BEGIN PUBLIC KEY-----\n…\n-----END PUBLIC KEY-----"}
          value={pem}
          onInput={(e) => setPem(e.currentTarget.value)}
        />
        <label for="files-pem-file">…or read it from a .pem or .jwks.json file</label>
        <input
          id="files-pem-file"
          type="file"
          accept=".pem,.json,application/x-pem-file,application/json,text/plain"
          onChange={(e) => readPem(e.currentTarget.files?.[0])}
        />
        <label for="files-identity">Device identity directory (optional)</label>
        <input
          id="files-identity"
          type="text"
          class="mono"
          autoComplete="off"
          spellcheck={false}
          placeholder="/home/gate/gatemesh-identity"
          value={identity}
          onInput={(e) => setIdentity(e.currentTarget.value)}
        />
        <p class="muted field-note">
          The directory <span class="mono">gatemesh enroll</span> made for this laptop. It lets this
          gate join the event's mesh and see the other gates; leave it empty to run this gate alone.
        </p>
        <label for="files-name">Your name</label>
        <input
          id="files-name"
          type="text"
          autoComplete="name"
          value={name}
          onInput={(e) => setName(e.currentTarget.value)}
        />
        <label for="files-pin">Manager PIN ({PIN_DIGITS} digits)</label>
        <input
          id="files-pin"
          type="password"
          inputMode="numeric"
          autoComplete="new-password"
          value={pin}
          onInput={(e) => setPin(e.currentTarget.value.replace(/\D/g, ""))}
        />
        <button id="files-submit" type="submit" class="primary big" disabled={busy}>
          {busy ? "Setting up…" : "Set up this gate"}
        </button>
        {error !== null && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
      </form>
    </section>
  );
}

/** The set-up of a gate that has joined its event. */
export function Setup(props: {
  desk: DeskApi;
  info: AppInfo;
  who: StaffView | null;
  scanners: string[];
  onScanners: (names: string[]) => string[];
  onSignOut: () => void;
}) {
  const { info } = props;
  return (
    <main class="screen setup">
      <h1>Setup</h1>
      <section class="card">
        <h2>This gate</h2>
        <dl class="facts">
          <dt>Event</dt>
          <dd>{info.event ?? "—"}</dd>
          <dt>Gate</dt>
          <dd>{info.gate_name ?? "—"}</dd>
          <dt>Capacity</dt>
          <dd>{info.capacity ?? "not set"}</dd>
          <dt>Mode</dt>
          <dd>{info.observer ? "Observer (watches, admits no one)" : "Gate (admits)"}</dd>
          <dt>Local API</dt>
          <dd class="mono">{info.api ?? "not running"}</dd>
          {info.api_token_file !== null && (
            <>
              <dt>API token</dt>
              <dd>
                <span class="mono">{info.api_token_file}</span>
                <div class="muted">
                  Every call to the local API sends this file's token: Authorization: Bearer …
                </div>
              </dd>
            </>
          )}
          {info.tickets_pdf !== null && (
            <>
              <dt>Demo tickets</dt>
              <dd>
                <span class="mono">{info.tickets_pdf}</span>
                <div class="muted">Open this PDF and print it, or scan its codes off a screen.</div>
              </dd>
            </>
          )}
        </dl>
      </section>

      <ScannerNames names={props.scanners} onSave={props.onScanners} />

      <Settings desk={props.desk} who={props.who} />

      <section class="card">
        <h2>Signed in</h2>
        <p>{props.who === null ? "Nobody" : `${props.who.name} (${ROLE_LABEL[props.who.role]})`}</p>
        <button type="button" id="setup-sign-out" class="big" onClick={props.onSignOut}>
          Sign out
        </button>
      </section>
    </main>
  );
}

function ScannerNames(props: { names: string[]; onSave: (names: string[]) => string[] }) {
  const [draft, setDraft] = useState<string[]>(props.names);
  const [saved, setSaved] = useState(false);
  const edit = (next: string[]): void => {
    setDraft(next);
    setSaved(false);
  };
  return (
    <section class="card scanners">
      <h2>Scanner names</h2>
      <p class="muted">
        Each scan is recorded with the scanner's name, so a duplicate tells you where the first use
        was. Name them after the lanes or devices at this gate.
      </p>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          setDraft(props.onSave(draft));
          setSaved(true);
        }}
      >
        <ol class="scanner-list">
          {draft.map((n, i) => (
            <li key={i}>
              <input
                type="text"
                data-scanner-name={i}
                aria-label={`Scanner ${i + 1} name`}
                maxLength={MAX_NAME}
                value={n}
                onInput={(e) => {
                  const v = e.currentTarget.value;
                  edit(draft.map((x, j) => (j === i ? v : x)));
                }}
              />
              <button
                type="button"
                disabled={draft.length <= 1}
                onClick={() => edit(draft.filter((_, j) => j !== i))}
              >
                Remove
              </button>
            </li>
          ))}
        </ol>
        <div class="row">
          <button
            type="button"
            disabled={draft.length >= MAX_SCANNERS}
            onClick={() => edit([...draft, `Lane ${draft.length + 1}`])}
          >
            Add a scanner
          </button>
          <button type="submit" class="primary" id="scanners-save">
            Save names
          </button>
          {saved && <span class="ok">Saved</span>}
        </div>
      </form>
    </section>
  );
}
