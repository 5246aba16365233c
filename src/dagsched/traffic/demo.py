"""A demo client: submits sample workflows to a running service so plans, decisions and metrics fill up.

python -m dagsched.traffic.demo --url http://127.0.0.1:8080 --count 20
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import httpx


def sample_nodes(seed: int) -> list[dict[str, Any]]:
    """The hetero-16 preset as request nodes, with a seeded share of each node's cpu in use."""
    import numpy as np

    from dagsched.generate import cluster_preset
    from dagsched.io.native import node_to_request

    rng = np.random.default_rng(seed)
    out = []
    for n in cluster_preset("hetero-16").nodes:
        used = float(rng.uniform(0, 0.5))
        free = {"cpu": round(n.cpu * (1 - used), 2), "mem": round(n.mem * (1 - used), 2), "gpu": n.gpu}
        out.append({**node_to_request(n), "free": free})
    return out


def sample_workflow(i: int, n_tasks: int | None = None) -> dict[str, Any]:
    """A native workflow dict: family i mod 4, 10..40 tasks, seed i."""
    from dagsched.generate import FAMILIES, generate_workflow
    from dagsched.io.native import workflow_to_native

    family = FAMILIES[i % len(FAMILIES)]
    wf = generate_workflow(family, n_tasks or 10 + (7 * i) % 31, seed=i, name=f"demo-{family}-{i}")
    return workflow_to_native(wf)


def extender_args(nodes: list[dict[str, Any]], workflow: str, task: str) -> dict[str, Any]:
    """ExtenderArgs as kube-scheduler sends them, for one pod of `workflow`/`task`."""
    items = [
        {
            "metadata": {"name": n["id"], "labels": {"dagsched.io/speed": str(n["speed"])}},
            "status": {"allocatable": {"cpu": str(n["free"]["cpu"]), "memory": f"{n['free']['mem']}Gi"}},
        }
        for n in nodes
    ]
    pod = {
        "metadata": {
            "name": f"{workflow}-{task}",
            "labels": {"dagsched.io/workflow": workflow, "dagsched.io/task": task},
        },
        "spec": {"containers": [{"name": "main", "resources": {"requests": {"cpu": "1", "memory": "512Mi"}}}]},
    }
    return {"pod": pod, "nodes": {"items": items}}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8080")
    parser.add_argument("--count", type=int, default=20, help="workflows to submit")
    parser.add_argument(
        "--wait", type=float, default=300.0, help="seconds to wait for the service to come up (a first start compiles)"
    )
    parser.add_argument(
        "--executed", type=int, default=12, help="ML pipelines also run on a simulated cluster, their events reported"
    )
    args = parser.parse_args(argv)
    with httpx.Client(base_url=args.url, timeout=60) as client:
        deadline = time.monotonic() + args.wait
        print(f"waiting for the service at {args.url} (the first start loads the model and compiles its kernels)")
        while True:
            try:
                client.get("/healthz").raise_for_status()
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise SystemExit(f"no service at {args.url} after {args.wait:g} s") from None
                time.sleep(0.5)
        for i in range(args.count):
            nodes = sample_nodes(i)
            body: dict[str, Any] = {"workflow": sample_workflow(i), "nodes": nodes}
            body["scheduler"] = "heft" if i % 2 else "sampling"
            r = client.post("/v1/schedule", json=body)
            if r.status_code != 200:
                print(f"{i:3d} {r.status_code} {r.json().get('detail')}")
                continue
            plan = r.json()
            note = f" (fallback: {plan['fallback_reason']})" if plan["fallback"] else ""
            print(
                f"{i:3d} {plan['workflow']:<28} {plan['scheduler']:<8} makespan {plan['makespan']:9.1f} s  "
                f"cost ${plan['cost']:.4f}  {len(plan['assignments'])} tasks{note}"
            )
            first = plan["assignments"][0]
            client.post("/v1/k8s/prioritize", json=extender_args(nodes, plan["workflow"], first["task"]))
        executed(client, args.executed)
        print(
            f"plans stored; see {args.url}/v1/decisions, {args.url}/v1/gap, {args.url}/v1/metrics and {args.url}/docs"
        )
    print(f"dashboard: {args.url.rstrip('/')}/ui/")


def executed(client: httpx.Client, count: int) -> None:
    """Plan and run `count` ML pipelines on a drifting simulated cluster (`simulated_cluster.DRIFT`), reporting
    their events."""
    import os

    from dagsched.traffic.simulated_cluster import DRIFT, drift_nodes, ml_pipeline, plan_and_run

    token = os.environ.get("DAGSCHED_API_TOKEN")
    if not token or count <= 0:
        if count > 0:
            print("no events reported (set DAGSCHED_API_TOKEN to report executed runs)")
        return
    for i in range(count):
        body = {"workflow": ml_pipeline(i), "nodes": drift_nodes(), "scheduler": "heft"}
        plan, achieved = plan_and_run(client, body, DRIFT, token, seed=i)
        calibrated = " (calibrated)" if (plan.get("calibration") or {}).get("active") else ""
        print(f"  ran {plan['workflow']:<18} planned {plan['makespan']:7.1f} s, achieved {achieved:7.1f} s{calibrated}")


def cli(argv: list[str] | None = None) -> None:
    """`main` as `make run` runs it: stopped by Ctrl-C, or by the service stopping first, without a traceback."""
    try:
        main(argv)
    except KeyboardInterrupt:  # Ctrl-C under `make run`: stop quietly, the service is stopped beside it
        raise SystemExit(130) from None
    except httpx.TransportError as err:  # Ctrl-C reached the service first: say so
        raise SystemExit(f"the service stopped answering: {err}") from None


if __name__ == "__main__":
    cli()
