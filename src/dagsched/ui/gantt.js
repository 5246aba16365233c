// A Gantt chart of a plan as SVG: one row per node, one bar (<g class="gantt-bar" data-task>) per assignment.
// Tasks that overlap on one node (several tasks share its cores) go on separate lanes of that row.

import { categorical, num, svg } from "./dom.js";

const LABEL_W = 130;
const PAD_R = 20;
const AXIS_H = 26;
const LANE_H = 22;
const LANE_GAP = 4;
const ROW_PAD = 6;
const MAX_IDLE_ROWS = 16; // with more nodes than this, only the nodes the plan uses get a row

/** A "nice" tick step (1, 2 or 5 times a power of ten) giving about `count` ticks over [0, span]. */
export function tickStep(span, count = 8) {
  if (!(span > 0)) return 1;
  const raw = span / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const m = raw / power;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * power;
}

/** Greedy lanes: each assignment on the first lane of its node whose last bar ends by its start. */
function lanes(assignments) {
  const ends = [];
  const laneOf = new Map();
  for (const a of [...assignments].sort((x, y) => x.start - y.start || x.finish - y.finish)) {
    let lane = ends.findIndex((end) => end <= a.start + 1e-9);
    if (lane < 0) lane = ends.push(0) - 1;
    ends[lane] = a.finish;
    laneOf.set(a, lane);
  }
  return { count: Math.max(1, ends.length), laneOf };
}

/**
 * The chart. `assignments`: [{task, node, start, finish}]; options: `nodes` (ids, in row order), `makespan`,
 * `color(assignment, nodeIndex)`, `onSelect(task)` (click on a bar), `title` (the svg's accessible name), `width`
 * (in viewBox units: about the width it will be shown at, so labels keep their size).
 */
export function ganttChart(
  assignments,
  { nodes = [], makespan = null, color = null, onSelect = null, title = "Gantt chart", width = 1000 } = {},
) {
  const used = new Set(assignments.map((a) => a.node));
  let rows = nodes.length <= MAX_IDLE_ROWS ? [...nodes] : nodes.filter((n) => used.has(n));
  for (const n of used) if (!rows.includes(n)) rows.push(n);
  const nodeIndex = new Map(nodes.map((n, i) => [n, i]));
  for (const n of rows) if (!nodeIndex.has(n)) nodeIndex.set(n, nodeIndex.size);
  const fill = color || ((a, i) => categorical(i));

  const end = Math.max(makespan || 0, ...assignments.map((a) => a.finish), 1e-9);
  const x = (t) => LABEL_W + ((width - LABEL_W - PAD_R) * t) / end;

  const byNode = new Map(rows.map((n) => [n, []]));
  for (const a of assignments) byNode.get(a.node).push(a);
  const layout = rows.map((n) => ({ node: n, ...lanes(byNode.get(n)) }));
  const height = AXIS_H + layout.reduce((s, r) => s + r.count * (LANE_H + LANE_GAP) + 2 * ROW_PAD, 0) + 4;

  const root = svg("svg", {
    class: "gantt",
    viewBox: `0 0 ${width} ${height}`,
    role: "img",
    "aria-label": title,
    "data-bars": assignments.length,
  });

  // time axis and grid
  const step = tickStep(end);
  const axis = svg("g", { class: "gantt-axis" });
  for (let t = 0; t <= end + 1e-9; t += step) {
    axis.append(svg("line", { x1: x(t), x2: x(t), y1: AXIS_H - 4, y2: height, class: "gantt-grid" }));
    axis.append(svg("text", { x: x(t), y: AXIS_H - 9, "text-anchor": "middle" }, `${num(t, step < 1 ? 1 : 0)}`));
  }
  axis.append(svg("text", { x: 4, y: AXIS_H - 9, class: "gantt-unit" }, "time (s)"));
  root.append(axis);

  let y = AXIS_H;
  for (const row of layout) {
    const rowH = row.count * (LANE_H + LANE_GAP) + 2 * ROW_PAD;
    root.append(svg("rect", { x: 0, y, width, height: rowH, class: "gantt-row" }));
    root.append(svg("text", { x: 6, y: y + rowH / 2 + 4, class: "gantt-node" }, row.node));
    for (const a of byNode.get(row.node)) {
      const top = y + ROW_PAD + row.laneOf.get(a) * (LANE_H + LANE_GAP);
      const left = x(a.start);
      const w = Math.max(1.5, x(a.finish) - left);
      const bar = svg(
        "g",
        { class: "gantt-bar", "data-task": a.task, "data-node": a.node, tabindex: onSelect ? 0 : null },
        svg("title", {}, `${a.task} on ${a.node}: ${num(a.start)} → ${num(a.finish)} s`),
        svg("rect", { x: left, y: top, width: w, height: LANE_H, rx: 3, fill: fill(a, nodeIndex.get(a.node)) }),
      );
      if (w > 7 * a.task.length + 8) bar.append(svg("text", { x: left + 4, y: top + LANE_H / 2 + 4 }, a.task));
      if (onSelect) {
        bar.addEventListener("click", () => onSelect(a.task));
        bar.addEventListener("keydown", (e) => e.key === "Enter" && onSelect(a.task));
      }
      root.append(bar);
    }
    y += rowH;
  }
  const hidden = nodes.length - rows.filter((n) => nodeIndex.get(n) < nodes.length).length;
  const box = document.createElement("div");
  box.className = "gantt-box";
  box.append(root);
  if (hidden > 0) {
    const note = document.createElement("p");
    note.className = "muted small";
    note.textContent = `${hidden} idle node${hidden === 1 ? "" : "s"} not shown`;
    box.append(note);
  }
  return box;
}

/** Mark one task's bar as selected (and clear the others). */
export function highlightBar(container, task) {
  for (const bar of container.querySelectorAll(".gantt-bar"))
    bar.classList.toggle("selected", bar.dataset.task === task);
}
