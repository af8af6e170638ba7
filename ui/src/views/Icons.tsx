/**
 * Verdict icons: a tick in a circle, "!" in a triangle, a cross in an octagon. Shapes
 * differ as well as colours, for staff who do not tell green from red.
 */

import type { JSX } from "preact";
import type { VerdictIcon } from "../logic/verdict";

export function VerdictSymbol({ icon }: { icon: VerdictIcon }) {
  return (
    <svg
      class={`verdict-icon icon-${icon}`}
      viewBox="0 0 100 100"
      role="img"
      aria-label={ICON_LABEL[icon]}
    >
      {SHAPES[icon]}
    </svg>
  );
}

const ICON_LABEL: Record<VerdictIcon, string> = {
  check: "tick",
  bang: "warning",
  cross: "cross",
  scan: "ready",
};

const stroke = {
  fill: "none",
  stroke: "currentColor",
  "stroke-width": 9,
  "stroke-linecap": "round",
  "stroke-linejoin": "round",
} as const;

const SHAPES: Record<VerdictIcon, JSX.Element> = {
  check: (
    <g>
      <circle cx="50" cy="50" r="44" {...stroke} />
      <polyline points="28,52 44,68 73,35" {...stroke} stroke-width={11} />
    </g>
  ),
  bang: (
    <g>
      <polygon points="50,7 95,88 5,88" {...stroke} />
      <line x1="50" y1="35" x2="50" y2="61" {...stroke} stroke-width={11} />
      <circle cx="50" cy="76" r="6" fill="currentColor" />
    </g>
  ),
  cross: (
    <g>
      <polygon points="31,5 69,5 95,31 95,69 69,95 31,95 5,69 5,31" {...stroke} />
      <line x1="33" y1="33" x2="67" y2="67" {...stroke} stroke-width={11} />
      <line x1="67" y1="33" x2="33" y2="67" {...stroke} stroke-width={11} />
    </g>
  ),
  scan: (
    <g {...stroke} stroke-width={7}>
      <polyline points="8,30 8,8 30,8" />
      <polyline points="70,8 92,8 92,30" />
      <polyline points="92,70 92,92 70,92" />
      <polyline points="30,92 8,92 8,70" />
      <line x1="20" y1="50" x2="80" y2="50" />
    </g>
  ),
};
