"""The Grafana dashboard and the Prometheus rules query series the service really exports, and promtool accepts them.

promtool comes from Debian's `prometheus` package (deploy/ci-tools.sh installs it in CI); without it the promtool
checks skip, and the registry and dashboard checks still run.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.metrics import MetricWrapperBase

from dagsched.service.metrics import ServiceMetrics

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "deploy" / "grafana" / "dagsched.json"
PROMETHEUS = ROOT / "deploy" / "prometheus"
ROWS = ["Throughput", "Latency", "Fallbacks and breaker", "Model and store", "Learning from reality"]
# labels Prometheus adds at scrape (job, instance) or that histogram buckets carry (le)
SCRAPE_LABELS = {"job", "instance", "le"}
# Grafana's variables, replaced by values that keep the expression valid PromQL
GRAFANA_VARS = {"$__rate_interval": "1m", "$__range": "1h", "$instance": ".*"}


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("promtool")
    if exe is None:
        pytest.skip("promtool not found: apt-get install prometheus (deploy/ci-tools.sh does it in CI)")
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=60, cwd=ROOT)


def _dashboard() -> dict[str, Any]:
    dash: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return dash


def _panels(dash: dict[str, Any]) -> list[dict[str, Any]]:
    """Every panel but the rows (the rows are open, so their panels sit at the top level)."""
    return [p for p in dash["panels"] if p["type"] != "row"]


def _dashboard_exprs(dash: dict[str, Any]) -> list[str]:
    exprs = [t["expr"] for p in _panels(dash) for t in p["targets"]]
    exprs += [v["definition"] for v in dash["templating"]["list"] if v["type"] == "query"]
    return exprs


def _alert_exprs() -> list[str]:
    groups = yaml.safe_load((PROMETHEUS / "alerts.yaml").read_text())["groups"]
    return [rule["expr"] for g in groups for rule in g["rules"]]


def _exported() -> dict[str, set[str]]:
    """Sample name -> label names, from a real ServiceMetrics registry with one child of every labelled metric.

    A labelled metric exports nothing until a child exists, so each gets one with placeholder values
    (`_labelnames` is private to prometheus_client but has no public twin).
    """
    m = ServiceMetrics()
    for metric in vars(m).values():
        if isinstance(metric, MetricWrapperBase) and metric._labelnames and not metric._labelvalues:  # not a child
            metric.labels(*["x"] * len(metric._labelnames))
    exported: dict[str, set[str]] = {}
    for family in m.registry.collect():
        for sample in family.samples:
            exported.setdefault(sample.name, set()).update(sample.labels)
    return exported


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")
_MATCHERS = re.compile(r"\{([^}]*)\}")
_IDENT = re.compile(r"(?<![\w.:$])([a-zA-Z_:][\w:]*)(\s*\()?")
_KEYWORDS = {"and", "or", "unless", "bool", "offset", "inf", "nan", "group_left", "group_right"}


def _parse(expr: str) -> tuple[set[str], set[str]]:
    """(metric names, label names) an expression uses. A small scanner, not a PromQL parser: enough for ours."""
    if expr.startswith("label_values("):  # a Grafana variable query: label_values(metric, label)
        metric, label = (s.strip() for s in expr[len("label_values(") : -1].split(","))
        return {metric}, {label}
    for var, value in GRAFANA_VARS.items():
        expr = expr.replace(var, value)
    expr = _STRING.sub('""', expr)
    labels = {name.strip() for group in _GROUPING.findall(expr) for name in group.split(",") if name.strip()}
    labels |= {m.split("=")[0].split("!")[0].strip() for body in _MATCHERS.findall(expr) for m in body.split(",")}
    expr = _GROUPING.sub(" ", _MATCHERS.sub(" ", re.sub(r"\[[^\]]*\]", " ", expr)))
    metrics = {name for name, call in _IDENT.findall(expr) if not call and name not in _KEYWORDS}
    return metrics, labels - {""}


def test_parse_finds_metrics_and_labels() -> None:
    """The scanner the name checks rest on: selectors and grouping labels, not functions or label values."""
    metrics, labels = _parse(
        'histogram_quantile(0.99, sum by (le, scheduler) (rate(dagsched_plan_latency_seconds_bucket{route!~"a|b", '
        'instance=~"$instance"}[5m]))) / on (job) group_left sum(up offset 1m) > 0.5 and bool 1e3'
    )
    assert metrics == {"dagsched_plan_latency_seconds_bucket", "up"}
    assert labels == {"le", "scheduler", "route", "instance", "job"}


@pytest.mark.parametrize("source", ["dashboard", "alerts"])
def test_every_queried_series_is_exported(source: str) -> None:
    """Each metric and label a query names exists in the service's registry, so a rename breaks this test."""
    exprs = _dashboard_exprs(_dashboard()) if source == "dashboard" else _alert_exprs()
    exported = _exported()
    assert len(exprs) >= (20 if source == "dashboard" else 6)
    used_metrics: set[str] = set()
    for expr in exprs:
        metrics, labels = _parse(expr)
        assert metrics, f"no metric in {expr!r}"
        assert metrics <= exported.keys(), f"{sorted(metrics - exported.keys())} not exported; used in {expr!r}"
        known = SCRAPE_LABELS.union(*(exported[m] for m in metrics))
        assert labels <= known, f"labels {sorted(labels - known)} not on {sorted(metrics)}; used in {expr!r}"
        used_metrics |= metrics
    if source == "dashboard":  # every family the service exports has a panel (the _created samples aside)
        families = {re.sub(r"_(total|bucket|count|sum|created)$", "", name) for name in exported}
        shown = {re.sub(r"_(total|bucket|count|sum)$", "", name) for name in used_metrics}
        assert families - shown == set(), "exported but on no panel: add one to deploy/grafana/dagsched.json"


def test_dashboard_queries_are_valid_promql(tmp_path: Path) -> None:
    """promtool parses every dashboard query, written as recording rules with Grafana's variables filled in."""
    exprs = [e for e in _dashboard_exprs(_dashboard()) if not e.startswith("label_values(")]
    for var, value in GRAFANA_VARS.items():
        exprs = [e.replace(var, value) for e in exprs]
    rules = [{"record": f"dashboard:query_{i}", "expr": e} for i, e in enumerate(exprs)]
    path = tmp_path / "dashboard_rules.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    res = _promtool("check", "rules", str(path))
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"SUCCESS: {len(rules)} rules found" in res.stdout


def test_dashboard_has_its_four_rows_in_order() -> None:
    """Throughput, Latency, Fallbacks and breaker, Model and store, Learning from reality: each open, each with panels
    under it."""
    panels = _dashboard()["panels"]
    rows = [i for i, p in enumerate(panels) if p["type"] == "row"]
    assert [panels[i]["title"] for i in rows] == ROWS
    assert rows[0] == 0 and all(not panels[i]["collapsed"] for i in rows)
    assert all(b - a > 1 for a, b in zip(rows, [*rows[1:], len(panels)], strict=True))


def test_dashboard_panels_are_well_formed() -> None:
    """Unique ids; every panel queries the DS_PROMETHEUS data source with at least one non-empty expression."""
    dash = _dashboard()
    assert dash["uid"] == "dagsched-service" and dash["schemaVersion"] >= 39
    assert [i["name"] for i in dash["__inputs"]] == ["DS_PROMETHEUS"]
    assert "DS_PROMETHEUS" in {v["name"] for v in dash["templating"]["list"] if v["type"] == "datasource"}
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    for p in _panels(dash):
        assert p["datasource"] == {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}, p["title"]
        assert p["targets"], p["title"]
        refs = [t["refId"] for t in p["targets"]]
        assert len(refs) == len(set(refs)), p["title"]
        assert all(t["expr"].strip() and t["datasource"] == p["datasource"] for t in p["targets"]), p["title"]


def test_dashboard_grid_has_no_overlaps() -> None:
    """No two panels (rows included) share a grid cell, and all fit the 24-column width."""
    taken: dict[tuple[int, int], str] = {}
    for p in _dashboard()["panels"]:
        g = p["gridPos"]
        assert g["x"] >= 0 and g["w"] > 0 and g["h"] > 0 and g["x"] + g["w"] <= 24, p["title"]
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                assert (x, y) not in taken, f"{p['title']!r} overlaps {taken[(x, y)]!r} at {(x, y)}"
                taken[(x, y)] = p["title"]


def test_alerts_pass_promtool_check() -> None:
    """`promtool check rules` accepts alerts.yaml, and it holds the alerts docs/monitoring.md describes."""
    res = _promtool("check", "rules", "deploy/prometheus/alerts.yaml")
    assert res.returncode == 0, res.stdout + res.stderr
    groups = yaml.safe_load((PROMETHEUS / "alerts.yaml").read_text())["groups"]
    rules = {r["alert"]: r for g in groups for r in g["rules"]}
    assert set(rules) == {
        "DagschedHighErrorRate",
        "DagschedHighP99Latency",
        "DagschedHighDecisionP99Latency",
        "DagschedBreakerOpen",
        "DagschedHighFallbackRate",
        "DagschedStoreUnreachable",
    }
    for name, rule in rules.items():
        assert rule["labels"]["severity"] in {"warning", "critical"}, name
        assert {"summary", "description"} <= rule["annotations"].keys() and rule["for"], name


def test_alert_unit_tests_pass() -> None:
    """`promtool test rules`: each alert fires on its bad series, after its `for:`, and not on the good ones."""
    res = _promtool("test", "rules", "deploy/prometheus/alerts.test.yaml")
    assert res.returncode == 0, res.stdout + res.stderr
    tested = set(re.findall(r"alertname: (\w+)", (PROMETHEUS / "alerts.test.yaml").read_text()))
    assert tested == {
        r["alert"] for g in yaml.safe_load((PROMETHEUS / "alerts.yaml").read_text())["groups"] for r in g["rules"]
    }


def test_prometheus_config_passes_promtool_check() -> None:
    """`promtool check config` accepts prometheus.yml and, through it, loads alerts.yaml from /v1/metrics' scrape."""
    res = _promtool("check", "config", "deploy/prometheus/prometheus.yml")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "SUCCESS: 6 rules found" in res.stdout
    config = yaml.safe_load((PROMETHEUS / "prometheus.yml").read_text())
    job = next(j for j in config["scrape_configs"] if j["job_name"] == "dagsched")
    assert job["metrics_path"] == "/v1/metrics"
    assert job["static_configs"][0]["targets"] == ["dagsched:8080"]


def test_adapter_rule_queries_the_exported_histogram(tmp_path: Path) -> None:
    """The Prometheus adapter's rule for the autoscaler reads a series the service exports, and its query, with the
    adapter's template filled in as it fills it, is valid PromQL."""
    rules = yaml.safe_load((PROMETHEUS / "adapter.yaml").read_text())["rules"]
    exported = _exported()
    exprs = []
    for rule in rules:
        series = rule["seriesQuery"].split("{")[0]
        assert series in exported and "le" in exported[series]
        assert rule["resources"]["overrides"] == {"namespace": {"resource": "namespace"}, "pod": {"resource": "pod"}}
        query = rule["metricsQuery"].replace("<<.Series>>", series)
        query = query.replace("<<.LabelMatchers>>", 'namespace="dagsched-system",pod=~"dagsched-.*"')
        exprs.append(query.replace("<<.GroupBy>>", "pod"))
    path = tmp_path / "adapter_rules.yaml"
    records = [{"record": f"adapter:query_{i}", "expr": e} for i, e in enumerate(exprs)]
    path.write_text(yaml.safe_dump({"groups": [{"name": "adapter", "rules": records}]}))
    res = _promtool("check", "rules", str(path))
    assert res.returncode == 0, res.stdout + res.stderr
