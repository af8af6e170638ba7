//! The rehearsal's chart as SVG: admissions per minute per gate, and gate-to-gate
//! propagation latency over the event, with the faults' windows marked; below them, a table
//! of what each gate's work cost (CPU per admission, push queues to its peers).
//!
//! Written out directly: two line/point series need no plotting library, and the ones that
//! lay out text (plotters) want system fonts this must not depend on.

use std::fmt::Write;

use serde_json::Value;

const W: f64 = 960.0;
const PANEL_H: f64 = 260.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 150.0;
const TOP: f64 = 62.0;
const GAP: f64 = 70.0;
/// A row of the table under the panels.
const ROW_H: f64 = 17.0;
const COLORS: [&str; 8] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The chart for a report from [`Rehearsal::play`](super::Rehearsal::play).
pub fn svg(r: &Value) -> String {
    let mut s = String::new();
    let minutes = r["plan"]["duration_s"].as_f64().unwrap_or(60.0) / 60.0;
    let gates = r["per_gate"].as_array().map_or(0, Vec::len);
    let table_top = TOP + 2.0 * PANEL_H + GAP + 50.0 + 20.0;
    let h = table_top + ROW_H * (gates as f64 + 1.0) + 30.0;
    let plot_w = W - LEFT - RIGHT;
    let x = |m: f64| LEFT + m / minutes * plot_w;
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" viewBox="0 0 {W} {h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{W}" height="{h}" fill="white"/>"#);
    let c = &r["config"];
    let _ = writeln!(
        s,
        r#"<text x="{LEFT}" y="22" font-size="15" font-weight="bold">gatemesh rehearsal: {} gates, {} attendees, seed {}</text>"#,
        c["gates"], c["attendees"], c["seed"]
    );

    // Fault windows, on both panels.
    let f = &r["plan"]["faults"];
    let window = |s: &mut String,
                  from: f64,
                  to: f64,
                  color: &str,
                  label: &str,
                  top: f64,
                  line: f64| {
        let (x0, x1) = (x(from / 60.0), x(to / 60.0));
        let _ = writeln!(
            s,
            r#"<rect x="{x0:.1}" y="{top}" width="{:.1}" height="{PANEL_H}" fill="{color}" fill-opacity="0.12"/>"#,
            x1 - x0
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" fill="{color}" font-size="11">{}</text>"#,
            x0 + 3.0,
            top + 12.0 + 14.0 * line,
            esc(label)
        );
    };
    let panels = [TOP, TOP + PANEL_H + GAP];
    for top in &panels {
        if let (Some(a), Some(b)) = (f["uplink_down"][0].as_f64(), f["uplink_down"][1].as_f64()) {
            let label = format!("uplink lost (gate {})", f["uplink_gate"]);
            window(&mut s, a, b, "#ff7f0e", &label, *top, 0.0);
        }
        if let (Some(a), Some(b)) = (f["partition"][0].as_f64(), f["partition"][1].as_f64()) {
            window(&mut s, a, b, "#555555", "LAN partition", *top, 1.0);
        }
        if let Some(at) = f["kill_at"].as_f64() {
            let xk = x(at / 60.0);
            let _ = writeln!(
                s,
                r##"<line x1="{xk:.1}" y1="{top}" x2="{xk:.1}" y2="{}" stroke="#d62728" stroke-dasharray="4 3"/><text x="{:.1}" y="{}" fill="#d62728" font-size="11">SIGKILL gate {}</text>"##,
                top + PANEL_H,
                xk + 3.0,
                top + PANEL_H - 6.0,
                f["killed_gate"]
            );
        }
    }

    // Panel 1: admissions per minute per gate.
    let series: Vec<Vec<f64>> = r["admissions_per_minute"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|g| {
            g.as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_f64)
                .collect()
        })
        .collect();
    let peak = series
        .iter()
        .flatten()
        .fold(1.0_f64, |a, b| a.max(*b))
        .max(1.0);
    let top = panels[0];
    let y1 = |v: f64| top + PANEL_H - v / peak * PANEL_H;
    axes(&mut s, top, minutes, "admissions per minute", &|s| {
        for i in 0..=4 {
            let v = peak * f64::from(i) / 4.0;
            tick_y(s, y1(v), &format!("{v:.0}"));
        }
    });
    for (g, points) in series.iter().enumerate() {
        let color = COLORS[g % COLORS.len()];
        let path: Vec<String> = points
            .iter()
            .enumerate()
            .map(|(m, v)| format!("{:.1},{:.1}", x(m as f64 + 0.5), y1(*v)))
            .collect();
        let _ = writeln!(
            s,
            r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2"/>"#,
            path.join(" ")
        );
        let name = r["per_gate"][g]["gate"].as_str().unwrap_or_default();
        let ly = top + 16.0 * g as f64 + 10.0;
        let _ = writeln!(
            s,
            r#"<rect x="{:.1}" y="{:.1}" width="12" height="3" fill="{color}"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            W - RIGHT + 12.0,
            ly - 4.0,
            W - RIGHT + 28.0,
            ly,
            esc(name)
        );
    }

    // Panel 2: propagation latency, log scale.
    let top = panels[1];
    let points: Vec<(f64, f64, bool)> = r["propagation"]["points"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| Some((p[0].as_f64()?, p[1].as_f64()?, p[2] == true)))
        .collect();
    let max_ms = points.iter().fold(10.0_f64, |a, p| a.max(p.1));
    let decades = max_ms.log10().ceil().max(1.0);
    let y2 = |ms: f64| top + PANEL_H - (ms.max(1.0).log10() / decades) * PANEL_H;
    axes(
        &mut s,
        top,
        minutes,
        "gate-to-gate propagation (ms, log)",
        &|s| {
            for d in 0..=(decades as i32) {
                let v = 10f64.powi(d);
                tick_y(s, y2(v), &format!("{v:.0}"));
            }
        },
    );
    for (at, ms, disturbed) in &points {
        let color = if *disturbed { "#d62728" } else { "#1f77b4" };
        let _ = writeln!(
            s,
            r#"<circle cx="{:.1}" cy="{:.1}" r="2" fill="{color}" fill-opacity="0.6"/>"#,
            x(at / 60.0),
            y2(*ms)
        );
    }
    let _ = writeln!(
        s,
        r##"<circle cx="{:.1}" cy="{:.1}" r="3" fill="#1f77b4"/><text x="{:.1}" y="{:.1}">steady</text><circle cx="{:.1}" cy="{:.1}" r="3" fill="#d62728"/><text x="{:.1}" y="{:.1}">during a fault</text>"##,
        W - RIGHT + 16.0,
        top + 10.0,
        W - RIGHT + 26.0,
        top + 14.0,
        W - RIGHT + 16.0,
        top + 28.0,
        W - RIGHT + 26.0,
        top + 32.0
    );
    table(&mut s, r, table_top);
    let _ = writeln!(s, "</svg>");
    s
}

/// Each gate's CPU time per admission and per redemption it holds, and its push queues.
fn table(s: &mut String, r: &Value, top: f64) {
    let m = &r["machine"]["load_average_1m"];
    let _ = writeln!(
        s,
        r#"<text x="{LEFT}" y="{:.1}" font-weight="bold">CPU and push queues per gate (machine: {} cores, load average mean {}, max {})</text>"#,
        top - 8.0,
        r["machine"]["cores"],
        m["mean"],
        m["max"]
    );
    let columns = [
        (0.0, "gate"),
        (150.0, "admitted"),
        (230.0, "CPU s"),
        (310.0, "ms / admission"),
        (430.0, "ms / redemption held"),
        (590.0, "push backlog max"),
        (720.0, "sessions fell behind"),
    ];
    let cell = |s: &mut String, y: f64, col: usize, text: &str, bold: bool| {
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{y:.1}"{}>{}</text>"#,
            LEFT + columns[col].0,
            if bold { r#" font-weight="bold""# } else { "" },
            esc(text)
        );
    };
    let y0 = top + ROW_H;
    for (col, (_, name)) in columns.iter().enumerate() {
        cell(s, y0 - 4.0, col, name, true);
    }
    let num = |v: &Value| match v {
        Value::Null => "–".to_owned(),
        v => v.to_string(),
    };
    for (g, gate) in r["per_gate"].as_array().into_iter().flatten().enumerate() {
        let y = y0 + ROW_H * (g as f64 + 1.0) - 4.0;
        let (c, q) = (&gate["cpu"], &gate["push_queue"]);
        let row = [
            gate["gate"].as_str().unwrap_or_default().to_owned(),
            num(&gate["admitted"]),
            num(&c["s"]),
            num(&c["ms_per_admission"]),
            num(&c["ms_per_redemption_held"]),
            num(&q["backlog_max"]),
            format!(
                "{} of {}",
                num(&q["sessions_fell_behind"]),
                num(&q["sessions"])
            ),
        ];
        for (col, text) in row.iter().enumerate() {
            cell(s, y, col, text, false);
        }
    }
}

fn axes(s: &mut String, top: f64, minutes: f64, label: &str, ticks: &dyn Fn(&mut String)) {
    let plot_w = W - LEFT - RIGHT;
    let bottom = top + PANEL_H;
    let _ = writeln!(
        s,
        r##"<line x1="{LEFT}" y1="{bottom}" x2="{}" y2="{bottom}" stroke="#333"/><line x1="{LEFT}" y1="{top}" x2="{LEFT}" y2="{bottom}" stroke="#333"/>"##,
        LEFT + plot_w
    );
    let _ = writeln!(
        s,
        r#"<text x="{LEFT}" y="{:.1}" font-weight="bold">{}</text>"#,
        top - 8.0,
        esc(label)
    );
    let step = if minutes > 30.0 { 10.0 } else { 5.0 };
    let mut m = 0.0;
    while m <= minutes + 1e-9 {
        let xm = LEFT + m / minutes * plot_w;
        let _ = writeln!(
            s,
            r##"<line x1="{xm:.1}" y1="{bottom}" x2="{xm:.1}" y2="{:.1}" stroke="#333"/><text x="{xm:.1}" y="{:.1}" text-anchor="middle">{m:.0}</text>"##,
            bottom + 4.0,
            bottom + 18.0
        );
        m += step;
    }
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">event minutes since doors opened</text>"#,
        LEFT + plot_w / 2.0,
        bottom + 34.0
    );
    ticks(s);
}

fn tick_y(s: &mut String, y: f64, label: &str) {
    let _ = writeln!(
        s,
        r##"<line x1="{:.1}" y1="{y:.1}" x2="{LEFT}" y2="{y:.1}" stroke="#333"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
        LEFT - 4.0,
        LEFT - 6.0,
        y + 4.0,
        esc(label)
    );
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn the_chart_is_well_formed_svg_with_every_gate() {
        let r = json!({
            "config": { "gates": 2, "attendees": 10, "seed": 1 },
            "plan": { "duration_s": 600.0, "faults": {
                "uplink_gate": 1, "uplink_down": [60.0, 120.0], "partition": [100.0, 200.0],
                "killed_gate": 1, "kill_at": 300.0 } },
            "admissions_per_minute": [[1, 5, 3], [0, 2, 7]],
            "per_gate": [
                { "gate": "Main-Entrance", "admitted": 6,
                  "cpu": { "s": 0.12, "ms_per_admission": 20.0, "ms_per_redemption_held": 8.0 },
                  "push_queue": { "backlog_max": 3, "sessions": 2, "sessions_fell_behind": 1 } },
                { "gate": "North<Gate>", "admitted": 0, "cpu": { "s": null } },
            ],
            "machine": { "cores": 2, "load_average_1m": { "mean": 1.5, "max": 2.25 } },
            "propagation": { "points": [[30.0, 4.2, false], [150.0, 2500.0, true]] },
        });
        let svg = super::svg(&r);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert_eq!(svg.matches("<circle").count(), 2 + 2);
        assert!(svg.contains("North&lt;Gate&gt;"));
        assert!(!svg.contains("NaN"));
        // The table: a row per gate; a number the report lacks is a dash, not "null".
        assert!(svg.contains(">ms / admission<") && svg.contains(">20.0<"));
        assert!(svg.contains(">1 of 2<") && svg.contains("load average mean 1.5, max 2.25"));
        assert!(!svg.contains("null"), "{svg}");
    }
}
