import type { GateRow, StatusView, UplinkState } from "../bindings";
import { percentOf, scaleChart, seriesStyle, type ChartBox } from "../logic/chart";
import { reasonText } from "../logic/reasons";
import { listLine } from "../logic/verdict";
import { formatHourMinute, timeAgoOrDash } from "../logic/time";

const dash = (n: number | null): string => (n === null ? "—" : String(n));

const UPLINK: Record<UplinkState, string> = {
  connected: "Connected",
  offline: "Down",
  none: "No server",
};

export function Gates(props: { status: StatusView | null; error: string | null; now: number }) {
  const s = props.status;
  if (s === null) {
    return (
      <main class="screen gates">
        <h1>Gates</h1>
        <p class={props.error === null ? "muted" : "error"}>
          {props.error ?? "Loading the gates…"}
        </p>
      </main>
    );
  }
  const fill = percentOf(s.admitted_total, s.capacity);
  return (
    <main class="screen gates">
      <h1>
        Gates <span class="sub">· {s.event}</span>
      </h1>
      {props.error !== null && <p class="error">Not updating: {props.error}</p>}

      <section class="totals">
        <div class="total-figure">
          <span class="big-number" id="admitted-total">
            {s.admitted_total}
          </span>
          <span class="of"> / {s.capacity ?? "no capacity set"} inside</span>
        </div>
        {fill !== null && (
          <div class="bar wide" role="img" aria-label={`${Math.round(fill)}% of capacity`}>
            <span class="bar-fill" style={{ "--fill": `${fill.toFixed(1)}%` }} />
          </div>
        )}
        <div class={s.flagged > 0 ? "flag-count alert" : "flag-count"}>
          {s.flagged === 0
            ? "No flagged tickets"
            : `${s.flagged} flagged ${s.flagged === 1 ? "ticket" : "tickets"} to review`}
        </div>
      </section>

      <div class="table-wrap">
        <table class="gate-table">
          <thead>
            <tr>
              <th>Gate</th>
              <th>State</th>
              <th>Last seen</th>
              <th class="num">Per min</th>
              <th class="num">Admitted</th>
              <th class="num">Duplicates</th>
              <th class="num">Rejects</th>
              <th>Uplink</th>
              <th class="num">
                Pending
                <br />
                uploads
              </th>
            </tr>
          </thead>
          <tbody>
            {s.gates.map((g, i) => (
              <GateLine key={g.name} gate={g} index={i} now={props.now} />
            ))}
          </tbody>
        </table>
      </div>

      {s.lists.length > 0 && (
        <section class="gate-lists" id="gate-lists">
          <h2>This gate's check-in lists</h2>
          <ul>
            {s.lists.map((l) => {
              const line = listLine(l);
              return (
                <li key={l.name} data-list-name={l.name} class={`capacity-${line.level}`}>
                  {line.text}
                  {line.warning !== null && (
                    <strong class="capacity-warning"> {line.warning}</strong>
                  )}
                </li>
              );
            })}
          </ul>
        </section>
      )}

      {s.gates.some((g) => g.refusals.length > 0) && (
        <section class="gate-refusals" id="gate-refusals">
          <h2>Refused scans, by gate (since each started)</h2>
          {s.gates
            .filter((g) => g.refusals.length > 0)
            .map((g) => (
              <div key={g.name} data-refusals-gate={g.name}>
                <h3>{g.name}</h3>
                <ul>
                  {g.refusals.map((r) => (
                    <li key={r.reason} data-reason={r.reason}>
                      <span class="num">{r.count}</span> {reasonText(r.reason)}
                    </li>
                  ))}
                </ul>
              </div>
            ))}
        </section>
      )}

      <section class="chart-box">
        <h2>Admissions per minute, last 30 minutes</h2>
        <Chart gates={s.gates} minuteMs={s.minute_ms} />
      </section>
    </main>
  );
}

function GateLine({ gate: g, index, now }: { gate: GateRow; index: number; now: number }) {
  const { color } = seriesStyle(index);
  return (
    <tr data-gate={g.name} class={g.online ? "online" : "offline"}>
      <td>
        <span class="swatch" style={{ "--swatch": color }} aria-hidden="true" />
        {g.name}
        {g.this_gate && <span class="tag">this gate</span>}
      </td>
      <td>
        <span class={g.online ? "state on" : "state off"}>
          {g.online ? "● Online" : "○ Offline"}
        </span>
        {g.online && g.rtt_ms !== null && (
          <span class="muted"> · {g.rtt_ms < 1 ? "<1" : Math.round(g.rtt_ms)} ms</span>
        )}
      </td>
      <td>{timeAgoOrDash(g.last_seen_ms, now)}</td>
      <td class="num">{g.scans_per_minute}</td>
      <td class="num">{g.admitted}</td>
      <td class="num">{dash(g.duplicates)}</td>
      <td class="num">{dash(g.rejects)}</td>
      <td>
        {g.uplink === null ? (
          "—"
        ) : (
          <span class={`uplink uplink-${g.uplink}`}>{UPLINK[g.uplink]}</span>
        )}
      </td>
      <td class="num">{dash(g.pending_uploads)}</td>
    </tr>
  );
}

const BOX: ChartBox = { width: 900, height: 260, left: 44, right: 12, top: 12, bottom: 30 };

function Chart({ gates, minuteMs }: { gates: GateRow[]; minuteMs: number }) {
  const chart = scaleChart(
    gates.map((g) => g.per_minute),
    BOX,
  );
  const slots = Math.max(1, ...gates.map((g) => g.per_minute.length));
  const { x0, x1, y1 } = chart.plot;
  return (
    <figure class="chart">
      <svg
        viewBox={`0 0 ${BOX.width} ${BOX.height}`}
        role="img"
        aria-label="Admissions per minute per gate"
      >
        {chart.ticks.map((t) => (
          <g key={t.value} class="tick">
            <line x1={x0} x2={x1} y1={t.y} y2={t.y} />
            <text x={x0 - 8} y={t.y + 5} text-anchor="end">
              {t.value}
            </text>
          </g>
        ))}
        <text class="axis" x={x0} y={y1 + 22}>
          {formatHourMinute(minuteMs - (slots - 1) * 60_000)}
        </text>
        <text class="axis" x={x1} y={y1 + 22} text-anchor="end">
          {formatHourMinute(minuteMs)} (now)
        </text>
        {gates.map((g, i) => {
          const st = seriesStyle(i);
          return (
            <polyline
              key={g.name}
              class="series"
              points={chart.points[i] ?? ""}
              fill="none"
              stroke={st.color}
              stroke-width={3}
              stroke-dasharray={st.dash === "" ? undefined : st.dash}
              stroke-linejoin="round"
            />
          );
        })}
      </svg>
      <figcaption class="legend">
        {gates.map((g, i) => {
          const st = seriesStyle(i);
          return (
            <span key={g.name} class="legend-item">
              <svg class="legend-line" viewBox="0 0 40 10" aria-hidden="true">
                <line
                  x1="0"
                  y1="5"
                  x2="40"
                  y2="5"
                  stroke={st.color}
                  stroke-width={4}
                  stroke-dasharray={st.dash === "" ? undefined : st.dash}
                />
              </svg>
              {g.name}
            </span>
          );
        })}
      </figcaption>
    </figure>
  );
}
