// Reality: what really ran against what was planned (GET /v1/gap), the calibration factors in use, the canary
// (GET /v1/canary/report) and the online fine-tunes (GET /v1/finetune/runs).

import { getJSON } from "../api.js";
import { errorBox, h, num, percent, setHashParams, svg, table, when } from "../dom.js";

const ratio = (x) => (typeof x === "number" ? `${num(x, 3)} ×` : "–");

/**
 * Box plots of ratio distributions, one row per key: whiskers p10 to p90, box p25 to p75, a tick at the median,
 * on a log axis with a line at 1 (as predicted). rows: the report's by_node or by_task.
 */
function boxPlots(rows, label) {
  const W = 640;
  const LABEL_W = 150;
  const COUNT_W = 100;
  const ROW_H = 24;
  const AXIS_H = 24;
  const plotW = W - LABEL_W - COUNT_W;
  const values = rows.flatMap((r) => [r.p10, r.p90, r.min, r.max]).filter((x) => x > 0);
  let lo = Math.min(0.8, ...values);
  let hi = Math.max(1.25, ...values);
  lo = Math.log(lo) - 0.05;
  hi = Math.log(hi) + 0.05;
  const x = (v) => LABEL_W + ((Math.log(v) - lo) / (hi - lo)) * plotW;
  const height = AXIS_H + rows.length * ROW_H + 4;
  const root = svg("svg", {
    class: "boxplot",
    viewBox: `0 0 ${W} ${height}`,
    role: "img",
    "aria-label": `actual / declared runtime per ${label}`,
  });
  const ticks = [0.5, 0.67, 0.8, 1, 1.25, 1.5, 2, 3, 5, 10].filter((t) => Math.log(t) > lo && Math.log(t) < hi);
  const axis = svg("g", { class: "gantt-axis" });
  for (const t of ticks) {
    axis.append(svg("line", { x1: x(t), x2: x(t), y1: AXIS_H - 4, y2: height, class: t === 1 ? "one" : "grid" }));
    axis.append(svg("text", { x: x(t), y: AXIS_H - 8, "text-anchor": "middle" }, `${t}×`));
  }
  root.append(axis);
  rows.forEach((r, i) => {
    const y = AXIS_H + i * ROW_H + ROW_H / 2;
    const g = svg("g", { class: "box-row", "data-key": r.key, "data-median": r.median });
    g.append(svg("text", { x: LABEL_W - 8, y: y + 4, "text-anchor": "end", class: "box-label" }, r.key));
    g.append(svg("line", { x1: x(r.p10), x2: x(r.p90), y1: y, y2: y, class: "whisker" }));
    g.append(
      svg("rect", {
        x: x(r.p25),
        y: y - 7,
        width: Math.max(1, x(r.p75) - x(r.p25)),
        height: 14,
        class: "box",
      }),
    );
    g.append(svg("line", { x1: x(r.median), x2: x(r.median), y1: y - 8, y2: y + 8, class: "median" }));
    g.append(
      svg(
        "text",
        { x: W - COUNT_W + 6, y: y + 4, class: "box-count" },
        `${num(r.median, 2)}× (${r.count})`,
      ),
    );
    g.append(
      svg(
        "title",
        {},
        `${r.key}: median ${num(r.median, 3)}, p10 ${num(r.p10, 3)}, p90 ${num(r.p90, 3)}, ${r.count} task runs`,
      ),
    );
    root.append(g);
  });
  return root;
}

/** Makespan planned (x) against achieved (y), one point per executed run, with the line achieved = planned. */
function scatter(points) {
  const W = 420;
  const H = 360;
  const PAD = 44;
  const top = Math.max(1, ...points.flatMap((p) => [p.planned, p.achieved])) * 1.05;
  const sx = (v) => PAD + (v / top) * (W - PAD - 10);
  const sy = (v) => H - PAD - (v / top) * (H - PAD - 10);
  const root = svg("svg", { class: "scatter", viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": "plan vs achieved" });
  const axis = svg("g", { class: "gantt-axis" });
  const step = top / 5;
  for (let i = 0; i <= 5; i++) {
    const v = i * step;
    axis.append(svg("line", { x1: sx(v), x2: sx(v), y1: sy(0), y2: sy(top), class: "grid" }));
    axis.append(svg("line", { x1: sx(0), x2: sx(top), y1: sy(v), y2: sy(v), class: "grid" }));
    axis.append(svg("text", { x: sx(v), y: H - PAD + 14, "text-anchor": "middle" }, num(v, 0)));
    axis.append(svg("text", { x: PAD - 6, y: sy(v) + 3, "text-anchor": "end" }, num(v, 0)));
  }
  axis.append(svg("text", { x: (W + PAD) / 2, y: H - 8, "text-anchor": "middle" }, "planned makespan (s)"));
  axis.append(
    svg("text", { x: 12, y: (H - PAD) / 2, transform: `rotate(-90 12 ${(H - PAD) / 2})`, "text-anchor": "middle" }, "achieved (s)"),
  );
  root.append(axis);
  root.append(svg("line", { x1: sx(0), y1: sy(0), x2: sx(top), y2: sy(top), class: "one" }));
  for (const p of points) {
    const kind = p.arm ? `arm-${p.arm}` : p.calibrated ? "calibrated" : "declared";
    root.append(
      svg(
        "circle",
        { cx: sx(p.planned), cy: sy(p.achieved), r: 3.5, class: `point ${kind}`, "data-root": p.root_id },
        svg("title", {}, `${p.workflow}: planned ${num(p.planned)} s, achieved ${num(p.achieved)} s (${p.scheduler})`),
      ),
    );
  }
  return root;
}

function gapSummary(gap) {
  const m = gap.makespan;
  const t = gap.transfers;
  const f = gap.failures;
  const o = gap.overruns;
  const stat = (label, metric, value, sub) =>
    h(
      "div",
      { class: "stat" },
      h("div", { class: "stat-label" }, label),
      h("div", { class: "stat-value", dataset: { metric } }, value),
      sub ? h("div", { class: "stat-sub" }, sub) : null,
    );
  return h(
    "div",
    { class: "stats" },
    stat("Executed runs", "runs", String(gap.runs.read), `${gap.runs.clean} clean · ${gap.runs.complete} complete`),
    stat("Task runs", "observations", String(gap.observations)),
    stat("Actual / declared", "ratio-median", ratio(gap.ratio.median), `p10 ${ratio(gap.ratio.p10)} · p90 ${ratio(gap.ratio.p90)}`),
    stat("Actual / planned", "planned-ratio-median", ratio(gap.planned_ratio.median), "what the plans predicted"),
    stat("Makespan achieved / planned", "makespan-ratio", ratio(m.ratio.median), `${m.runs} complete runs`),
    stat("Failed attempts", "failure-rate", percent(f.rate), `${f.failed} of ${f.started} started`),
    stat("Over 2× declared", "overrun-rate", percent(o.rate), `${o.events} overrun events`),
    stat("Hand-off delay / planned transfer", "transfer-ratio", ratio(t.ratio.median), `${t.count} cross-node hand-offs`),
  );
}

function faults(gap) {
  const counts = Object.entries(gap.faults.counts).filter(([, n]) => n > 0);
  const others = Object.entries(gap.other_environments || {});
  if (!counts.length && !others.length) return h("p", { class: "muted small" }, "The event log passed its audit.");
  return h(
    "p",
    { class: "warn", dataset: { metric: "faults" } },
    "Left out of the figures: ",
    counts.map(([k, n]) => `${n} ${k.replaceAll("_", " ")}`).join(", ") || "nothing",
    others.length ? ` · runs of other environments: ${others.map(([k, n]) => `${k} (${n})`).join(", ")}` : "",
  );
}

function factorsTable(cal) {
  if (!cal) return h("p", { class: "muted" }, "No calibration.");
  const rows = [
    ...cal.node.map((r) => ({ kind: "node", key: r.node, ...r })),
    ...cal.task_name.map((r) => ({ kind: "task name", key: r.task, ...r })),
  ];
  return [
    h(
      "p",
      { dataset: { metric: "calibration" } },
      cal.enabled ? (cal.active ? h("b", { class: "ok" }, "active") : h("b", {}, "not active yet")) : h("b", {}, "off"),
      ` · ${cal.runs} executed runs (floor ${cal.min_runs}) · ${cal.observations} task runs`,
    ),
    table(
      [
        { label: "kind", value: (r) => r.kind },
        { label: "", value: (r) => r.key },
        { label: "factor", value: (r) => ratio(r.factor), class: "num" },
        { label: "fitted (before shrinkage)", value: (r) => ratio(r.raw), class: "num" },
        { label: "task runs", value: (r) => String(r.count), class: "num" },
      ],
      rows,
      { empty: "no factor yet", rowAttrs: (r) => ({ class: "factor", dataset: { kind: r.kind, key: r.key } }) },
    ),
  ];
}

function canarySection(report) {
  const steps = table(
    [
      { label: "#", value: (s) => String(s.seq), class: "num" },
      { label: "when", value: (s) => when(s.created_at) },
      { label: "step", value: (s) => s.action },
      { label: "candidate", value: (s) => s.candidate },
      { label: "stage", value: (s) => `${percent(s.from_fraction)} → ${percent(s.to_fraction)}` },
      { label: "why", value: (s) => s.reason },
    ],
    report.steps,
    { empty: "no canary has run", rowAttrs: (s) => ({ class: "canary-step", dataset: { action: s.action } }) },
  );
  if (!report.canary) {
    return [h("p", { class: "muted", dataset: { metric: "canary" } }, "No canary runs now (runtime config: canary)."), steps];
  }
  const c = report.canary;
  const arms = report.stage.arms;
  const p = report.stage.paired;
  return [
    h(
      "p",
      { dataset: { metric: "canary" } },
      h("b", {}, c.scheduler || `model ${c.model_version}`),
      ` plans ${percent(c.fraction)} of workflows (stages ${c.stages.map((f) => percent(f)).join(" → ")}) · verdict: `,
      h("b", {}, report.verdict.action),
      ` (${report.verdict.reason})`,
    ),
    table(
      [
        { label: "arm", value: (r) => r.arm },
        { label: "plans", value: (r) => String(r.plans), class: "num" },
        { label: "fallbacks", value: (r) => String(r.fallbacks), class: "num" },
        { label: "executed", value: (r) => String(r.executed), class: "num" },
        { label: "plan makespan (mean s)", value: (r) => num(r.plan_makespan_mean), class: "num" },
        { label: "achieved (mean s)", value: (r) => num(r.achieved_makespan_mean), class: "num" },
        { label: "achieved / default's plan", value: (r) => ratio(r.normalised_mean), class: "num" },
      ],
      ["default", "candidate"].map((arm) => ({ arm, ...arms[arm] })),
      { rowAttrs: (r) => ({ class: "canary-arm", dataset: { arm: r.arm } }) },
    ),
    h(
      "p",
      { class: "small" },
      `Paired plans (the shadow planned the other arm): ${p.plans}; candidate shorter on ${p.candidate_wins}, `,
      `ties ${p.ties}, default shorter on ${p.default_wins}; candidate / default plan makespan ${ratio(p.ratio_mean)}`,
      p.ratio_ci[0] !== null ? ` (95 % interval ${num(p.ratio_ci[0], 3)} to ${num(p.ratio_ci[1], 3)})` : "",
    ),
    steps,
  ];
}

function finetuneSection(runs) {
  return [
    h(
      "p",
      { dataset: { metric: "online-ft" } },
      runs.interval_s ? `Online fine-tuning every ${num(runs.interval_s / 3600, 2)} h` : "Online fine-tuning is off",
      " (runtime config: online_ft_interval).",
    ),
    table(
      [
        { label: "finished", value: (r) => when(r.finished_at) },
        { label: "trigger", value: (r) => r.trigger },
        { label: "verdict", value: (r) => r.verdict },
        { label: "new / old", value: (r) => ratio(r.mean_ratio), class: "num" },
        { label: "version", value: (r) => r.version || "–" },
        { label: "why", value: (r) => r.reason },
      ],
      runs.runs,
      { empty: "no fine-tune yet", rowAttrs: (r) => ({ class: "ft-run", dataset: { verdict: r.verdict } }) },
    ),
  ];
}

export async function render(root, { params }) {
  const since = params.since || "7d";
  const picker = h(
    "select",
    { id: "gap-since", onchange: (e) => (location.hash = `#/reality?since=${e.target.value}`) },
    [...new Set(["1h", "24h", "7d", "30d", since])].map((v) =>
      h("option", { value: v, selected: v === since }, `last ${v}`),
    ),
  );
  const gapCard = h("section", { class: "card", id: "gap" }, h("div", { class: "card-head" }, h("h2", {}, "Plan against reality"), picker));
  const calCard = h("section", { class: "card", id: "calibration" }, h("h2", {}, "Calibration factors"));
  const canaryCard = h("section", { class: "card", id: "canary" }, h("h2", {}, "Canary release"));
  const ftCard = h("section", { class: "card", id: "finetune" }, h("h2", {}, "Online fine-tuning"));
  root.append(h("h1", {}, "Reality"), gapCard, calCard, canaryCard, ftCard);
  setHashParams("reality", { since: params.since });
  const [gap, canary, runs] = await Promise.allSettled([
    getJSON("/v1/gap", { since }),
    getJSON("/v1/canary/report"),
    getJSON("/v1/finetune/runs", { limit: 20 }),
  ]);
  if (gap.status === "fulfilled") {
    const g = gap.value;
    gapCard.append(
      gapSummary(g),
      faults(g),
      h(
        "div",
        { class: "split reality-split" },
        h(
          "div",
          { id: "gap-distributions" },
          h("h3", {}, "Actual / declared runtime per node"),
          g.by_node.length ? boxPlots(g.by_node, "node") : h("p", { class: "muted" }, "no executed task yet"),
          h("h3", {}, "Actual / declared runtime per task name"),
          g.by_task.length ? boxPlots(g.by_task, "task name") : h("p", { class: "muted" }, "no executed task yet"),
        ),
        h(
          "div",
          { id: "gap-scatter" },
          h("h3", {}, "Makespan: planned against achieved"),
          g.makespan.points.length
            ? scatter(g.makespan.points)
            : h("p", { class: "muted" }, "no complete run yet: report task starts and finishes to POST /v1/events"),
          h(
            "p",
            { class: "legend small" },
            h("span", { class: "swatch" }, h("i", { class: "declared" }), "planned on declared runtimes"),
            h("span", { class: "swatch" }, h("i", { class: "calibrated" }), "calibrated"),
            h("span", { class: "swatch" }, h("i", { class: "arm-candidate" }), "canary candidate"),
            " · above the line: slower than planned",
          ),
        ),
      ),
      h(
        "p",
        { class: "muted small" },
        "Boxes: p25 to p75, whiskers p10 to p90, a tick at the median; 1× is as declared. ",
        `Environment ${g.environment ?? "every one"}, plans since ${when(g.since)}.`,
      ),
    );
    calCard.append(h("div", {}, factorsTable(g.calibration)));
  } else {
    gapCard.append(errorBox(gap.reason.message));
    calCard.append(errorBox(gap.reason.message));
  }
  canaryCard.append(h("div", {}, canary.status === "fulfilled" ? canarySection(canary.value) : errorBox(canary.reason.message)));
  ftCard.append(h("div", {}, runs.status === "fulfilled" ? finetuneSection(runs.value) : errorBox(runs.reason.message)));
}
