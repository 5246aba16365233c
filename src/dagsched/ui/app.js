// The dashboard's hash router: #/ (overview), #/plans, #/plans/<id>, #/decisions, #/sandbox, #/shadow, #/reality.
// Each page module exports render(root, {id, params}) and may return a cleanup function (timers).

import { errorBox, fill, h, hashParams } from "./dom.js";
import * as overview from "./pages/overview.js";
import * as plans from "./pages/plans.js";
import * as plan from "./pages/plan.js";
import * as decisions from "./pages/decisions.js";
import * as sandbox from "./pages/sandbox.js";
import * as shadow from "./pages/shadow.js";
import * as reality from "./pages/reality.js";

const routes = [
  { pattern: /^$/, page: overview, nav: "overview", title: "Overview" },
  { pattern: /^plans$/, page: plans, nav: "plans", title: "Plans" },
  { pattern: /^plans\/([^/]+)$/, page: plan, nav: "plans", title: "Plan" },
  { pattern: /^decisions$/, page: decisions, nav: "decisions", title: "Decisions" },
  { pattern: /^sandbox$/, page: sandbox, nav: "sandbox", title: "Sandbox" },
  { pattern: /^shadow$/, page: shadow, nav: "shadow", title: "Shadow & report" },
  { pattern: /^reality$/, page: reality, nav: "reality", title: "Reality" },
];

const view = document.getElementById("view");
let cleanup = null;
let shown = 0; // counts page changes, so a page that finishes loading after the next one started is cleaned up

function currentPath() {
  const hash = location.hash.replace(/^#\/?/, "");
  const q = hash.indexOf("?");
  return decodeURIComponent(q < 0 ? hash : hash.slice(0, q)).replace(/\/$/, "");
}

async function show() {
  const path = currentPath();
  const generation = ++shown;
  if (cleanup) cleanup();
  cleanup = null;
  const route = routes.find((r) => r.pattern.test(path));
  for (const a of document.querySelectorAll("#nav a"))
    a.classList.toggle("active", route && a.dataset.page === route.nav);
  const root = h("div", { class: "page", dataset: { page: route ? route.nav : "none" } });
  fill(view, root);
  if (!route) {
    document.title = "dagsched";
    fill(
      root,
      h("h1", {}, "Not found"),
      h("p", {}, "No page at ", h("code", {}, `#/${path}`), ". ", h("a", { href: "#/" }, "Overview")),
    );
    return;
  }
  document.title = `${route.title} · dagsched`;
  const [, id] = path.match(route.pattern);
  try {
    const result = await route.page.render(root, { id, params: hashParams() });
    if (typeof result === "function") {
      if (generation === shown) cleanup = result;
      else result(); // the user moved on while the page was loading
    }
  } catch (err) {
    root.append(errorBox(err.message));
  }
}

window.addEventListener("hashchange", show);
show();
