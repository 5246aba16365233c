"""The dashboard in a real browser (Debian's Chromium through Playwright) against a real service (uvicorn on a
loopback port, a temporary SQLite store, the tiny test policy): every page draws the API's numbers, and no page
logs an error. DAGSCHED_SCREENSHOTS=1 also saves each page to docs/img/ui-<page>.png (1280x800)."""

from __future__ import annotations

import json
import os
import re
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from playwright.sync_api import Browser, Page, expect, sync_playwright
from tests.service.conftest import save_tiny_policy

from dagsched.service.app import create_app
from dagsched.service.settings import Settings

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
TOKEN = "ui-test-token"
SCREENSHOTS = os.environ.get("DAGSCHED_SCREENSHOTS") == "1"
REPORT_DIR = REPO / "docs" / "results" / "standard-hetero-16"  # a benchmark report with figures, committed

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="apt-get install chromium (deploy/ci-tools.sh)")


def readme_etl_request() -> dict[str, Any]:
    """The body of the README's `curl $URL/v1/schedule` example (the ETL workflow on nodes n1 and n2)."""
    text = (REPO / "README.md").read_text()
    match = re.search(r"\$URL/v1/schedule -H 'content-type: application/json' -d '(\{.*?\})'[ \n]", text, re.DOTALL)
    assert match, "README.md: the curl example of /v1/schedule is gone"
    return json.loads(match.group(1))


def ml_pipeline() -> dict[str, Any]:
    """Ten tasks: ingest, two cleanings, a join, features, three models, evaluation, a report."""
    tasks: list[dict[str, Any]] = [
        {"id": "ingest", "runtime": 30},
        {"id": "clean_events", "runtime": 45, "dependencies": [{"task": "ingest", "data": 2e9}]},
        {"id": "clean_users", "runtime": 20, "dependencies": ["ingest"]},
        {"id": "join", "runtime": 25, "dependencies": ["clean_events", "clean_users"]},
        {"id": "features", "runtime": 60, "resources": {"cpu": 2}, "dependencies": [{"task": "join", "data": 1e9}]},
        {"id": "train_xgb", "runtime": 120, "resources": {"cpu": 4}, "dependencies": ["features"]},
        {"id": "train_nn", "runtime": 150, "resources": {"cpu": 4}, "dependencies": ["features"]},
        {"id": "train_lr", "runtime": 40, "dependencies": ["features"]},
        {"id": "evaluate", "runtime": 15, "dependencies": ["train_xgb", "train_nn", "train_lr"]},
        {"id": "report", "runtime": 5, "dependencies": ["evaluate"]},
    ]
    return {"name": "ml-nightly", "tasks": tasks}


def three_nodes() -> list[dict[str, Any]]:
    return [{"id": f"n{i}", "cpu": 4, "mem": 16, "speed": 1 + 0.5 * i, "price_per_hour": 0.5 + i} for i in range(3)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The service on a free loopback port, in a thread; the API token is set (mutating routes need it)."""
    tmp = tmp_path_factory.mktemp("ui")
    settings = Settings(
        store_url=f"sqlite:///{tmp / 'store.sqlite'}",
        model_path=save_tiny_policy(tmp / "tiny", version="tiny-v1"),
        model_dir=tmp / "models",
        api_token=TOKEN,
        environment="ui-test",
        report_dir=REPORT_DIR,
    )
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(settings), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the service did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def api(base_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base_url, timeout=30) as client:
        yield client


@pytest.fixture(scope="module")
def plans(api: httpx.Client) -> dict[str, dict[str, Any]]:
    """Plans to look at: HEFT shadows every plan; the README's ETL and a 10-task pipeline, by HEFT and drl; the ETL
    by four more heuristics."""
    config = api.put("/v1/config", json={"shadow": "heft"}, headers={"Authorization": f"Bearer {TOKEN}"})
    assert config.status_code == 200, config.text
    etl = readme_etl_request()
    out = {}
    for scheduler in ("heft", "drl"):
        r = api.post("/v1/schedule", json={**etl, "scheduler": scheduler})
        assert r.status_code == 200, r.text
        out[f"etl-{scheduler}"] = r.json()
        r = api.post("/v1/schedule", json={"workflow": ml_pipeline(), "nodes": three_nodes(), "scheduler": scheduler})
        assert r.status_code == 200, r.text
        out[f"ml-{scheduler}"] = r.json()
    for scheduler in ("cpop", "peft", "min_min", "round_robin"):  # a fuller list and decisions log
        r = api.post("/v1/schedule", json={**etl, "scheduler": scheduler})
        assert r.status_code == 200, r.text
    assert out["ml-drl"]["scheduler"] == "drl" and not out["ml-drl"]["fallback"]
    return out


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        yield b
        b.close()


class Console:
    """What a page logged as an error (console.error, failed loads) and its uncaught exceptions."""

    def __init__(self, page: Page) -> None:
        self.errors: list[str] = []
        page.on("console", lambda m: self.errors.append(f"console: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))


@pytest.fixture
def page(browser: Browser, base_url: str, plans: dict) -> Iterator[tuple[Page, Console]]:
    context = browser.new_context(base_url=base_url, viewport={"width": 1280, "height": 800})
    p = context.new_page()
    p.set_default_timeout(10_000)
    console = Console(p)
    yield p, console
    context.close()


def shoot(page: Page, name: str) -> None:
    """Save the page as docs/img/ui-<name>.png when DAGSCHED_SCREENSHOTS=1 (CI only renders it)."""
    if SCREENSHOTS:
        page.wait_for_timeout(300)  # let the layout and fonts settle
        page.screenshot(path=str(REPO / "docs" / "img" / f"ui-{name}.png"))


def test_overview_shows_the_live_numbers(page, api: httpx.Client) -> None:
    """The overview shows /v1/stats: as many plans as this process made (8 or more), the model, store and breaker."""
    p, console = page
    p.goto("/ui/")
    total = p.locator("[data-metric=plans-total]")
    expect(total).to_have_text(re.compile(r"^\d+$"))
    stats = api.get("/v1/stats").json()
    assert int(total.inner_text()) == stats["plans"]["total"] >= 8
    expect(p.locator("[data-metric=model]")).to_have_text("tiny-v1")
    expect(p.locator("[data-metric=store]")).to_have_text("ok")
    expect(p.locator("[data-metric=breaker]")).to_have_text("closed")
    expect(p.locator("[data-metric=ready]")).to_have_text("ready")
    expect(p.locator("[data-metric=decision-p50]")).to_have_text(re.compile(r"^\d+\.\d+ ms$"))
    expect(p.locator("[data-metric=grpc]")).to_have_text("off")  # this test's server serves HTTP only
    assert p.locator(".page a[href^='#/plans/']").count() == 5  # the latest plans
    shoot(p, "overview")
    assert console.errors == []


def test_plan_page_draws_every_assignment_and_task(page, plans: dict) -> None:
    """A drl plan of 10 tasks: 10 Gantt bars (one per assignment, on its node), 10 Cytoscape nodes and 12 edges;
    a click shows the task's evidence and policy; colouring by attribution colours every task."""
    p, console = page
    plan = plans["ml-drl"]
    p.goto(f"/ui/#/plans/{plan['plan_id']}")
    bars = p.locator(".gantt-bar")
    expect(bars).to_have_count(len(plan["assignments"]))
    drawn = {bars.nth(i).get_attribute("data-task"): bars.nth(i).get_attribute("data-node") for i in range(10)}
    assert drawn == {a["task"]: a["node"] for a in plan["assignments"]}
    expect(p.locator("#dag")).to_have_attribute("data-dag-nodes", "10")
    assert p.evaluate("window.dagschedCy.nodes().length") == 10
    assert p.evaluate("window.dagschedCy.edges().length") == 12
    expect(p.locator("[data-metric=makespan]")).to_have_text(f"{plan['makespan']:.2f} s")

    p.locator(".gantt-bar[data-task=train_nn]").click()
    detail = p.locator("#detail")
    expect(detail.locator("h3")).to_have_text("train_nn")
    expect(detail).to_contain_text("Learned policy")
    expect(detail).to_contain_text("among the tasks ready when it was placed")  # drl's choice among a ready set
    expect(detail.locator("th", has_text="ready task")).to_have_count(1)
    expect(detail).to_contain_text("Attributions")  # of the task's score
    node = next(a["node"] for a in plan["assignments"] if a["task"] == "train_nn")
    expect(detail.locator("p b").first).to_have_text(node)

    by_node = p.evaluate("window.dagschedCy.nodes().map(n => n.data('color'))")
    p.locator("input[value=attribution]").check()
    expect(p.locator(".legend")).to_contain_text("raises")
    by_attribution = p.evaluate("window.dagschedCy.nodes().map(n => n.data('color'))")
    assert all(c.startswith("rgb(") for c in by_attribution) and by_attribution != by_node
    shoot(p, "plan")
    p.evaluate("() => document.querySelector('#dag').closest('section').scrollIntoView()")
    shoot(p, "plan-dag")
    assert console.errors == []


def test_plan_page_taps_a_dag_node_of_a_heft_plan(page, plans: dict) -> None:
    """A HEFT plan: a tap on a DAG node shows its evidence (the chosen node first among EFTs); no attributions."""
    p, console = page
    plan = plans["etl-heft"]
    p.goto(f"/ui/#/plans/{plan['plan_id']}")
    expect(p.locator(".gantt-bar")).to_have_count(3)
    assert p.evaluate("window.dagschedCy.nodes().length") == 3
    p.evaluate("() => { window.dagschedCy.getElementById('transform').emit('tap') }")  # (return nothing)
    expect(p.locator("#detail h3")).to_have_text("transform")
    expect(p.locator("#detail")).to_contain_text("chosen")
    p.locator("input[value=attribution]").check()
    expect(p.locator(".legend")).to_contain_text("no attributions")
    assert console.errors == []


def test_plans_list_searches(page, api: httpx.Client) -> None:
    """The list shows every plan; a search for 'nightly' leaves the two ml-nightly plans, as the API does."""
    p, console = page
    p.goto("/ui/#/plans")
    rows = p.locator("tbody tr[data-plan-id]")
    expect(rows).to_have_count(api.get("/v1/plans").json()["total"])
    shoot(p, "plans")
    p.fill("input[name=q]", "nightly")
    expected = [x["plan_id"] for x in api.get("/v1/plans", params={"q": "nightly"}).json()["plans"]]
    assert len(expected) == 2
    expect(rows).to_have_count(2)
    assert [rows.nth(i).get_attribute("data-plan-id") for i in range(2)] == expected
    assert "q=nightly" in p.url
    rows.first.locator("a.plan-link").click()
    expect(p.locator(".gantt-bar")).to_have_count(10)
    assert console.errors == []


def test_sandbox_runs_heft_and_drl_on_the_readme_example(page, api: httpx.Client) -> None:
    """The README's ETL example in the sandbox, HEFT and drl: each makespan and cost as POST /v1/schedule gives for
    the same body, formatted as the page formats numbers; a Gantt bar per task for each."""
    p, console = page
    body = readme_etl_request()
    p.goto("/ui/#/sandbox")
    p.fill("#workflow", json.dumps(body["workflow"], indent=1))
    p.fill("#nodes", json.dumps(body["nodes"], indent=1))
    expect(p.locator("#workflow-kind")).to_have_text("native: etl, 3 tasks")
    checked = p.eval_on_selector_all("input[name=scheduler]:checked", "els => els.map(e => e.value)")
    assert checked == ["drl", "heft"]
    p.click("#run")
    for scheduler in ("heft", "drl"):
        card = p.locator(f".result[data-scheduler={scheduler}]")
        want = api.post("/v1/schedule", json={**body, "scheduler": scheduler}).json()
        expect(card.locator(".makespan")).to_have_text(f"{want['makespan']:.2f} s")
        assert float(card.locator(".makespan").get_attribute("data-value")) == pytest.approx(want["makespan"])
        assert float(card.locator(".cost").get_attribute("data-value")) == pytest.approx(want["cost"])
        expect(card.locator(".gantt-bar")).to_have_count(3)
    expect(p.locator("tr.result-row")).to_have_count(2)
    p.evaluate("() => document.querySelector('fieldset.picks').scrollIntoView()")
    shoot(p, "sandbox")
    assert console.errors == []


def test_sandbox_reads_yaml_and_a_preset(page, api: httpx.Client) -> None:
    """The default YAML workflow on the hetero-16 preset with CPOP: the makespan the API gives for the same body."""
    p, console = page
    p.goto("/ui/#/sandbox")
    p.select_option("#preset", "hetero-16")
    nodes = json.loads(p.input_value("#nodes"))
    assert len(nodes) == 16
    p.uncheck("input[name=scheduler][value=drl]")
    p.uncheck("input[name=scheduler][value=heft]")
    p.check("input[name=scheduler][value=cpop]")
    p.click("#run")
    want = api.post(
        "/v1/schedule", json={"workflow": readme_etl_request()["workflow"], "nodes": nodes, "scheduler": "cpop"}
    )
    expect(p.locator(".result[data-scheduler=cpop] .makespan")).to_have_text(f"{want.json()['makespan']:.2f} s")
    assert console.errors == []


def test_sandbox_plans_an_uploaded_wfformat_file(page, tmp_path: Path) -> None:
    """A WfFormat 1.5 file, uploaded: read as WfFormat (2 tasks); HEFT on one node of speed 1 plans it in 2 + 4 s."""
    p, console = page
    wf = {
        "name": "wfc",
        "schemaVersion": "1.5",
        "workflow": {
            "specification": {
                "tasks": [
                    {"name": "x", "id": "x", "children": ["y"], "parents": []},
                    {"name": "y", "id": "y", "children": [], "parents": ["x"]},
                ],
                "files": [],
            },
            "execution": {
                "makespanInSeconds": 3,
                "executedAt": "20240101T000000+0000",
                "tasks": [{"id": "x", "runtimeInSeconds": 2}, {"id": "y", "runtimeInSeconds": 4}],
            },
        },
    }
    path = tmp_path / "wfc.json"
    path.write_text(json.dumps(wf))
    p.goto("/ui/#/sandbox")
    p.set_input_files("#workflow-file", str(path))
    expect(p.locator("#workflow-kind")).to_have_text("WfFormat 1.5: wfc, 2 tasks")
    p.fill("#nodes", json.dumps([{"id": "solo", "cpu": 4}]))
    p.uncheck("input[name=scheduler][value=drl]")
    p.click("#run")
    expect(p.locator(".result[data-scheduler=heft] .makespan")).to_have_text("6.00 s")
    expect(p.locator(".result[data-scheduler=heft] .gantt-bar")).to_have_count(2)
    assert console.errors == []


def test_sandbox_shows_the_api_error_naming_the_field(page, api: httpx.Client) -> None:
    """A negative runtime: the page shows the API's `detail` verbatim, naming workflow.tasks[1].runtime."""
    p, console = page
    body = readme_etl_request()
    body["workflow"]["tasks"][1]["runtime"] = -5
    detail = api.post("/v1/schedule", json={**body, "scheduler": "heft"}).json()["detail"]
    assert detail.startswith("workflow.tasks[1].runtime")
    p.goto("/ui/#/sandbox")
    p.fill("#workflow", json.dumps(body["workflow"]))
    p.fill("#nodes", json.dumps(body["nodes"]))
    p.click("#run")
    expect(p.locator("#sandbox-results .error")).to_have_text(detail)
    p.fill("#workflow", "tasks: [")
    p.click("#run")
    expect(p.locator("#sandbox-results .error")).to_contain_text("workflow: not JSON or YAML")
    # the browser reports the refused requests themselves; nothing else may be logged
    assert [e for e in console.errors if "status of 422" not in e] == []


def test_decisions_page_filters(page, api: httpx.Client, plans: dict) -> None:
    """The decisions log filtered by scheduler (drl: as many rows as the API gives, all drl) and then by one plan
    (its 10 tasks)."""
    p, console = page
    p.goto("/ui/#/decisions")
    rows = p.locator("tr.decision")
    expect(rows).to_have_count(api.get("/v1/decisions").json()["count"])
    p.select_option("select[name=scheduler]", "drl")
    drl = api.get("/v1/decisions", params={"scheduler": "drl"}).json()
    assert drl["count"] >= 13  # the README's ETL (3) and the pipeline (10), and what the sandbox planned
    expect(rows).to_have_count(drl["count"])
    assert set(p.eval_on_selector_all("tr.decision", "rs => rs.map(r => r.dataset.scheduler)")) == {"drl"}
    shoot(p, "decisions")
    plan_id = plans["ml-drl"]["plan_id"]
    p.fill("input[name=plan_id]", plan_id)
    p.press("input[name=plan_id]", "Enter")
    expect(rows).to_have_count(10)
    assert set(p.eval_on_selector_all("tr.decision", "rs => rs.map(r => r.dataset.planId)")) == {plan_id}
    assert f"plan_id={plan_id}" in p.url
    p.reload()  # the filters live in the address
    expect(rows).to_have_count(10)
    assert p.input_value("select[name=scheduler]") == "drl"
    assert console.errors == []


def test_shadow_and_report_page(page, api: httpx.Client) -> None:
    """The shadow report's drl-vs-heft pair (HEFT shadows the drl plans) and the report's figures, loaded."""
    p, console = page
    report = api.get("/v1/shadow/report").json()
    p.goto("/ui/#/shadow")
    pair = p.locator("tr.shadow-pair[data-live=drl][data-shadow=heft]")
    expect(pair).to_have_count(1)
    want = next(x for x in report["pairs"] if x["live"] == "drl")
    assert want["plans"] >= 2  # the drl plans of `plans`, and any the sandbox made
    expect(pair.locator("td").nth(2)).to_have_text(str(want["plans"]))
    figures = api.get("/v1/report").json()["figures"]
    images = p.locator("#bench-report img")
    expect(images).to_have_count(len(figures))
    assert len(figures) >= 1
    for i in range(len(figures)):
        images.nth(i).scroll_into_view_if_needed()
        p.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=images.nth(i).element_handle())
    p.evaluate("window.scrollTo(0, 0)")
    shoot(p, "shadow")
    assert console.errors == []


@pytest.fixture(scope="module")
def executed(api: httpx.Client, plans: dict) -> int:
    """Eight ML pipelines planned, run on the simulated drifting cluster (n3 30 % slower, training 1.5 x) and reported
    through /v1/events: the Reality page's data. Calibration acts from the sixth on (re-estimated at every plan)."""
    from dagsched.traffic.simulated_cluster import DRIFT, drift_nodes, ml_pipeline, plan_and_run

    config = api.get("/v1/config").json()
    config["calibration"]["refresh_s"] = 0
    assert api.put("/v1/config", json=config, headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    for i in range(8):
        plan_and_run(api, {"workflow": ml_pipeline(i), "nodes": drift_nodes(), "scheduler": "heft"}, DRIFT, TOKEN, i)
    return 8


def test_reality_page_draws_the_gap(page, api: httpx.Client, executed: int) -> None:
    """The gap panel: the runs and ratios of /v1/gap, one box plot per node and per task name with the API's medians,
    one scatter point per complete run, the calibration factors; then a canary, shown with its stage and first step."""
    p, console = page
    gap = api.get("/v1/gap", params={"since": "1d"}).json()
    assert gap["runs"]["complete"] == executed and gap["calibration"]["active"]
    p.goto("/ui/#/reality?since=1d")
    expect(p.locator("[data-metric=runs]")).to_have_text(str(gap["runs"]["read"]))
    expect(p.locator("[data-metric=observations]")).to_have_text(str(gap["observations"]))
    expect(p.locator("[data-metric=ratio-median]")).to_have_text(f"{gap['ratio']['median']:.3f} ×")
    for key, rows in (("node", gap["by_node"]), ("task name", gap["by_task"])):
        plot = p.locator(f"svg.boxplot[aria-label$='per {key}'] g.box-row")
        expect(plot).to_have_count(len(rows))
        for i, row in enumerate(rows):
            assert plot.nth(i).get_attribute("data-key") == row["key"]
            assert float(plot.nth(i).get_attribute("data-median") or "nan") == pytest.approx(row["median"])
    n3 = next(r for r in gap["by_node"] if r["key"] == "n3")
    assert n3["p10"] == pytest.approx(1 / 0.7)  # everything on n3 ran at least 1/0.7 x its declared time
    expect(p.locator("svg.scatter circle.point")).to_have_count(len(gap["makespan"]["points"]))
    expect(p.locator("svg.scatter circle.point.calibrated")).to_have_count(
        sum(1 for x in gap["makespan"]["points"] if x["calibrated"])
    )
    cal = gap["calibration"]
    expect(p.locator("tr.factor")).to_have_count(len(cal["node"]) + len(cal["task_name"]))
    expect(p.locator("tr.factor[data-kind=node][data-key=n3] td").nth(2)).to_have_text(
        f"{next(r['factor'] for r in cal['node'] if r['node'] == 'n3'):.3f} ×"
    )
    expect(p.locator("[data-metric=canary]")).to_contain_text("No canary runs now")
    expect(p.locator("[data-metric=online-ft]")).to_contain_text("off")
    shoot(p, "reality")
    config = api.get("/v1/config").json()
    auth = {"Authorization": f"Bearer {TOKEN}"}
    r = api.put("/v1/config", json={**config, "canary": {"scheduler": "peft", "fraction": 0.1}}, headers=auth)
    assert r.status_code == 200, r.text
    try:
        p.goto("/ui/#/reality")
        expect(p.locator("[data-metric=canary]")).to_contain_text("peft plans 10.0 % of workflows")
        expect(p.locator("tr.canary-arm")).to_have_count(2)
        expect(p.locator("tr.canary-step[data-action=start]")).to_have_count(1)
    finally:
        assert api.post("/v1/canary/rollback", headers=auth).status_code == 200
    assert console.errors == []


def test_unknown_page_says_so(page) -> None:
    """A hash no page answers: 'Not found', no error."""
    p, console = page
    p.goto("/ui/#/nope")
    expect(p.locator("h1")).to_have_text("Not found")
    assert console.errors == []
