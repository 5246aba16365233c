// Decisions log: every task -> node decision the service made, newest first, filtered (GET /v1/decisions).

import { getJSON } from "../api.js";
import { errorBox, fill, h, ms, num, setHashParams, shortId, table, when } from "../dom.js";

const FILTERS = ["workflow", "plan_id", "scheduler", "model_version", "fallback", "limit"];

export async function render(root, { params }) {
  const inputs = {
    workflow: h("input", { type: "text", name: "workflow", placeholder: "workflow" }),
    plan_id: h("input", { type: "text", name: "plan_id", placeholder: "plan id" }),
    scheduler: h("select", { name: "scheduler" }, h("option", { value: "" }, "any scheduler")),
    model_version: h("input", { type: "text", name: "model_version", placeholder: "model version" }),
    fallback: h(
      "select",
      { name: "fallback" },
      h("option", { value: "" }, "fallback: any"),
      h("option", { value: "true" }, "fell back"),
      h("option", { value: "false" }, "did not fall back"),
    ),
    limit: h("input", { type: "number", name: "limit", min: 1, max: 1000, value: 100, title: "rows" }),
  };
  const summary = h("p", { class: "muted", dataset: { role: "summary" } });
  const results = h("div", {});
  const form = h(
    "form",
    { class: "filters", onsubmit: (e) => (e.preventDefault(), load()) },
    FILTERS.map((k) => inputs[k]),
    h("button", { type: "submit" }, "Filter"),
  );
  root.append(h("h1", {}, "Decisions"), form, summary, results);

  const names = await getJSON("/v1/schedulers").catch(() => ({ schedulers: [] }));
  for (const name of names.schedulers) inputs.scheduler.append(h("option", { value: name }, name));
  for (const k of FILTERS) if (params[k] !== undefined) inputs[k].value = params[k];
  for (const k of ["scheduler", "fallback"]) inputs[k].addEventListener("change", () => load());

  let seq = 0;
  async function load() {
    const mine = ++seq;
    const filters = Object.fromEntries(FILTERS.map((k) => [k, inputs[k].value.trim()]));
    setHashParams("decisions", { ...filters, limit: filters.limit === "100" ? "" : filters.limit });
    try {
      const page = await getJSON("/v1/decisions", filters);
      if (mine !== seq) return;
      fill(
        summary,
        `${page.count} decision${page.count === 1 ? "" : "s"}${page.count >= Number(filters.limit || 100) ? " (the newest; raise the limit for more)" : ""}`,
      );
      fill(results, decisionsTable(page.decisions));
    } catch (err) {
      if (mine === seq) fill(results, errorBox(err.message));
    }
  }
  await load();
}

/** The best-scored node the decision did not choose, as "node score". */
function runnerUp(d) {
  const other = (d.scores || []).filter((s) => !s.chosen).sort((a, b) => a.score - b.score)[0];
  return other ? `${other.node} ${num(other.score)}` : "–";
}

function decisionsTable(rows) {
  return table(
    [
      { label: "time", value: (d) => when(d.created_at) },
      { label: "workflow", value: (d) => d.workflow },
      { label: "task", value: (d) => d.task },
      { label: "node", value: (d) => d.node },
      { label: "start → finish (s)", value: (d) => `${num(d.start)} → ${num(d.finish)}`, class: "num" },
      { label: "runner-up", value: runnerUp },
      { label: "scheduler", value: (d) => d.scheduler },
      { label: "latency", value: (d) => ms(d.latency_ms), class: "num" },
      { label: "model", value: (d) => d.model_version || "–" },
      { label: "fallback", value: (d) => (d.fallback ? h("span", { class: "bad" }, "yes") : "no") },
      { label: "plan", value: (d) => h("a", { href: `#/plans/${d.plan_id}` }, shortId(d.plan_id)) },
    ],
    rows,
    {
      empty: "no decisions match",
      rowAttrs: (d) => ({ class: "decision", dataset: { planId: d.plan_id, scheduler: d.scheduler } }),
    },
  );
}
