"""Node filter rules (a safe expression language) and the runtime config: PUT /v1/config, SIGHUP re-read."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from dagsched.model.errors import InputError
from dagsched.service.app import create_app
from dagsched.service.config import RuntimeConfig, config_from_dict, config_from_stored, read_config
from dagsched.service.rules import compile_rule

from .conftest import AUTH, nodes, workflow

NODE = {"id": "n", "cpu": 8, "mem": 32, "gpu": 1, "cpu_free": 4, "mem_free": 8, "gpu_free": 1, "speed": 2.0,
        "price_per_hour": 1.0, "labels": {"zone": "eu"}}  # fmt: skip
TASK = {"id": "t", "runtime": 10, "cpu": 2, "mem": 4, "gpu": 1, "priority": 0, "critical": True, "labels": {}}


@pytest.mark.parametrize(
    ("expr", "value"),
    [
        ("node.gpu_free >= task.gpu", True),
        ("node.cpu_free - task.cpu >= 3", False),
        ('node.labels["zone"] in ("eu", "us") and task.critical', True),
        ('node.labels["missing"] == ""', True),
        ("task.runtime / node.speed < 5 or not task.critical", False),
        ("1 < node.speed <= 2", True),
        ("node.mem_free / (task.gpu - 1) > 0", False),  # division by zero: the pair fails, nothing crashes
    ],
)
def test_rules_evaluate(expr: str, value: bool) -> None:
    """Comparisons (chained), boolean ops, arithmetic, node/task attributes and labels evaluate as written."""
    assert compile_rule("r", expr)(NODE, TASK) is value


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ('__import__("os").system("true")', "function calls"),
        ("node.__class__", "dunder attribute '__class__'"),
        ("(lambda: 1)()", "function calls"),
        ("lambda: 1", "lambda"),
        ("node.gpu_free >=", "does not parse"),
        ("os.environ", "attribute 'environ' on something other than node or task"),
        ("node.secret", "unknown attribute node.secret"),
        ("2 ** 99999", "operator Pow"),
        ("[x for x in node.labels]", "ListComp expressions"),
        ("node.labels[task.id]", 'subscripts other than node.labels["key"]'),
        ("x", "unknown name 'x'"),
        ("node if task else node", "IfExp expressions"),
    ],
)
def test_rules_outside_the_grammar_are_refused_at_load_naming_the_rule(expr: str, message: str) -> None:
    """Loading a config with a rule outside the grammar raises InputError whose field is `rules.<name>`."""
    with pytest.raises(InputError) as err:
        config_from_dict({"rules": {"ok": "node.gpu_free >= task.gpu", "evil": expr}})
    assert err.value.field == "rules.evil"
    assert message in err.value.fault


def test_put_config_applies_without_restart(client: TestClient) -> None:
    """A rule keeping tasks off n2 (the fastest) moves HEFT's plan to n1 (speed 1.5): (10 + 7 + 3) / 1.5 = 13.33 s."""
    cfg = {"rules": {"not-n2": 'node.id != "n2"'}, "decision_deadline_ms": 900.0, "shadow": "heft"}
    r = client.put("/v1/config", json=cfg, headers=AUTH)
    assert r.status_code == 200 and r.json()["rules"] == cfg["rules"]
    live = client.get("/v1/config").json()
    assert live["shadow"] == "heft" and live["decision_deadline_ms"] == 900.0
    plan = client.post("/v1/schedule", json={"workflow": workflow(), "nodes": nodes(), "scheduler": "heft"}).json()
    assert {a["node"] for a in plan["assignments"]} == {"n1"}
    assert plan["makespan"] == pytest.approx(20 / 1.5)
    ev = plan["assignments"][0]["evidence"]
    assert {"node": "n2", "constraint": 'rule not-n2: node.id != "n2"'} in ev["rejected"]


def test_bad_config_is_rejected_and_the_old_one_stays(client: TestClient) -> None:
    """A bad rule, an unknown scheduler, a zero deadline, an unknown or retired key (temperature applied only to the
    per-decision policy): 422 naming the field; the live config is unchanged."""
    for body, field in (
        ({"rules": {"gpu": "open('/etc/passwd')"}}, "rules.gpu"),
        ({"shadow": "nonsense"}, "shadow"),
        ({"decision_deadline_ms": 0}, "decision_deadline_ms"),
        ({"temperature": 0.5}, "temperature"),
        ({"breaker": {"failures": 0}}, "breaker.failures"),
        ({"colour": "red"}, "colour"),
    ):
        r = client.put("/v1/config", json=body, headers=AUTH)
        assert r.status_code == 422, r.text
        assert r.json()["detail"].startswith(field), r.json()
    assert client.get("/v1/config").json()["rules"] == {}


def test_impossible_under_rules_is_422_naming_the_task(client: TestClient) -> None:
    """When the rules leave a task no node, the request is impossible: 422 naming the task and the rules."""
    client.put("/v1/config", json={"rules": {"none": "node.cpu > 100"}}, headers=AUTH)
    r = client.post("/v1/schedule", json={"workflow": workflow(), "nodes": nodes(), "scheduler": "heft"})
    assert r.status_code == 422
    assert r.json()["detail"].startswith("workflow.tasks[0]: task 'a' is rejected by every node")
    assert "rule none: node.cpu > 100" in r.json()["detail"]


def test_config_file_is_read_at_start_and_on_reload(make_settings, tmp_path) -> None:
    """The config file sets the start-up config; SIGHUP's re-read applies edits; a bad edit is ignored."""
    path = tmp_path / "config.yaml"
    path.write_text("decision_deadline_ms: 250\nrules:\n  gpu: node.gpu_free >= task.gpu\n")
    with TestClient(create_app(make_settings(config_file=path))) as c:
        state = c.app.state.service
        assert c.get("/v1/config").json()["decision_deadline_ms"] == 250
        path.write_text("decision_deadline_ms: 750\n")
        assert state.reload_config() is True
        assert c.get("/v1/config").json() == {**c.get("/v1/config").json(), "decision_deadline_ms": 750, "rules": {}}
        path.write_text("rules:\n  bad: node.__dict__\n")
        assert state.reload_config() is False
        assert c.get("/v1/config").json()["decision_deadline_ms"] == 750
        assert 'dagsched_config_reloads_total{outcome="rejected"} 1.0' in c.get("/v1/metrics").text


def test_a_stored_config_with_a_retired_key_still_loads(make_settings) -> None:
    """A config published by an older release with `temperature` (which applied only to the per-decision policy) is
    adopted at start-up and on sync without that key: its other settings serve, no sync error, the same settings
    published again with only the retired key changed are no change, and the stored document is left as it was."""
    from dagsched.service.store import Store

    settings = make_settings()
    stored = {**RuntimeConfig().model_dump(mode="json"), "temperature": 0.5, "shadow": "cpop",
              "rules": {"not-n2": 'node.id != "n2"'}}  # fmt: skip
    store = Store(settings.store_url)
    store.runtime.publish(config=stored)
    with TestClient(create_app(settings)) as c:
        state = c.app.state.service
        live = c.get("/v1/config").json()
        assert live["shadow"] == "cpop" and live["rules"] == stored["rules"] and "temperature" not in live
        assert state.sync_error is None
        plan = c.post("/v1/schedule", json={"workflow": workflow(), "nodes": nodes(), "scheduler": "heft"}).json()
        assert {a["node"] for a in plan["assignments"]} == {"n1"}  # the stored rule applies
        store.runtime.publish(config={**stored, "shadow": "peft", "temperature": 0.0})  # another old replica publishes
        assert state.sync() is True and state.sync_error is None
        assert c.get("/v1/config").json()["shadow"] == "peft"
        store.runtime.publish(
            config={**stored, "shadow": "peft", "temperature": 0.3}
        )  # the same settings but a retired key
        assert state.sync() is False  # no change to apply
    serving = store.runtime.serving_state()
    assert serving is not None and serving["config"]["temperature"] == 0.3  # nothing stored was rewritten
    store.close()
    assert config_from_stored({"temperature": 1.0, "shadow": "heft"}).shadow == "heft"
    with pytest.raises(InputError) as err:  # only the retired keys are dropped: an unknown one is still refused
        config_from_stored({"temperature": 1.0, "colour": "red"})
    assert err.value.field == "colour"


def test_a_config_file_with_a_retired_key_still_starts_the_service(make_settings, tmp_path, caplog) -> None:
    """An operator's config file from an older release (`temperature: 0` beside real settings) starts the service
    with its other settings, and the log names the setting it dropped; an unknown key still stops the start."""
    path = tmp_path / "config.yaml"
    path.write_text("temperature: 0\ndecision_deadline_ms: 900\nshadow: cpop\n")
    with (
        caplog.at_level("WARNING", logger="dagsched.service"),
        TestClient(create_app(make_settings(config_file=path))) as c,
    ):
        live = c.get("/v1/config").json()
        assert live["decision_deadline_ms"] == 900 and live["shadow"] == "cpop" and "temperature" not in live
    assert any("dropped the retired setting temperature" in r.getMessage() for r in caplog.records)
    path.write_text("temperature: 0\ncolour: red\n")
    with pytest.raises(InputError) as err:
        read_config(path)
    assert err.value.field == "colour" and str(path) in err.value.fault


def test_skew_monitor_switches_to_round_robin(client: TestClient) -> None:
    """Utilisation 0.75, 0, 0 (std 0.354 > 0.3): the next 4 placements go round-robin among nodes that can start."""
    client.put("/v1/config", json={"skew": {"threshold": 0.3, "decisions": 4}}, headers=AUTH)
    ns = nodes()
    ns[0]["free"] = {"cpu": 1, "mem": 16}
    plan = client.post("/v1/schedule", json={"workflow": workflow(), "nodes": ns, "scheduler": "heft"}).json()
    assert plan["scheduler"] == "round_robin" and "load skew 0.354" in plan["notes"][0]
    # a -> n0; then b -> n1 (next in the cycle); c's 1 GB input is only on n0 now, so c -> n0; d -> next after n0
    assert [(a["task"], a["node"]) for a in plan["assignments"]] == [("a", "n0"), ("b", "n1"), ("c", "n0"), ("d", "n1")]
    assert "dagsched_skew_round_robin_decisions_total 4.0" in client.get("/v1/metrics").text
    plan = client.post("/v1/schedule", json={"workflow": workflow(), "nodes": nodes(), "scheduler": "heft"}).json()
    assert plan["scheduler"] == "heft"
