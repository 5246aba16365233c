"""A real run's events reach the service in an order it accepts: a Ray node lost mid-run is posted as `node_down`
to each plan that had work on it (a task running there, or a task planned there not finished yet; a workflow
submitted later gets it at its second 0), before the failures it caused, and a task placed again at the same
instant fails before it starts again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import sqlalchemy as sa
from fastapi.testclient import TestClient

from dagsched.live.recorder import ServiceRecorder
from dagsched.model import Cluster, Node, Problem, Task, Workflow, compile_problem
from dagsched.model.entities import Edge
from dagsched.service.app import create_app
from dagsched.service.settings import Settings

TOKEN = "live-token"


def _row(wf: str, task: str, node: str, start: float, end: float | None = None) -> dict[str, Any]:
    return {"workflow": wf, "task": task, "node": node, "start_s": start, "end_s": end}


def test_a_lost_node_is_posted_to_the_plans_that_had_work_on_it(tmp_path: Path) -> None:
    nodes = [Node(id="n0", cpu=2, mem=4), Node(id="n1", cpu=2, mem=4, speed=2.0)]
    flows = [
        Workflow(name="w0", tasks=[Task(id="a", runtime=10), Task(id="b", runtime=10)], edges=[Edge(src="a", dst="b")]),
        Workflow(name="early", tasks=[Task(id="x", runtime=5)]),
        Workflow(name="late", tasks=[Task(id="y", runtime=5)], submit_time=50.0),
    ]
    cp = compile_problem(Problem(workflows=flows, cluster=Cluster(nodes=nodes)))
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    settings = Settings(store_url=url, api_token=TOKEN, model_dir=tmp_path / "models", environment="test")
    with TestClient(create_app(settings)) as client:
        recorder = ServiceRecorder(str(client.base_url), TOKEN, cp, "heft", http=client)
        recorder.plan_all()
        # a one-task workflow goes on the faster node; "early" finishes there before it is lost
        assert recorder.planned["late"] == {"y": "n1"} and recorder.planned["early"] == {"x": "n1"}
        recorder([("started", _row("w0", "a", "n1", 0.0)), ("started", _row("early", "x", "n1", 0.0))])
        recorder([("done", _row("early", "x", "n1", 0.0, 2.5))])
        recorder(  # n1 lost at 8 s: a fails with it and starts again on n0 at once
            [
                ("started", _row("w0", "a", "n0", 8.0)),
                ("failed", _row("w0", "a", "n1", 0.0, 8.0)),
                ("node_down", {"node": "n1", "at_s": 8.0}),
            ]
        )
        recorder([("done", _row("w0", "a", "n0", 8.0, 18.0)), ("started", _row("w0", "b", "n0", 18.0))])
        recorder([("done", _row("w0", "b", "n0", 18.0, 28.0))])
        recorder([("started", _row("late", "y", "n0", 50.0)), ("done", _row("late", "y", "n0", 50.0, 60.0))])
        recorder.close()
    assert recorder.refused == []
    assert recorder.posted == 12  # 10 task events, 2 node_down
    engine = sa.create_engine(url)
    with engine.connect() as db:
        rows = db.execute(sa.text("select root_id, kind, task, node, at from events order by id")).all()
    engine.dispose()
    wf_of = {plan: wf for wf, plan in recorder.plan_ids.items()}
    down = [(wf_of[r[0]], r[3], r[4]) for r in rows if r[1] == "node_down"]
    assert down == [("w0", "n1", 8.0), ("late", "n1", 0.0)]  # not "early": nothing of it was left there
    w0 = [(r[1], r[2], r[3]) for r in rows if wf_of[r[0]] == "w0"]
    assert w0[:4] == [
        ("task_started", "a", "n1"),
        ("node_down", None, "n1"),
        ("task_failed", "a", "n1"),
        ("task_started", "a", "n0"),
    ]
