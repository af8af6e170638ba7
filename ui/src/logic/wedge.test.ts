import { describe, expect, it } from "vitest";
import { isTypingTarget, WedgeReader, type KeyLike } from "./wedge";

const k = (key: string, mods: Partial<KeyLike> = {}): KeyLike => ({
  key,
  ctrlKey: false,
  altKey: false,
  metaKey: false,
  ...mods,
});

/** Types `text` one key every `gap` ms from `start`; returns the codes that came out. */
function type(r: WedgeReader, text: string, start: number, gap = 5): (string | null)[] {
  return Array.from(text).map((c, i) => r.key(k(c), start + i * gap).code);
}

describe("WedgeReader", () => {
  it("ends a fast burst with Enter", () => {
    const r = new WedgeReader();
    expect(type(r, "GM1:ABC123", 0).every((c) => c === null)).toBe(true);
    const out = r.key(k("Enter"), 60);
    expect(out).toEqual({ consumed: true, code: "GM1:ABC123" });
    expect(r.pending).toBe("");
  });

  it("ends a burst without Enter after the idle gap", () => {
    const r = new WedgeReader({ idleMs: 100 });
    type(r, "ABCDEF", 0);
    expect(r.deadline()).toBe(125);
    expect(r.tick(124)).toBeNull();
    expect(r.tick(125)).toBe("ABCDEF");
    expect(r.deadline()).toBeNull();
    expect(r.tick(500)).toBeNull();
  });

  it("drops bursts too short to be a code (a person's stray keys)", () => {
    const r = new WedgeReader({ minLength: 4 });
    type(r, "ab", 0);
    expect(r.tick(1000)).toBeNull();
    type(r, "xyz", 2000);
    expect(r.key(k("Enter"), 2020).code).toBeNull();
  });

  it("does not join slow typing into one code", () => {
    const r = new WedgeReader({ idleMs: 100, minLength: 4 });
    // A person: 300 ms between keys. Each key starts a new burst and is dropped.
    const codes = type(r, "hello", 0, 300);
    expect(codes.every((c) => c === null)).toBe(true);
    expect(r.pending).toBe("o");
    expect(r.key(k("Enter"), 1500).code).toBeNull();
  });

  it("flushes a stale burst when the next key comes late (timer never ran)", () => {
    const r = new WedgeReader({ idleMs: 100 });
    type(r, "CODE1234", 0);
    const out = r.key(k("X"), 1000);
    expect(out.code).toBe("CODE1234");
    expect(r.pending).toBe("X");
  });

  it("ignores modifier keys and keeps shifted characters", () => {
    const r = new WedgeReader();
    const keys = ["Shift", "G", "Shift", "M", "1", "Shift", ":", "CapsLock", "a"];
    const outs = keys.map((key, i) => r.key(k(key), i));
    expect(outs[0]).toEqual({ consumed: false, code: null });
    expect(r.key(k("Enter"), 20).code).toBe("GM1:a");
  });

  it("treats shortcuts as a person at the keyboard and discards the burst", () => {
    const r = new WedgeReader();
    type(r, "ABCD", 0);
    expect(r.key(k("r", { ctrlKey: true }), 25)).toEqual({ consumed: false, code: null });
    expect(r.pending).toBe("");
    expect(r.key(k("Tab"), 30).consumed).toBe(false);
  });

  it("accepts AltGr characters", () => {
    const r = new WedgeReader();
    type(r, "abc", 0);
    expect(r.key(k("@", { altKey: true, ctrlKey: false, altGraph: true }), 16).consumed).toBe(true);
    expect(r.key(k("Enter"), 20).code).toBe("abc@");
  });

  it("leaves a lone Enter to the page (e.g. a focused button)", () => {
    const r = new WedgeReader();
    expect(r.key(k("Enter"), 0)).toEqual({ consumed: false, code: null });
  });

  it("consumes characters so a focused button does not act on a scanned space", () => {
    const r = new WedgeReader();
    expect(r.key(k(" "), 0).consumed).toBe(true);
  });

  it("caps the length of a runaway burst", () => {
    const r = new WedgeReader({ maxLength: 10 });
    type(r, "x".repeat(50), 0, 1);
    expect(r.key(k("Enter"), 60).code).toBe("x".repeat(10));
  });

  it("forgets a half-read burst on reset", () => {
    const r = new WedgeReader();
    type(r, "ABCDEFG", 0);
    r.reset();
    expect(r.key(k("Enter"), 40).code).toBeNull();
  });
});

describe("isTypingTarget", () => {
  it("is true for text fields and textareas", () => {
    expect(isTypingTarget({ tagName: "INPUT", type: "text" })).toBe(true);
    expect(isTypingTarget({ tagName: "input", type: "password" })).toBe(true);
    expect(isTypingTarget({ tagName: "INPUT" })).toBe(true);
    expect(isTypingTarget({ tagName: "TEXTAREA" })).toBe(true);
    expect(isTypingTarget({ tagName: "DIV", isContentEditable: true })).toBe(true);
  });

  it("is false for buttons, checkboxes, selects, the page and read-only fields", () => {
    expect(isTypingTarget(null)).toBe(false);
    expect(isTypingTarget({ tagName: "BODY" })).toBe(false);
    expect(isTypingTarget({ tagName: "BUTTON" })).toBe(false);
    expect(isTypingTarget({ tagName: "SELECT" })).toBe(false);
    expect(isTypingTarget({ tagName: "INPUT", type: "checkbox" })).toBe(false);
    expect(isTypingTarget({ tagName: "INPUT", type: "button" })).toBe(false);
    expect(isTypingTarget({ tagName: "INPUT", type: "text", readOnly: true })).toBe(false);
    expect(isTypingTarget({ tagName: "TEXTAREA", disabled: true })).toBe(false);
  });
});
