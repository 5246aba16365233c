// One plan (#/plans/<id>): its Gantt chart per node, its DAG (Cytoscape + dagre) coloured by node or by the
// attributions of one task's score (drl plans), and a task's evidence and explanation on click (GET /v1/plans/{id}/explain).

import { getJSON } from "../api.js";
import {
  categorical,
  diverging,
  errorBox,
  fill,
  h,
  loading,
  money,
  num,
  seconds,
  shortId,
  stat,
  table,
  warnBox,
  when,
} from "../dom.js";
import { ganttChart, highlightBar } from "../gantt.js";

const UNPLACED = "#c8c8c8";

export async function render(root, { id }) {
  root.append(loading());
  const [plan, graph] = await Promise.all([
    getJSON(`/v1/plans/${encodeURIComponent(id)}`),
    getJSON(`/v1/plans/${encodeURIComponent(id)}/graph`).catch((err) => ({ error: err.message })),
  ]);
  const nodeIds = graph.nodes ? graph.nodes.map((n) => n.id) : [...new Set(plan.assignments.map((a) => a.node))];
  const nodeColor = new Map(nodeIds.map((n, i) => [n, categorical(i)]));
  const view = { selected: null, mode: "node", explanation: null, cy: null };

  const gantt = ganttChart(plan.assignments, {
    nodes: nodeIds,
    makespan: plan.makespan,
    onSelect: (task) => select(task),
    title: `Gantt chart of plan ${id}`,
  });
  const dag = h("div", { class: "dag", id: "dag", "aria-label": "the workflow's DAG" });
  const legend = h("div", { class: "legend" });
  const detail = h(
    "aside",
    { class: "detail", id: "detail" },
    h("p", { class: "muted" }, "Click a task (in the DAG or the Gantt chart) to see why it is where it is."),
  );
  const modeNode = h("input", { type: "radio", name: "colour", value: "node", checked: true });
  const modeAttr = h("input", { type: "radio", name: "colour", value: "attribution" });

  fill(
    root,
    h("h1", {}, `Plan: ${plan.workflow}`),
    h(
      "p",
      { class: "muted" },
      h("code", {}, plan.plan_id),
      ` · ${plan.scheduler}`,
      plan.requested_scheduler && plan.requested_scheduler !== plan.scheduler
        ? ` (asked: ${plan.requested_scheduler})`
        : "",
      plan.model_version ? ` · model ${plan.model_version}` : "",
      ` · ${when(plan.created_at)} · ${plan.environment || ""} · `,
      h("a", { href: `#/decisions?plan_id=${plan.plan_id}` }, "its decisions"),
      " · ",
      h("a", { href: `/v1/plans/${plan.plan_id}`, target: "_blank", rel: "noopener" }, "JSON"),
    ),
    plan.fallback ? warnBox(`fell back to ${plan.scheduler}: ${plan.fallback_reason}`) : null,
    h(
      "div",
      { class: "stats" },
      stat("Makespan", "makespan", seconds(plan.makespan)),
      stat("Cost", "cost", money(plan.cost)),
      stat("Tasks", "tasks", String(plan.assignments.length)),
      stat("Nodes used", "nodes-used", `${new Set(plan.assignments.map((a) => a.node)).size} of ${nodeIds.length}`),
      plan.objective ? stat("Objective", "objective", num(plan.objective.value, 3), "lower is better") : null,
    ),
    h("section", { class: "card" }, h("h2", {}, "Gantt chart"), gantt),
    h(
      "section",
      { class: "card" },
      h(
        "div",
        { class: "card-head" },
        h("h2", {}, "DAG"),
        h(
          "div",
          { class: "toggle" },
          "colour by ",
          h("label", {}, modeNode, " node"),
          h("label", {}, modeAttr, " attribution"),
        ),
      ),
      legend,
      h("div", { class: "split" }, dag, detail),
    ),
  );

  if (graph.error) {
    fill(dag, errorBox(`the plan's graph: ${graph.error}`));
  } else {
    view.cy = drawDag(dag, graph, nodeColor, (task) => select(task));
    window.dagschedCy = view.cy;
  }
  colour();

  modeNode.addEventListener("change", () => setMode("node"));
  modeAttr.addEventListener("change", () => setMode("attribution"));

  function setMode(mode) {
    view.mode = mode;
    if (mode === "attribution" && !view.selected && plan.assignments.length) {
      const first = [...plan.assignments].sort((a, b) => a.start - b.start)[0];
      select(first.task);
    } else colour();
  }

  let seq = 0;
  async function select(task) {
    const mine = ++seq;
    view.selected = task;
    view.explanation = null;
    highlightBar(gantt, task);
    if (view.cy) {
      view.cy.nodes().removeClass("picked");
      view.cy.getElementById(task).addClass("picked");
    }
    fill(detail, h("h3", {}, task), loading());
    colour();
    try {
      const ex = await getJSON(`/v1/plans/${encodeURIComponent(id)}/explain`, { task });
      if (mine !== seq) return;
      view.explanation = ex;
      fill(detail, explanation(ex));
    } catch (err) {
      if (mine === seq) fill(detail, h("h3", {}, task), errorBox(err.message));
    }
    colour();
  }

  function colour() {
    if (!view.cy) return;
    const attributions = view.explanation?.task?.attributions;
    if (view.mode === "node" || !attributions) {
      view.cy.nodes().forEach((n) => n.data("color", nodeColor.get(n.data("node")) || UNPLACED));
      fill(
        legend,
        nodeIds.filter((n) => plan.assignments.some((a) => a.node === n)).map((n) => swatch(nodeColor.get(n), n)),
      );
      if (view.mode === "attribution") {
        legend.append(
          h(
            "span",
            { class: "muted" },
            view.explanation || !view.selected
              ? "· no attributions for this task: only plans of the learned planner (drl), replayed with the model that made them, have them"
              : "· computing attributions…",
          ),
        );
      }
      return;
    }
    const byTask = new Map(attributions.by_task.map((r) => [r.task, r.value]));
    const scale = Math.max(1e-12, ...attributions.by_task.map((r) => Math.abs(r.value)));
    view.cy.nodes().forEach((n) => n.data("color", diverging((byTask.get(n.id()) || 0) / scale)));
    fill(
      legend,
      swatch(diverging(1), "raises"),
      swatch(diverging(-1), "lowers"),
      h(
        "span",
        { class: "muted" },
        "each task's attribution to the score of ",
        h("b", {}, view.selected),
        ` (${attributions.method.replace(/_/g, " ")} of ${attributions.target}; largest |value| ${num(scale, 4)})`,
      ),
    );
  }

  return () => {
    seq++;
    if (view.cy) view.cy.destroy();
    if (window.dagschedCy === view.cy) delete window.dagschedCy;
  };
}

const swatch = (color, label) => h("span", { class: "swatch" }, h("i", { style: `background:${color}` }), label);

function drawDag(container, graph, nodeColor, onSelect) {
  const elements = [
    ...graph.tasks.map((t) => ({ data: { id: t.id, node: t.node, color: nodeColor.get(t.node) || UNPLACED } })),
    ...graph.edges.map((e, i) => ({ data: { id: `e${i}`, source: e.source, target: e.target } })),
  ];
  container.dataset.dagNodes = String(graph.tasks.length);
  container.dataset.dagEdges = String(graph.edges.length);
  const cy = window.cytoscape({
    container,
    elements,
    layout: { name: "dagre", rankDir: "LR", nodeSep: 14, rankSep: 60, fit: true, padding: 16 },
    minZoom: 0.1,
    maxZoom: 4,
    style: [
      {
        selector: "node",
        style: {
          "background-color": "data(color)",
          "border-width": 1,
          "border-color": "#555",
          label: "data(id)",
          "font-size": 9,
          color: "#222",
          "text-valign": "bottom",
          "text-margin-y": 3,
          width: 18,
          height: 18,
        },
      },
      { selector: "node.picked", style: { "border-width": 3, "border-color": "#111" } },
      {
        selector: "edge",
        style: {
          width: 1.2,
          "line-color": "#9aa",
          "target-arrow-color": "#9aa",
          "target-arrow-shape": "triangle",
          "curve-style": "bezier",
          "arrow-scale": 0.8,
        },
      },
    ],
  });
  cy.on("tap", "node", (event) => onSelect(event.target.id()));
  return cy;
}

function explanation(ex) {
  const t = ex.task;
  const parts = [
    h("h3", {}, t.task),
    h("p", {}, "on ", h("b", {}, t.node), ` from ${num(t.start)} to ${num(t.finish)} s`),
    h("h4", {}, "Evidence"),
    h("p", { class: "muted small" }, t.evidence.score),
    table(
      [
        { label: "node", value: (a) => (a.chosen ? h("b", {}, a.node) : a.node) },
        { label: "score", value: (a) => num(a.score), class: "num" },
        { label: "start", value: (a) => num(a.start), class: "num" },
        { label: "finish", value: (a) => num(a.finish), class: "num" },
        { label: "", value: (a) => (a.chosen ? "chosen" : "") },
      ],
      t.evidence.alternatives,
      { empty: "no alternatives recorded" },
    ),
    t.evidence.rejected.length
      ? h(
          "ul",
          { class: "small" },
          t.evidence.rejected.map((r) => h("li", {}, h("b", {}, r.node), ` rejected: ${r.constraint}`)),
        )
      : null,
    h(
      "p",
      { class: "small" },
      Object.entries(t.evidence.terms).map(([k, v]) => h("span", { class: "term" }, `${k} ${num(v, 4)}`)),
    ),
  ];
  if (t.policy) {
    parts.push(
      h("h4", {}, "Learned policy"),
      h(
        "p",
        { class: "small" },
        `probability ${num(t.policy.probability, 3)} among the tasks ready when it was placed`,
        t.policy.margin === null ? " (the only one ready)" : ` · margin ${num(t.policy.margin, 3)} (score)`,
      ),
      table(
        [
          { label: "ready task", value: (a) => a.task },
          { label: "score", value: (a) => num(a.logit, 3), class: "num" },
          { label: "p", value: (a) => num(a.probability, 3), class: "num" },
          { label: "", value: (a) => (a.chosen ? "chosen" : "") },
        ],
        t.policy.alternatives.slice(0, 8),
      ),
    );
  } else if (ex.policy?.unavailable) {
    parts.push(h("p", { class: "muted small" }, `policy: ${ex.policy.unavailable}`));
  }
  const at = t.attributions;
  if (at) {
    const top = [...at.by_feature].sort((a, b) => Math.abs(b.value) - Math.abs(a.value)).slice(0, 8);
    const scale = Math.max(1e-12, ...top.map((r) => Math.abs(r.value)));
    parts.push(
      h("h4", {}, "Attributions"),
      h("p", { class: "muted small" }, `${at.method.replace(/_/g, " ")} of ${at.target}; baseline ${at.baseline}`),
      h(
        "ul",
        { class: "bars small" },
        top.map((r) =>
          h(
            "li",
            {},
            h("span", { class: "bar-label" }, `${r.group}.${r.feature}`),
            h("span", {
              class: "bar",
              style: `width:${(50 * Math.abs(r.value)) / scale}%;background:${diverging(Math.sign(r.value))}`,
            }),
            h("span", { class: "num" }, num(r.value, 4)),
          ),
        ),
      ),
    );
  }
  parts.push(
    h(
      "p",
      { class: "muted small" },
      `plan ${shortId(ex.plan_id)} · ${ex.scheduler}`,
      ex.model_version ? ` · model ${ex.model_version}` : "",
    ),
  );
  return parts;
}
