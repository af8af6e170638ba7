import { useEffect, useRef, useState } from "preact/hooks";

/** Calls `fn` now and every `ms` while mounted (the latest `fn`, without restarting). */
export function usePoll(fn: () => void, ms: number, enabled = true): void {
  const latest = useRef(fn);
  latest.current = fn;
  useEffect(() => {
    if (!enabled) return undefined;
    latest.current();
    const id = setInterval(() => latest.current(), ms);
    return () => clearInterval(id);
  }, [ms, enabled]);
}

/** The current time, updated every `ms`, for "2 min ago" labels. */
export function useNow(ms = 1000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const id = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(id);
  }, [ms]);
  return now;
}
