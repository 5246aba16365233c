// Shadow report (GET /v1/shadow/report: the live scheduler against the shadow one on the same requests) and the
// benchmark report's figures when the service was started with --report-dir (GET /v1/report).

import { getJSON } from "../api.js";
import { errorBox, h, num, percent, table } from "../dom.js";

const ratio = (x) => (typeof x === "number" ? `${num(x, 3)} ×` : "–");

function shadowSection(report) {
  const pairs = report.pairs || [];
  return [
    h(
      "p",
      {},
      report.shadow
        ? ["shadow scheduler now: ", h("b", { dataset: { metric: "shadow" } }, report.shadow)]
        : h(
            "span",
            { class: "muted", dataset: { metric: "shadow" } },
            "no shadow scheduler is set now (runtime config: shadow: <name>)",
          ),
      ` · ${report.plans} shadowed plan${report.plans === 1 ? "" : "s"} stored`,
    ),
    table(
      [
        { label: "live", value: (p) => p.live },
        { label: "shadow", value: (p) => p.shadow },
        { label: "plans", value: (p) => String(p.plans), class: "num" },
        { label: "live wins", value: (p) => `${p.live_wins} (${percent(p.live_wins / p.plans)})`, class: "num" },
        { label: "ties", value: (p) => String(p.ties), class: "num" },
        { label: "shadow wins", value: (p) => `${p.shadow_wins} (${percent(p.shadow_wins / p.plans)})`, class: "num" },
        { label: "makespan live / shadow (mean)", value: (p) => ratio(p.makespan_ratio_mean), class: "num" },
        { label: "(median)", value: (p) => ratio(p.makespan_ratio_median), class: "num" },
        { label: "cost live / shadow (mean)", value: (p) => ratio(p.cost_ratio_mean), class: "num" },
      ],
      pairs,
      {
        empty: "nothing shadowed yet",
        rowAttrs: (p) => ({ class: "shadow-pair", dataset: { live: p.live, shadow: p.shadow } }),
      },
    ),
    h(
      "p",
      { class: "muted small" },
      "A ratio below 1 means the live scheduler's plans are shorter (or cheaper) than the shadow's on the same requests.",
    ),
  ];
}

function reportSection(report) {
  if (!report.available) {
    return h(
      "p",
      { class: "muted" },
      "No benchmark report folder is set: start the service with ",
      h("code", {}, "dagsched serve --report-dir results/<suite>"),
      " to show its figures here.",
    );
  }
  return [
    report.title ? h("p", {}, h("b", {}, report.title)) : null,
    report.figures.length === 0 ? h("p", { class: "muted" }, "The report folder has no figures (PNG or SVG).") : null,
    h(
      "div",
      { class: "figures" },
      report.figures.map((f) =>
        h(
          "figure",
          {},
          h(
            "a",
            { href: f.url, target: "_blank", rel: "noopener" },
            h("img", { src: f.url, alt: f.name, loading: "lazy" }),
          ),
          h("figcaption", {}, f.name),
        ),
      ),
    ),
  ];
}

export async function render(root) {
  const shadow = h("section", { class: "card", id: "shadow-report" }, h("h2", {}, "Shadow report"));
  const figures = h("section", { class: "card", id: "bench-report" }, h("h2", {}, "Benchmark report"));
  root.append(h("h1", {}, "Shadow & report"), shadow, figures);
  const [s, r] = await Promise.allSettled([getJSON("/v1/shadow/report"), getJSON("/v1/report")]);
  shadow.append(h("div", {}, s.status === "fulfilled" ? shadowSection(s.value) : errorBox(s.reason.message)));
  figures.append(h("div", {}, r.status === "fulfilled" ? reportSection(r.value) : errorBox(r.reason.message)));
}
