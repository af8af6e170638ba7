import { useEffect, useState } from "preact/hooks";
import {
  IDLE_SIGN_OUT,
  LIMITS,
  PIN_RULE,
  STAFF_ROLES,
  type SettingsView,
  type StaffRole,
  type StaffView,
} from "../bindings";
import type { DeskApi } from "../desk";
import { errorText } from "../logic/errors";
import { ROLE_LABEL } from "../logic/roles";
import { PIN_DIGITS } from "../logic/rules";
import {
  canEditSettings,
  checkSettingsForm,
  checkStaffForm,
  isLastManager,
  policyText,
  restartNotice,
  SETTINGS_HINT,
} from "../logic/settings";

/** The gate's name, entry policy, staff and network: managers change them, others look. */
export function Settings(props: { desk: DeskApi; who: StaffView | null }) {
  const [view, setView] = useState<SettingsView | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const editable = canEditSettings(props.who);

  const load = (): void => {
    props.desk
      .settings()
      .then((s) => {
        setView(s);
        setLoadError(null);
      })
      .catch((e: unknown) => setLoadError(errorText(e)));
  };
  useEffect(load, [props.desk]);

  if (view === null) {
    return (
      <section class="card settings">
        <h2>Settings</h2>
        {loadError === null ? (
          <p class="muted">Loading…</p>
        ) : (
          <>
            <p class="error" role="alert">
              Could not load the settings: {loadError}
            </p>
            <button type="button" onClick={load}>
              Try again
            </button>
          </>
        )}
      </section>
    );
  }

  return (
    <>
      {editable ? (
        <GateSettings desk={props.desk} view={view} onView={setView} />
      ) : (
        <section class="card settings">
          <h2>Settings</h2>
          <dl class="facts">
            <dt>Gate name</dt>
            <dd>{view.gate_name}</dd>
            <dt>Entry policy</dt>
            <dd>{policyText(view.reentry, view.reject_unlisted)}</dd>
            <dt>Idle sign-out</dt>
            <dd>after {view.idle_sign_out_min} minutes without use</dd>
          </dl>
          {view.restart_needed && <p class="notice">{restartNotice(view)}</p>}
          <p class="hint">{SETTINGS_HINT}</p>
        </section>
      )}
      {view.lists.length > 0 && (
        <ListsCard desk={props.desk} view={view} editable={editable} onView={setView} />
      )}
      <StaffList desk={props.desk} view={view} editable={editable} onView={setView} />
      <section class="card">
        <h2>Network</h2>
        <dl class="facts">
          <dt>Mesh</dt>
          <dd id="settings-mesh">
            {view.mesh ? "On (this gate has a device identity)" : "Off (this gate works alone)"}
          </dd>
          <dt>Discovery</dt>
          <dd>{view.discovery ? "Finds the event's other gates on this network" : "Off"}</dd>
          <dt>Peers</dt>
          <dd class="mono">{view.peers.length > 0 ? view.peers.join(", ") : "none listed"}</dd>
          <dt>Server</dt>
          <dd class="mono">{view.server ?? "none"}</dd>
        </dl>
      </section>
    </>
  );
}

function GateSettings(props: {
  desk: DeskApi;
  view: SettingsView;
  onView: (v: SettingsView) => void;
}) {
  const { view } = props;
  const [gateName, setGateName] = useState(view.gate_name);
  const [reentry, setReentry] = useState(view.reentry);
  const [rejectUnlisted, setRejectUnlisted] = useState(view.reject_unlisted);
  const [idle, setIdle] = useState(String(view.idle_sign_out_min));
  const [error, setError] = useState<string | null>(null);
  const [saved, setSaved] = useState(false);
  const [busy, setBusy] = useState(false);

  const save = async (): Promise<void> => {
    const checked = checkSettingsForm({
      gateName,
      reentry,
      rejectUnlisted,
      idleSignOutMin: idle.trim() === "" ? Number.NaN : Number(idle),
    });
    if ("error" in checked) {
      setError(checked.error);
      return;
    }
    setBusy(true);
    setError(null);
    try {
      const next = await props.desk.updateSettings(checked.ok);
      props.onView(next);
      setGateName(next.gate_name);
      setReentry(next.reentry);
      setRejectUnlisted(next.reject_unlisted);
      setIdle(String(next.idle_sign_out_min));
      setSaved(true);
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  const notice = restartNotice(view);

  return (
    <section class="card settings">
      <h2>Settings</h2>
      <form
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          void save();
        }}
        onInput={() => setSaved(false)}
      >
        <label for="settings-gate">Gate name</label>
        <input
          id="settings-gate"
          type="text"
          autoComplete="off"
          maxLength={LIMITS.gate_name_bytes}
          value={gateName}
          onInput={(e) => setGateName(e.currentTarget.value)}
        />
        <h3 class="policy-title">Entry policy</h3>
        <label class="check">
          <input
            id="settings-reentry"
            type="checkbox"
            checked={reentry}
            onChange={(e) => {
              setReentry(e.currentTarget.checked);
              setSaved(false);
            }}
          />
          Re-entry allowed (a holder may leave and come back in)
        </label>
        <label class="check">
          <input
            id="settings-unlisted"
            type="checkbox"
            checked={rejectUnlisted}
            onChange={(e) => {
              setRejectUnlisted(e.currentTarget.checked);
              setSaved(false);
            }}
          />
          Refuse tickets missing from the manifest (otherwise admitted and marked)
        </label>
        <label for="settings-idle">Sign out after this many minutes without use</label>
        <input
          id="settings-idle"
          type="number"
          min={1}
          max={IDLE_SIGN_OUT.max_min}
          step={1}
          value={idle}
          onInput={(e) => setIdle(e.currentTarget.value)}
        />
        <div class="row">
          <button id="settings-save" type="submit" class="primary" disabled={busy}>
            Save
          </button>
          {saved && notice === null && <span class="ok">Saved</span>}
        </div>
        {notice !== null && (
          <p id="settings-restart" class="notice" role="status">
            {notice}
          </p>
        )}
        {error !== null && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
      </form>
    </section>
  );
}

/** Which of the event's check-in lists this gate checks: managers tick them, at once. */
function ListsCard(props: {
  desk: DeskApi;
  view: SettingsView;
  editable: boolean;
  onView: (v: SettingsView) => void;
}) {
  const [chosen, setChosen] = useState<string[]>(
    props.view.lists.filter((l) => l.chosen).map((l) => l.id),
  );
  const [error, setError] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const save = async (): Promise<void> => {
    setBusy(true);
    setError(null);
    setDone(null);
    try {
      props.onView(await props.desk.chooseLists(chosen));
      setDone("Saved: this gate checks tickets against them from the next scan");
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="card lists">
      <h2>Check-in lists</h2>
      <p class="hint">The tickets this entrance takes. None ticked: every list of the event.</p>
      <ul class="list-choice">
        {props.view.lists.map((l) => (
          <li key={l.id}>
            <label>
              <input
                type="checkbox"
                data-list={l.id}
                disabled={!props.editable || busy}
                checked={chosen.includes(l.id)}
                onChange={(e) => {
                  const on = e.currentTarget.checked;
                  setChosen((c) => (on ? [...c, l.id] : c.filter((x) => x !== l.id)));
                }}
              />
              {l.name}
            </label>
          </li>
        ))}
      </ul>
      {props.editable && (
        <button
          id="lists-save"
          type="button"
          class="primary"
          disabled={busy}
          onClick={() => void save()}
        >
          Save lists
        </button>
      )}
      {error !== null && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {done !== null && (
        <p class="done" role="status">
          {done}
        </p>
      )}
    </section>
  );
}

function StaffList(props: {
  desk: DeskApi;
  view: SettingsView;
  editable: boolean;
  onView: (v: SettingsView) => void;
}) {
  const [name, setName] = useState("");
  const [role, setRole] = useState<StaffRole>("staff");
  const [pin, setPin] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const staff = props.view.staff;

  const run = async (action: () => Promise<SettingsView>, message: string): Promise<boolean> => {
    setBusy(true);
    setError(null);
    setDone(null);
    try {
      props.onView(await action());
      setDone(message);
      return true;
    } catch (e) {
      setError(errorText(e));
      return false;
    } finally {
      setBusy(false);
    }
  };

  const put = async (): Promise<void> => {
    const checked = checkStaffForm({ name, role, pin });
    if ("error" in checked) {
      setError(checked.error);
      setDone(null);
      return;
    }
    const { ok } = checked;
    const known = staff.some((s) => s.name === ok.name);
    const saved = await run(
      () => props.desk.putStaff(ok.name, ok.role, ok.pin),
      known ? `${ok.name} changed` : `${ok.name} added`,
    );
    if (saved) {
      setName("");
      setPin("");
    }
  };

  return (
    <section class="card staff">
      <h2>Staff</h2>
      <ul class="staff-list">
        {staff.map((s) => (
          <li key={s.name} data-staff={s.name}>
            <span class="staff-name">{s.name}</span>
            <span class="role">{ROLE_LABEL[s.role]}</span>
            {props.view.locked.includes(s.name) && <span class="locked">Locked</span>}
            {props.editable && (
              <>
                {props.view.locked.includes(s.name) && (
                  <button
                    type="button"
                    data-unlock={s.name}
                    disabled={busy}
                    onClick={() =>
                      void run(() => props.desk.unlockStaff(s.name), `${s.name} unlocked`)
                    }
                  >
                    Unlock
                  </button>
                )}
                <button
                  type="button"
                  onClick={() => {
                    setName(s.name);
                    setRole(s.role);
                    setPin("");
                    setError(null);
                    setDone(null);
                  }}
                >
                  Change
                </button>
                <button
                  type="button"
                  data-remove={s.name}
                  disabled={busy}
                  title={
                    isLastManager(staff, s.name)
                      ? "The last manager stays: add another manager first"
                      : undefined
                  }
                  onClick={() =>
                    void run(() => props.desk.removeStaff(s.name), `${s.name} removed`)
                  }
                >
                  Remove
                </button>
              </>
            )}
          </li>
        ))}
      </ul>
      {props.editable ? (
        <form
          class="staff-form"
          noValidate
          onSubmit={(e) => {
            e.preventDefault();
            void put();
          }}
        >
          <h3>Add a person, or change one</h3>
          <p class="muted">
            An existing name gets the new role and PIN (and is unlocked). PINs are never shown. Five
            wrong PINs in a row lock a name until a manager unlocks it.
          </p>
          <div class="staff-fields">
            <div>
              <label for="staff-name">Name</label>
              <input
                id="staff-name"
                type="text"
                autoComplete="off"
                maxLength={LIMITS.label_bytes}
                value={name}
                onInput={(e) => setName(e.currentTarget.value)}
              />
            </div>
            <div>
              <label for="staff-role">Role</label>
              <select
                id="staff-role"
                value={role}
                onChange={(e) => {
                  const r = STAFF_ROLES.find((x) => x === e.currentTarget.value);
                  if (r !== undefined) setRole(r);
                }}
              >
                {STAFF_ROLES.map((r) => (
                  <option key={r} value={r}>
                    {ROLE_LABEL[r]}
                  </option>
                ))}
              </select>
            </div>
            <div>
              <label for="staff-pin">PIN ({PIN_DIGITS} digits)</label>
              <input
                id="staff-pin"
                type="password"
                inputMode="numeric"
                autoComplete="new-password"
                maxLength={PIN_RULE.max_digits}
                value={pin}
                onInput={(e) => setPin(e.currentTarget.value.replace(/\D/g, ""))}
              />
            </div>
            <button id="staff-add" type="submit" class="primary" disabled={busy}>
              Save person
            </button>
          </div>
        </form>
      ) : (
        <p class="hint">A manager adds, changes and removes staff.</p>
      )}
      {done !== null && <p class="ok">{done}</p>}
      {error !== null && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </section>
  );
}
