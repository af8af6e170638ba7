import { isTauri } from "@tauri-apps/api/core";
import { render } from "preact";
import "./style.css";
import { tauriDesk, type DeskApi } from "./desk";
import { App } from "./views/App";

async function pickDesk(): Promise<DeskApi | null> {
  if (isTauri()) return tauriDesk;
  // `npm run dev` in a plain browser: a stand-in gate, left out of production builds.
  if (import.meta.env.DEV) return (await import("./dev/mockDesk")).mockDesk();
  return null;
}

const root = document.querySelector<HTMLElement>("#app");
if (root === null) throw new Error("gatemesh ui: #app element missing from index.html");

void pickDesk().then((desk) => {
  if (desk === null) {
    root.textContent = "This page is the gatemesh app's screen: open it in the gatemesh app.";
    return;
  }
  render(<App desk={desk} />, root);
});
