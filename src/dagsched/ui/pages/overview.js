// Overview: this process's live numbers from GET /v1/stats and /readyz, refreshed every few seconds.

import { getJSON, tryGetJSON } from "../api.js";
import { duration, errorBox, fill, h, ms, num, percent, shortId, stat, table, when } from "../dom.js";

const REFRESH_MS = 3000;

function cards(stats, ready) {
  const d = stats.decision_latency_ms;
  const p = stats.plan_latency_ms;
  const storeOk = stats.store.status === "ok";
  const modelOk = Boolean(stats.model.version);
  const state = (ok, text) => h("span", { class: ok ? "ok" : "bad" }, text);
  return h(
    "div",
    { class: "stats" },
    stat("Plans per second", "plans-per-s", num(stats.plans.per_s), "last minute"),
    stat("Plans", "plans-total", String(stats.plans.total), `this process · ${stats.plans.stored ?? "?"} stored`),
    stat("Decision latency p50", "decision-p50", ms(d.p50), `${d.count} recent decisions`),
    stat("Decision latency p99", "decision-p99", ms(d.p99)),
    stat("Plan latency p50", "plan-p50", ms(p.p50), `p99 ${ms(p.p99)} · ${p.count} recent plans`),
    stat("Fallbacks", "fallbacks", String(stats.fallbacks.total), `${percent(stats.fallbacks.rate)} of plans`),
    stat(
      "Breaker",
      "breaker",
      stats.breaker.open ? state(false, "open") : state(true, "closed"),
      stats.breaker.open ? "HEFT serves drl requests" : null,
    ),
    stat("Model", "model", modelOk ? stats.model.version : state(false, "none loaded"), stats.model.error),
    stat("Store", "store", storeOk ? state(true, "ok") : state(false, stats.store.status), stats.store.dialect),
    stat("Ready", "ready", ready ? state(ready.status === "ready", ready.status) : state(false, "no answer")),
    stat("Default scheduler", "default-scheduler", stats.default_scheduler),
    stat(
      "Canary",
      "canary",
      stats.canary ? `${stats.canary.scheduler || stats.canary.model_version} at ${percent(stats.canary.fraction)}` : "none",
      stats.canary ? h("a", { href: "#/reality" }, "report") : null,
    ),
    stat(
      "Calibration",
      "calibration",
      stats.calibration.enabled ? (stats.calibration.active ? state(true, "active") : "waiting for runs") : "off",
    ),
    stat("gRPC", "grpc", stats.grpc.port ? `port ${stats.grpc.port}` : "off"),
  );
}

function latest(plans) {
  return table(
    [
      { label: "created", value: (p) => when(p.created_at) },
      { label: "workflow", value: (p) => p.workflow },
      { label: "scheduler", value: (p) => p.scheduler + (p.fallback ? " (fallback)" : "") },
      { label: "makespan (s)", value: (p) => num(p.makespan), class: "num" },
      { label: "plan", value: (p) => h("a", { href: `#/plans/${p.plan_id}` }, shortId(p.plan_id)) },
    ],
    plans,
    { empty: "no plans yet: POST /v1/schedule, or try the sandbox" },
  );
}

export async function render(root) {
  const meta = h("p", { class: "muted", dataset: { metric: "updated" } }, "loading…");
  const body = h("div", {});
  const recent = h("div", {});
  root.append(h("h1", {}, "Overview"), meta, body, h("h2", {}, "Latest plans"), recent);

  let timer = null;
  let stopped = false;
  async function refresh() {
    try {
      const [stats, ready, plans] = await Promise.all([
        getJSON("/v1/stats"),
        tryGetJSON("/readyz"),
        getJSON("/v1/plans", { limit: 5 }),
      ]);
      if (stopped) return;
      fill(body, cards(stats, ready));
      fill(recent, latest(plans.plans));
      fill(
        meta,
        `updated ${new Date().toLocaleTimeString()} · environment ${stats.environment} · up ${duration(stats.uptime_s)}`,
      );
    } catch (err) {
      if (!stopped) fill(meta, errorBox(`could not refresh: ${err.message}`));
    }
    if (!stopped) timer = setTimeout(refresh, REFRESH_MS);
  }
  await refresh();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
