// Sandbox: plan one workflow with several schedulers side by side (POST /v1/schedule for each), and compare
// makespan, cost, the SLA term and their Gantt charts. Nothing here needs the API token.

import { ApiError, getJSON, postJSON } from "../api.js";
import { errorBox, fill, h, money, num, seconds, shortId, table, warnBox } from "../dom.js";
import { ganttChart } from "../gantt.js";

// The README's ETL example (its "Service" section): a native workflow in YAML, and two nodes.
const EXAMPLE_WORKFLOW = `name: etl
tasks:
  - {id: extract, runtime: 10}
  - {id: transform, runtime: 20, resources: {cpu: 2}, dependencies: [extract]}
  - {id: load, runtime: 5, dependencies: [{task: transform, data: 1.0e9}]}
`;
const EXAMPLE_NODES = [
  { id: "n1", cpu: 8, mem: 32, speed: 1.0, price_per_hour: 0.4, free: { cpu: 6, mem: 20 } },
  {
    id: "n2",
    cpu: 16,
    mem: 64,
    gpu: 1,
    speed: 2.0,
    price_per_hour: 1.2,
    free: { cpu: 16, mem: 64, gpu: 1 },
    labels: { zone: "eu" },
  },
];
const DEFAULT_PICKS = ["heft", "drl"];

/** JSON or YAML text to a value; the error names what was being read. */
export function parseDocument(text, what) {
  if (!text.trim()) throw new Error(`${what}: empty`);
  try {
    return JSON.parse(text);
  } catch {
    try {
      return window.jsyaml.load(text);
    } catch (err) {
      throw new Error(`${what}: not JSON or YAML: ${err.message.split("\n")[0]}`);
    }
  }
}

function describe(workflow) {
  if (workflow && typeof workflow === "object" && workflow.workflow && workflow.schemaVersion) {
    const tasks = workflow.workflow.specification?.tasks || workflow.workflow.tasks || [];
    return `WfFormat ${workflow.schemaVersion}: ${workflow.name || "unnamed"}, ${tasks.length} tasks`;
  }
  if (workflow && typeof workflow === "object" && Array.isArray(workflow.tasks)) {
    return `native: ${workflow.name || "unnamed"}, ${workflow.tasks.length} tasks`;
  }
  return "not a workflow the service knows: it will say why";
}

export async function render(root) {
  const [schedulers, clusters] = await Promise.all([
    getJSON("/v1/schedulers"),
    getJSON("/v1/clusters").catch(() => ({ presets: [] })),
  ]);

  const workflowText = h(
    "textarea",
    { id: "workflow", name: "workflow", rows: 14, spellcheck: "false" },
    EXAMPLE_WORKFLOW,
  );
  const workflowKind = h("p", { class: "muted small", id: "workflow-kind" });
  const upload = h("input", { type: "file", id: "workflow-file", accept: ".json,.yaml,.yml,application/json" });
  const nodesText = h(
    "textarea",
    { id: "nodes", name: "nodes", rows: 14, spellcheck: "false" },
    JSON.stringify(EXAMPLE_NODES, null, 2),
  );
  const preset = h(
    "select",
    { id: "preset", name: "preset" },
    h("option", { value: "" }, "the README's two nodes (edit below)"),
    clusters.presets.map((p) =>
      h("option", { value: p.name, title: p.description || "" }, `${p.name} (${p.nodes.length} nodes)`),
    ),
  );
  const picks = schedulers.schedulers.map((name) =>
    h(
      "label",
      { class: "pick" },
      h("input", { type: "checkbox", name: "scheduler", value: name, checked: DEFAULT_PICKS.includes(name) }),
      ` ${name}`,
    ),
  );
  const run = h("button", { type: "submit", id: "run", class: "primary" }, "Plan with each");
  const results = h("div", { id: "sandbox-results" });

  root.append(
    h("h1", {}, "Sandbox"),
    h(
      "p",
      { class: "muted" },
      "Plan a workflow with several schedulers on the same nodes. Plans made here are stored like any other.",
    ),
    h(
      "form",
      { class: "sandbox", onsubmit: (e) => (e.preventDefault(), plan()) },
      h(
        "div",
        { class: "grid2" },
        h(
          "div",
          {},
          h("h2", {}, "Workflow"),
          h("p", { class: "small" }, "native YAML or JSON, or WfFormat JSON · ", upload),
          workflowText,
          workflowKind,
        ),
        h("div", {}, h("h2", {}, "Nodes"), h("p", { class: "small" }, "cluster preset ", preset), nodesText),
      ),
      h("h2", {}, "Schedulers"),
      h("fieldset", { class: "picks" }, picks),
      run,
    ),
    results,
  );

  const showKind = () => {
    try {
      fill(workflowKind, describe(parseDocument(workflowText.value, "workflow")));
    } catch (err) {
      fill(workflowKind, err.message);
    }
  };
  workflowText.addEventListener("input", showKind);
  showKind();
  upload.addEventListener("change", async () => {
    const file = upload.files[0];
    if (!file) return;
    workflowText.value = await file.text();
    showKind();
  });
  preset.addEventListener("change", () => {
    const chosen = clusters.presets.find((p) => p.name === preset.value);
    nodesText.value = JSON.stringify(chosen ? chosen.nodes : EXAMPLE_NODES, null, 2);
  });

  async function plan() {
    const chosen = [...root.querySelectorAll("input[name=scheduler]:checked")].map((el) => el.value);
    let workflow;
    let nodes;
    try {
      workflow = parseDocument(workflowText.value, "workflow");
      nodes = parseDocument(nodesText.value, "nodes");
      if (nodes && !Array.isArray(nodes) && Array.isArray(nodes.nodes)) nodes = nodes.nodes;
      if (chosen.length === 0) throw new Error("schedulers: pick at least one");
    } catch (err) {
      fill(results, errorBox(err.message));
      return;
    }
    run.disabled = true;
    fill(results, h("p", { class: "muted" }, `planning with ${chosen.join(", ")}…`));
    const answers = await Promise.allSettled(
      chosen.map((scheduler) => postJSON("/v1/schedule", { workflow, nodes, scheduler })),
    );
    run.disabled = false;
    fill(results, compare(chosen, answers, nodes));
  }
}

function compare(chosen, answers, nodes) {
  const out = chosen.map((scheduler, i) => ({
    scheduler,
    plan: answers[i].status === "fulfilled" ? answers[i].value : null,
    error: answers[i].status === "rejected" ? answers[i].reason : null,
  }));
  const messages = new Set(out.filter((r) => r.error).map((r) => r.error.message));
  // one bad input fails every scheduler the same way: say it once
  const shared = out.every((r) => r.error) && messages.size === 1 ? out[0].error : null;
  if (shared) return [errorBox(shared.message), shared instanceof ApiError ? fieldList(shared) : null];

  const ok = out.filter((r) => r.plan);
  const best = Math.min(...ok.map((r) => r.plan.makespan));
  const nodeIds = nodes.map((n) => n.id);
  return [
    h("h2", {}, "Comparison"),
    table(
      [
        { label: "scheduler", value: (r) => r.scheduler },
        {
          label: "makespan",
          value: (r) =>
            r.plan ? h("span", { class: r.plan.makespan <= best + 1e-9 ? "best" : "" }, seconds(r.plan.makespan)) : "–",
          class: "num",
        },
        { label: "cost", value: (r) => (r.plan ? money(r.plan.cost) : "–"), class: "num" },
        { label: "SLA term", value: (r) => (r.plan ? num(r.plan.objective?.terms?.sla, 3) : "–"), class: "num" },
        { label: "objective", value: (r) => (r.plan ? num(r.plan.objective?.value, 3) : "–"), class: "num" },
        {
          label: "fallback",
          value: (r) =>
            r.plan
              ? r.plan.fallback
                ? h("span", { class: "bad" }, `yes: ${r.plan.fallback_reason}`)
                : "no"
              : h("span", { class: "bad" }, "failed"),
        },
      ],
      out,
      { rowAttrs: (r) => ({ class: "result-row", dataset: { scheduler: r.scheduler } }) },
    ),
    h(
      "div",
      { class: "results" },
      out.map((r) => resultCard(r, nodeIds)),
    ),
  ];
}

function fieldList(err) {
  const errors = err.body?.errors || [];
  return errors.length > 1
    ? h(
        "ul",
        { class: "small" },
        errors.map((e) => h("li", {}, h("code", {}, e.field), `: ${e.msg}`)),
      )
    : null;
}

function resultCard({ scheduler, plan, error }, nodeIds) {
  const title = h("h3", {}, scheduler);
  if (error) return h("section", { class: "card result", dataset: { scheduler } }, title, errorBox(error.message));
  const terms = plan.objective?.terms || {};
  return h(
    "section",
    { class: "card result", dataset: { scheduler } },
    title,
    h(
      "p",
      {},
      "makespan ",
      h("b", { class: "makespan", dataset: { value: String(plan.makespan) } }, seconds(plan.makespan)),
      " · cost ",
      h("b", { class: "cost", dataset: { value: String(plan.cost) } }, money(plan.cost)),
      " · SLA ",
      h("b", { class: "sla", dataset: { value: String(terms.sla ?? "") } }, num(terms.sla, 3)),
      " · ",
      h("a", { href: `#/plans/${plan.plan_id}` }, `plan ${shortId(plan.plan_id)}`),
    ),
    plan.fallback ? warnBox(`fell back to ${plan.scheduler}: ${plan.fallback_reason}`) : null,
    h(
      "p",
      { class: "small" },
      "objective terms: ",
      Object.entries(terms).map(([k, v]) => h("span", { class: "term" }, `${k} ${num(v, 3)}`)),
    ),
    ganttChart(plan.assignments, { nodes: nodeIds, makespan: plan.makespan, width: 640, title: `${scheduler}'s plan` }),
  );
}
