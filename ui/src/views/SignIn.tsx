import { useEffect, useRef, useState } from "preact/hooks";
import { PIN_RULE, type AppInfo, type StaffView } from "../bindings";
import type { DeskApi } from "../desk";
import { ROLE_LABEL } from "../logic/roles";
import { clearsPin, initialName, signInProblem } from "../logic/signin";
import { isTypingTarget } from "../logic/wedge";

const PAD = ["1", "2", "3", "4", "5", "6", "7", "8", "9", "clear", "0", "back"] as const;
const MAX_PIN = PIN_RULE.max_digits;

export function SignIn(props: {
  desk: DeskApi;
  info: AppInfo;
  notice: string | null;
  onSignedIn: (who: StaffView) => void;
}) {
  const names = props.info.staff_names;
  const [name, setName] = useState<string | null>(() => initialName(names));
  const [pin, setPin] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const input = useRef<HTMLInputElement>(null);

  const submit = async (): Promise<void> => {
    if (busy || pin.length === 0) return;
    if (name === null) {
      setError("Tap your name first.");
      return;
    }
    setBusy(true);
    setError(null);
    try {
      const who = await props.desk.signIn(name, pin);
      props.onSignedIn(who);
    } catch (e) {
      setError(signInProblem(e));
      if (clearsPin(e)) setPin("");
      input.current?.focus();
    } finally {
      setBusy(false);
    }
  };

  const latestSubmit = useRef(submit);
  latestSubmit.current = submit;

  // The PIN field takes the keyboard when the screen opens, and digits typed while the focus
  // is elsewhere (after a click on the page) still go to it.
  useEffect(() => {
    input.current?.focus();
    const onKey = (e: KeyboardEvent): void => {
      if (isTypingTarget(document.activeElement) || e.ctrlKey || e.metaKey || e.altKey) return;
      if (/^\d$/.test(e.key)) {
        e.preventDefault();
        input.current?.focus();
        setPin((p) => (p.length < MAX_PIN ? p + e.key : p));
      } else if (e.key === "Backspace") {
        e.preventDefault();
        setPin((p) => p.slice(0, -1));
      } else if (e.key === "Enter") {
        // Enter signs in, even with the focus on a pad key.
        e.preventDefault();
        void latestSubmit.current();
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, []);

  const press = (key: (typeof PAD)[number]): void => {
    setError(null);
    if (key === "clear") setPin("");
    else if (key === "back") setPin((p) => p.slice(0, -1));
    else setPin((p) => (p.length < MAX_PIN ? p + key : p));
    input.current?.focus();
  };

  return (
    <main class="screen sign-in">
      <h1>
        {props.info.gate_name ?? "Gate"}
        <span class="sub"> · {props.info.event ?? ""}</span>
      </h1>
      {props.notice !== null && <p class="notice">{props.notice}</p>}
      <form
        class="pin-form"
        onSubmit={(e) => {
          e.preventDefault();
          void submit();
        }}
      >
        <fieldset class="staff-pick">
          <legend>Who are you?</legend>
          {names.map((n) => (
            <button
              type="button"
              key={n}
              data-name={n}
              class={n === name ? "pick chosen" : "pick"}
              aria-pressed={n === name}
              onClick={() => {
                setName(n);
                setError(null);
                input.current?.focus();
              }}
            >
              {n}
            </button>
          ))}
        </fieldset>
        <label for="pin-input">{name === null ? "Your PIN" : `PIN for ${name}`}</label>
        <input
          id="pin-input"
          ref={input}
          type="password"
          inputMode="numeric"
          autoComplete="off"
          maxLength={MAX_PIN}
          value={pin}
          onInput={(e) => {
            setError(null);
            setPin(e.currentTarget.value.replace(/\D/g, "").slice(0, MAX_PIN));
          }}
        />
        <div class="pin-pad" role="group" aria-label="PIN pad">
          {PAD.map((k) => (
            <button
              type="button"
              key={k}
              class={k.length === 1 ? "pad-digit" : "pad-edit"}
              onClick={() => press(k)}
            >
              {k === "clear" ? "Clear" : k === "back" ? "⌫" : k}
            </button>
          ))}
        </div>
        <button id="sign-in" type="submit" class="primary big" disabled={busy}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
        {error !== null && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
      </form>
      {props.info.demo_pins.length > 0 && (
        <section class="demo-pins">
          <h2>Demo event: PINs</h2>
          <table>
            <tbody>
              {props.info.demo_pins.map((d) => (
                <tr key={d.pin}>
                  <td>{d.name}</td>
                  <td>{ROLE_LABEL[d.role]}</td>
                  <td class="mono">{d.pin}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      )}
    </main>
  );
}
