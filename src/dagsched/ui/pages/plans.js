// Plans: the stored plans, newest first, searchable (GET /v1/plans), a page at a time.

import { getJSON } from "../api.js";
import { errorBox, fill, h, money, num, setHashParams, shortId, table, when } from "../dom.js";

const PAGE = 25;

export async function render(root, { params }) {
  const state = {
    q: params.q || "",
    workflow: params.workflow || "",
    scheduler: params.scheduler || "",
    fallback: params.fallback || "",
    offset: Number(params.offset) || 0,
  };

  const q = h("input", { type: "search", name: "q", placeholder: "workflow name or plan id", value: state.q });
  const workflow = h("input", { type: "text", name: "workflow", placeholder: "exact workflow", value: state.workflow });
  const scheduler = h("select", { name: "scheduler" }, h("option", { value: "" }, "any scheduler"));
  const fallback = h(
    "select",
    { name: "fallback" },
    h("option", { value: "" }, "fallback: any"),
    h("option", { value: "true" }, "fell back"),
    h("option", { value: "false" }, "did not fall back"),
  );
  fallback.value = state.fallback;
  const summary = h("p", { class: "muted", dataset: { role: "summary" } });
  const results = h("div", {});
  const prev = h("button", { type: "button" }, "← newer");
  const next = h("button", { type: "button" }, "older →");
  root.append(
    h("h1", {}, "Plans"),
    h("form", { class: "filters", onsubmit: (e) => e.preventDefault() }, q, workflow, scheduler, fallback),
    summary,
    results,
    h("div", { class: "pager" }, prev, next),
  );

  let seq = 0;
  async function load() {
    const mine = ++seq;
    setHashParams("plans", { ...state, offset: state.offset || "" });
    try {
      const page = await getJSON("/v1/plans", { ...state, limit: PAGE });
      if (mine !== seq) return; // a newer search answered first
      const last = state.offset + page.count;
      fill(summary, page.total === 0 ? "no plans match" : `${state.offset + 1}–${last} of ${page.total}`);
      fill(results, plansTable(page.plans));
      prev.disabled = state.offset === 0;
      next.disabled = last >= page.total;
    } catch (err) {
      if (mine === seq) fill(results, errorBox(err.message));
    }
  }

  let debounce = null;
  const onFilter = (key, el, delay) => () => {
    clearTimeout(debounce);
    debounce = setTimeout(() => {
      state[key] = el.value.trim();
      state.offset = 0;
      load();
    }, delay);
  };
  q.addEventListener("input", onFilter("q", q, 250));
  workflow.addEventListener("input", onFilter("workflow", workflow, 250));
  scheduler.addEventListener("change", onFilter("scheduler", scheduler, 0));
  fallback.addEventListener("change", onFilter("fallback", fallback, 0));
  prev.addEventListener("click", () => {
    state.offset = Math.max(0, state.offset - PAGE);
    load();
  });
  next.addEventListener("click", () => {
    state.offset += PAGE;
    load();
  });

  const [names] = await Promise.all([getJSON("/v1/schedulers").catch(() => ({ schedulers: [] })), load()]);
  for (const name of names.schedulers) scheduler.append(h("option", { value: name }, name));
  scheduler.value = state.scheduler;
  return () => clearTimeout(debounce);
}

function plansTable(plans) {
  return table(
    [
      { label: "created", value: (p) => when(p.created_at) },
      { label: "workflow", value: (p) => p.workflow },
      { label: "scheduler", value: (p) => p.scheduler },
      { label: "fallback", value: (p) => (p.fallback ? h("span", { class: "bad" }, "yes") : "no") },
      { label: "makespan (s)", value: (p) => num(p.makespan), class: "num" },
      { label: "cost", value: (p) => money(p.cost), class: "num" },
      { label: "model", value: (p) => p.model_version || "–" },
      { label: "plan", value: (p) => h("a", { href: `#/plans/${p.plan_id}`, class: "plan-link" }, shortId(p.plan_id)) },
    ],
    plans,
    { empty: "no plans", rowAttrs: (p) => ({ dataset: { planId: p.plan_id } }) },
  );
}
