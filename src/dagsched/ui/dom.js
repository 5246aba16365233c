// Small DOM and formatting helpers shared by the pages.

/**
 * h("a", {href: "#/", class: "x", dataset: {task: "a"}, onclick: fn}, "text", child, ...):
 * an element with attributes, event handlers (on*), and children (strings become text, null is skipped).
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "dataset") Object.assign(el.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else if (key in el && typeof value !== "string") el[key] = value;
    else el.setAttribute(key, value === true ? "" : value);
  }
  append(el, children);
  return el;
}

const SVG = "http://www.w3.org/2000/svg";

/** svg("rect", {x: 0, width: 10}, child, ...): an SVG element (attributes set as given, null skipped). */
export function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== null && v !== undefined) el.setAttribute(k, v);
  for (const c of children)
    if (c !== null && c !== undefined) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
}

/** Replace an element's children. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** A table from column specs [{label, value: row => node|string, class?}] and rows. */
export function table(columns, rows, { empty = "nothing yet", rowAttrs } = {}) {
  const head = h(
    "thead",
    {},
    h(
      "tr",
      {},
      columns.map((c) => h("th", { class: c.class }, c.label)),
    ),
  );
  const body = h(
    "tbody",
    {},
    rows.length === 0
      ? h("tr", {}, h("td", { colspan: columns.length, class: "muted" }, empty))
      : rows.map((row) =>
          h(
            "tr",
            rowAttrs ? rowAttrs(row) : {},
            columns.map((c) => h("td", { class: c.class }, c.value(row))),
          ),
        ),
  );
  return h("table", { class: "table" }, head, body);
}

/** A labelled figure for the overview cards. */
export function stat(label, metric, value, sub = null) {
  return h(
    "div",
    { class: "stat" },
    h("div", { class: "stat-label" }, label),
    h("div", { class: "stat-value", dataset: { metric } }, value),
    sub === null ? null : h("div", { class: "stat-sub", dataset: { metric: `${metric}-sub` } }, sub),
  );
}

export const errorBox = (message) => h("p", { class: "error", role: "alert" }, message);
export const warnBox = (message) => h("p", { class: "warn" }, message);
export const loading = () => h("p", { class: "muted" }, "loading…");

const missing = "–";

/** A number with `digits` decimals (the same formatting everywhere: makespans, costs, terms). */
export function num(x, digits = 2) {
  return typeof x === "number" && Number.isFinite(x) ? x.toFixed(digits) : missing;
}

export const seconds = (x) => (typeof x === "number" ? `${num(x)} s` : missing);
export const ms = (x) => (typeof x === "number" ? `${num(x, x < 10 ? 2 : 1)} ms` : missing);
export const money = (x) => (typeof x === "number" ? `$${num(x, x < 1 ? 4 : 2)}` : missing);
export const percent = (x) => (typeof x === "number" ? `${num(100 * x, 1)} %` : missing);

/** An epoch time in seconds as local "YYYY-MM-DD hh:mm:ss". */
export function when(epochS) {
  if (typeof epochS !== "number") return missing;
  const d = new Date(epochS * 1000);
  const pad = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

export function duration(s) {
  if (typeof s !== "number") return missing;
  if (s < 120) return `${Math.round(s)} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}

export const shortId = (id) => (id ? id.slice(0, 8) : missing);

/** Colours for nodes (categorical, colour-blind friendly Tableau 10, then repeated). */
const PALETTE = [
  "#4e79a7",
  "#f28e2b",
  "#59a14f",
  "#e15759",
  "#76b7b2",
  "#edc948",
  "#b07aa1",
  "#ff9da7",
  "#9c755f",
  "#bab0ac",
];
export const categorical = (i) => PALETTE[i % PALETTE.length];

/** A diverging colour for a value in [-1, 1]: blue (negative) through white to red (positive). */
export function diverging(t) {
  const x = Math.max(-1, Math.min(1, t || 0));
  const [r, g, b] = x >= 0 ? [225, 87, 89] : [78, 121, 167];
  const k = Math.abs(x);
  const mix = (c) => Math.round(255 + (c - 255) * k);
  return `rgb(${mix(r)}, ${mix(g)}, ${mix(b)})`;
}

/** Current hash route parameters (the part after "?") as an object. */
export function hashParams() {
  const i = location.hash.indexOf("?");
  return i < 0 ? {} : Object.fromEntries(new URLSearchParams(location.hash.slice(i + 1)));
}

/** Write filters into the hash without a navigation (history.replaceState fires no hashchange). */
export function setHashParams(route, params) {
  const qs = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== "" && v !== null && v !== undefined));
  const hash = qs.toString() ? `#/${route}?${qs}` : `#/${route}`;
  if (location.hash !== hash) history.replaceState(null, "", hash);
}
