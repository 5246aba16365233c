"""`dagsched explain`: plan a workflow and write why, as JSON and PNGs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer


def explain_problem(
    cp: Any, scheduler: str, task: str | None, policy: Any = None, model_version: str | None = None
) -> dict[str, Any]:
    """Plan `cp` with `scheduler` (drl: with `policy`, the priority policy) and explain the plan; `task` None picks,
    for a drl plan, the choice the policy was least sure of (else the task on the critical path's end: the last to
    finish)."""
    from dagsched.explain.evidence import capacity_rejections, evidence
    from dagsched.explain.plan import explain_plan
    from dagsched.schedulers import make_scheduler
    from dagsched.schedulers.priority_sampling import PrioritySampling
    from dagsched.sim.run import simulate

    if scheduler == "drl" and policy is not None:
        sched: Any = PrioritySampling(policy=policy)
    else:
        sched = make_scheduler(scheduler)
    result = simulate(cp, sched, validate=True)
    if not result.valid:
        raise RuntimeError("invalid plan: " + "; ".join(result.violations[:3]))
    allowed, why = capacity_rejections(cp)
    ev = evidence(cp, result, allowed, why, "estimated finish time on the node in this plan's context, seconds")
    done = sorted((a for a in result.trace.attempts if a.outcome == "done"), key=lambda a: (a.start, a.task))
    assignments = [
        {
            "task": cp.task_ids[a.task],
            "node": cp.node_ids[a.node],
            "start": a.start,
            "finish": a.end,
            "evidence": ev[a.task],
        }
        for a in done
    ]
    if task is None:
        overview = explain_plan(cp, assignments, scheduler, policy=policy, model_version=model_version)
        certain = [(t["policy"]["probability"], t["task"]) for t in overview["tasks"] if t["policy"] is not None]
        task = min(certain)[1] if certain else max(assignments, key=lambda a: a["finish"])["task"]
    out = explain_plan(cp, assignments, scheduler, policy=policy, task=task, model_version=model_version)
    return {**out, "makespan": result.metrics.makespan, "cost": result.metrics.cost}


def attribution_lines(attributions: dict[str, Any], top: int = 3) -> list[str]:
    """The inputs that raised the attributed output most and those that lowered it most, one line each."""
    rows = attributions["by_feature"]
    ups = sorted((r for r in rows if r["value"] > 0), key=lambda r: -r["value"])[:top]
    downs = sorted((r for r in rows if r["value"] < 0), key=lambda r: r["value"])[:top]

    def fmt(rs: list[dict[str, Any]]) -> str:
        return ", ".join(f"{r['group']}.{r['feature']} {r['value']:+.3g}" for r in rs) or "none"

    return [
        f"attributed: {attributions['target']}; {attributions['output']:.4g} against "
        f"{attributions['baseline_output']:.4g} at the baseline ({attributions['baseline']})",
        f"raised by: {fmt(ups)}",
        f"lowered by: {fmt(downs)}",
    ]


def _load(workflow: Path, cluster: str) -> Any:
    """The compiled problem of one workflow file on a preset or a cluster file (classic files carry their own)."""
    from dagsched.generate.clusters import cluster_from_spec
    from dagsched.io import detect_format, read_document, read_problem
    from dagsched.model.compiled import compile_problem
    from dagsched.model.errors import InputError

    if not workflow.exists():
        raise InputError("--workflow", f"file not found: {workflow}")
    if detect_format(read_document(workflow)) == "classic":
        return compile_problem(read_problem([workflow]))
    return compile_problem(read_problem([workflow], cluster_from_spec(cluster)))


def register(app: Any) -> None:
    """Add `dagsched explain` to a Typer app."""

    @app.command("explain")
    def explain_cmd(
        workflow: Annotated[
            Path, typer.Option("--workflow", "-w", help="workflow file (native YAML/JSON or WfFormat)")
        ],
        cluster: Annotated[str, typer.Option("--cluster", "-c", help="cluster preset or cluster file")] = "hetero-16",
        scheduler: Annotated[str, typer.Option("--scheduler", "-s", help="scheduler to explain")] = "drl",
        task: Annotated[
            str | None, typer.Option("--task", "-t", help="task to attribute (default: drl's least certain decision)")
        ] = None,
        model: Annotated[
            Path | None, typer.Option("--model", help="policy path stem (default: the shipped one)")
        ] = None,
        out: Annotated[Path, typer.Option("--out", "-o", help="folder for explain.json and the PNGs")] = Path(
            "explain"
        ),
    ) -> None:
        """Plan WORKFLOW on CLUSTER and explain it: every task's evidence and, for drl, each task's probability
        among the tasks ready when it was placed, and for one task the Integrated Gradients attributions of its
        score. Writes explain.json, attributions.png (drl) and dag.png (coloured by attribution, or by node)."""
        import torch

        from dagsched.console import console
        from dagsched.console import fail as _fail
        from dagsched.explain.plots import write_attribution_bars, write_dag
        from dagsched.model.errors import InputError
        from dagsched.schedulers import registered_names

        torch.set_num_threads(1)
        policy, version = None, None
        try:
            cp = _load(workflow, cluster)
            if scheduler not in registered_names():
                raise InputError(
                    "--scheduler", f"unknown scheduler '{scheduler}'; known: {', '.join(registered_names())}"
                )
            if scheduler == "drl":
                from dagsched.policy import PRIORITY_MODEL, shipped_model_path
                from dagsched.policy.files import PolicyFileError
                from dagsched.policy.priority_net import load_cached_priority_policy

                try:
                    policy = load_cached_priority_policy(model)
                except PolicyFileError as err:  # PolicyNotFound included
                    raise InputError("--model", str(err)) from None
                version = (model or shipped_model_path(PRIORITY_MODEL)).name
            if task is not None and task not in cp.task_ids:
                raise InputError("--task", f"no task '{task}' in {workflow}")
            if cp.n_workflows != 1:
                raise InputError("--workflow", "explain one workflow at a time")
        except InputError as err:
            raise _fail(err) from None
        result = explain_problem(cp, scheduler, task, policy, version)
        out.mkdir(parents=True, exist_ok=True)
        (out / "explain.json").write_text(json.dumps(result, indent=1))
        detail = result["task"]
        node_of = {t["task"]: t["node"] for t in result["tasks"]}
        name = cp.wf_names[0]
        if detail["attributions"] is not None:
            at = detail["attributions"]
            why = f"what raised {detail['task']}'s score (placed on {detail['node']})"
            write_attribution_bars(at, out / "attributions.png", f"{name}: {why}")
            values = {r["task"]: r["value"] for r in at["by_task"]}
            write_dag(
                cp,
                out / "dag.png",
                f"{name}: attribution per task ({detail['task']} ringed)",
                values,
                node_of,
                detail["task"],
            )
        else:
            write_dag(cp, out / "dag.png", f"{name} by {scheduler}: colour = node", None, node_of, detail["task"])
        pol = detail["policy"]
        line = f"{scheduler}: makespan {result['makespan']:.6g} s; {detail['task']} -> {detail['node']}"
        if pol is not None:
            line += f" with probability {pol['probability']:.3f}"
        console.print(line)
        if detail["attributions"] is not None:
            for text in attribution_lines(detail["attributions"]):
                console.print(text)
        console.print(f"wrote {out / 'explain.json'} and the PNGs in {out}")
