"""Workflow streams: a mix of tenants' workflows arriving over time on one shared cluster.

A stream is what a cloud platform sees: ETL batches, ML pipelines, analytics jobs and scientific
workflows from several tenants, each with a priority class and a deadline, arriving by a Poisson,
bursty (MMPP-2) or diurnal process (`dagsched.generate.arrivals`). The arrival rate is not given
directly but derived from a **target offered load**, so that `load=0.85` means the same on every
cluster:

    offered load of resource r = rate x E[work_r] / capacity_r
    work_r of a workflow       = sum over its tasks of request_r x runtime   (runtime at speed 1.0)
    capacity_r of a cluster    = sum over its nodes of capacity_r x speed

and the binding resource (the largest offered load) is set to the target. A task holds its request
for runtime / speed on the node it runs on, so the work a cluster delivers per second, and hence its
speed-weighted utilisation (`sim.metrics.stream_metrics`), does not depend on where tasks are
placed: in a stable steady state it equals the offered load. E[work_r] is the mean over the
stream's own workflows, so the stream offers exactly the target load over its length.

Per workflow: a tenant (the source it came from), a priority class, and a deadline of
submission + slack x its critical path on the fastest node that can host each task (the class sets
the slack). Task priorities are raised by 10 x the class rank, so that priority-aware schedulers
(kube's PrioritySort, `kube_default`) serve classes in order and the workflow's own priorities
order its tasks within a class.

Everything is drawn from one seed: the same arguments and seed give an equal stream.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from dagsched.generate.arrivals import ARRIVALS, arrival_times
from dagsched.model.compiled import compile_problem
from dagsched.model.entities import RESOURCES, Cluster, Problem, Workflow
from dagsched.model.errors import InputError
from dagsched.model.graph import critical_path_fastest_s

SourceKind = Literal["synthetic", "recipe", "trace"]

PRIORITY_STEP = 10
"""Task priorities of a workflow are raised by this times its class rank (the workflow's own priorities are 0-3)."""

RECIPE_POOL = 4
"""Recipe instances are drawn from this many seeds per (recipe, size): WfChef takes 0.1-0.3 s per instance."""

TRACE_MAX_TASKS = 350
"""Real traces in the default mix: those up to this many tasks (the 900- to 2,100-task ones would dominate
a stream's work and need far longer streams to reach a steady state)."""


@dataclass(frozen=True)
class PriorityClass:
    """A service class: how often it is drawn, its deadline slack and its rank (higher is served first)."""

    name: str
    share: float
    slack: float
    """deadline = submission + slack x critical path on the fastest nodes"""
    rank: int


PRIORITY_CLASSES = (
    PriorityClass("high", 0.2, 2.0, 2),
    PriorityClass("standard", 0.5, 4.0, 1),
    PriorityClass("batch", 0.3, 8.0, 0),
)


@dataclass(frozen=True)
class Source:
    """What one tenant submits: synthetic families at some sizes, WfCommons recipes, or real traces."""

    tenant: str
    kind: SourceKind
    names: tuple[str, ...]
    """families, recipe names, or trace files relative to the wfinstances folder (empty: every eligible trace)"""
    sizes: tuple[int, ...] = ()
    """task counts drawn uniformly (synthetic and recipes; traces have their own)"""
    weight: float = 1.0


MIXES: dict[str, tuple[Source, ...]] = {
    "default": (
        Source("etl", "synthetic", ("etl_star",), (10, 20, 50, 100), 0.30),
        Source("analytics", "synthetic", ("random",), (10, 20, 50, 100, 200), 0.20),
        Source("ml", "synthetic", ("ml_pipeline",), (10, 20, 50), 0.15),
        Source("science", "synthetic", ("layered",), (20, 50, 100, 200), 0.15),
        Source(
            "science",
            "recipe",
            ("montage", "epigenomics", "1000genome", "blast", "bwa", "cycles", "seismology", "soykb", "srasearch"),
            (110, 200),
            0.10,
        ),
        Source("science", "trace", (), (), 0.10),
    ),
    "synthetic": (
        Source("etl", "synthetic", ("etl_star",), (10, 20, 50, 100), 0.35),
        Source("analytics", "synthetic", ("random",), (10, 20, 50, 100), 0.25),
        Source("ml", "synthetic", ("ml_pipeline",), (10, 20, 50), 0.08),
        Source("science", "synthetic", ("layered",), (20, 50, 100), 0.25),
    ),
    "stages": (Source("analytics", "synthetic", ("stages",), (20, 50, 100, 200), 1.0),),
}
"""Named mixes. `default` draws from every workload kind; on hetero-16 and large-100 its GPU work binds (offered
GPU load 0.85 puts the CPUs at about 0.65-0.7). `synthetic` needs no data files and no WfChef; its ML share is
smaller, so that CPU and GPU loads come out about equal. `stages` is stage-structured analytics jobs alone
(Spark / TPC-H shapes, `dagsched.generate.stages`: 2-20 stages of 1-200 short tasks, barriers between them);
their CPUs bind."""


@dataclass(frozen=True)
class Stream:
    """Workflows with submit times, tenants, classes and deadlines, on the cluster whose load they target."""

    workflows: list[Workflow]
    cluster: Cluster
    arrival: str
    load: float
    """the target offered load of the binding resource"""
    rate_per_s: float
    offered: dict[str, float] = field(default_factory=dict)
    """offered load per resource (cpu, mem, gpu): rate x mean work / speed-weighted capacity"""

    def problem(self, name: str = "stream") -> Problem:
        return Problem(name=name, workflows=self.workflows, cluster=self.cluster)


def resource_work(wf: Workflow) -> np.ndarray:
    """(cpu, mem, gpu) x seconds the workflow asks for at speed 1.0: sum of request x runtime."""
    req = np.array([[t.cpu, t.mem, t.gpu] for t in wf.tasks], dtype=np.float64)
    runtime = np.array([t.runtime for t in wf.tasks], dtype=np.float64)
    return np.asarray(req.T @ runtime, dtype=np.float64)


def speed_capacity(cluster: Cluster) -> np.ndarray:
    """(cpu, mem, gpu) the cluster delivers per second at speed 1.0: sum of capacity x speed."""
    return np.array([sum(getattr(n, r) * n.speed for n in cluster.nodes) for r in RESOURCES], dtype=np.float64)


def offered_load(workflows: Sequence[Workflow], cluster: Cluster, rate_per_s: float) -> dict[str, float]:
    """Offered load per resource of `workflows` arriving at `rate_per_s` (mean work per workflow / capacity)."""
    work = np.mean([resource_work(wf) for wf in workflows], axis=0)
    cap = speed_capacity(cluster)
    out = {}
    for r, w, c in zip(RESOURCES, work, cap, strict=True):
        out[r] = float(rate_per_s * w / c) if c > 0 else (0.0 if w == 0 else math.inf)
    return out


def rate_for_load(workflows: Sequence[Workflow], cluster: Cluster, load: float) -> float:
    """Arrival rate (per second) at which the binding resource's offered load is `load`."""
    if not (math.isfinite(load) and load > 0):
        raise InputError("load", f"must be a positive offered load (e.g. 0.85), got {load!r}")
    per_unit_rate = offered_load(workflows, cluster, 1.0)
    binding = max(per_unit_rate.values())
    if not math.isfinite(binding):
        need = [r for r, v in per_unit_rate.items() if not math.isfinite(v)]
        raise InputError("mix", f"the workflows need {', '.join(need)} and cluster '{cluster.name}' has none")
    if binding <= 0:
        raise InputError("mix", "the workflows ask for no work at all")
    return load / binding


def _fits_cluster(wf: Workflow, cluster: Cluster) -> bool:
    """Every task fits some node of the cluster (ml_pipeline's GPU tasks do not fit a GPU-less cluster)."""
    caps = np.array([[n.cpu, n.mem, n.gpu] for n in cluster.nodes])
    req = np.array([[t.cpu, t.mem, t.gpu] for t in wf.tasks])
    return bool(np.all(np.any(np.all(req[:, None, :] <= caps[None, :, :] + 1e-9, axis=2), axis=1)))


@functools.cache
def _trace_workflow(path: str) -> Workflow:
    from dagsched.io import read_workflow

    return read_workflow(path)


@functools.cache
def _recipe_workflow(recipe: str, n_tasks: int, seed: int) -> Workflow:
    from dagsched.generate.recipes import recipe_workflow

    return recipe_workflow(recipe, n_tasks, seed)


def _eligible_traces(names: tuple[str, ...]) -> list[str]:
    from dagsched.generate.traces import real_traces, wfinstances_root

    root = wfinstances_root()
    if names:
        return [str(root / n) for n in names]
    return [str(root / e.file) for e in real_traces(root) if e.n_tasks <= TRACE_MAX_TASKS]


def _draw(source: Source, rng: np.random.Generator, traces: list[str], index: int) -> Workflow:
    """One workflow from `source`, named by its position in the stream."""
    from dagsched.generate.topologies import generate_workflow

    if source.kind == "trace":
        path = traces[int(rng.integers(len(traces)))]
        wf = _trace_workflow(path)
        label = Path(path).name.split(".")[0]
    else:
        name = source.names[int(rng.integers(len(source.names)))]
        size = int(source.sizes[int(rng.integers(len(source.sizes)))])
        if source.kind == "synthetic":
            wf = generate_workflow(name, size, int(rng.integers(2**32)))
        else:
            wf = _recipe_workflow(name, size, int(rng.integers(RECIPE_POOL)))
        label = f"{name}-{size}"
    return wf.model_copy(update={"name": f"w{index:05d}-{label}"})


def generate_stream(
    cluster: Cluster,
    n_workflows: int,
    load: float,
    arrival: str = "poisson",
    seed: int = 0,
    *,
    mix: str | Sequence[Source] = "default",
    classes: Sequence[PriorityClass] = PRIORITY_CLASSES,
    **arrival_params: float,
) -> Stream:
    """`n_workflows` workflows from `mix` arriving by `arrival` at the rate that offers `load` to `cluster`.

    Sources whose workflows cannot run on the cluster at all (GPU training on a cluster without GPUs)
    are left out of the mix, their weight spread over the others. `arrival_params` go to
    `arrival_times` (burst_ratio, burst_share, burst_arrivals, amplitude, period_s).
    """
    if isinstance(n_workflows, bool) or not isinstance(n_workflows, int) or n_workflows < 1:
        raise InputError("workflows", f"a stream needs at least 1 workflow, got {n_workflows!r}")
    if arrival not in ARRIVALS:
        raise InputError("arrival", f"unknown arrival process '{arrival}'; choose one of {', '.join(ARRIVALS)}")
    sources = _mix(mix)
    shares = np.array([c.share for c in classes], dtype=np.float64)
    if not classes or np.any(shares < 0) or shares.sum() <= 0:
        raise InputError("classes", "needs at least one priority class with a positive share")
    mix_seq, class_seq, arrival_seq = np.random.SeedSequence(seed).spawn(3)
    mix_rng, class_rng = np.random.default_rng(mix_seq), np.random.default_rng(class_seq)
    traces = _eligible_traces(next((s.names for s in sources if s.kind == "trace"), ()))
    sources = [s for s in sources if s.kind != "trace" or traces]
    usable = [s for s in sources if _source_fits(s, cluster, traces)]
    if not usable:
        raise InputError("mix", f"no source of the mix fits cluster '{cluster.name}'")
    weights = np.array([s.weight for s in usable], dtype=np.float64)
    weights /= weights.sum()

    drawn: list[tuple[Workflow, Source]] = []
    for i in range(n_workflows):
        source = usable[int(mix_rng.choice(len(usable), p=weights))]
        drawn.append((_draw(source, mix_rng, traces, i), source))
    rate = rate_for_load([wf for wf, _ in drawn], cluster, load)
    submit_s = arrival_times(arrival, n_workflows, rate, np.random.default_rng(arrival_seq), **arrival_params)
    class_of = class_rng.choice(len(classes), size=n_workflows, p=shares / shares.sum())

    workflows = []
    for (wf, source), t_s, k in zip(drawn, submit_s, class_of, strict=True):
        klass = classes[int(k)]
        path_s = float(critical_path_fastest_s(compile_problem(alone_problem(wf, cluster)))[0])
        tasks = [t.model_copy(update={"priority": t.priority + PRIORITY_STEP * klass.rank}) for t in wf.tasks]
        labels = {**wf.labels, "tenant": source.tenant, "class": klass.name, "source": source.kind}
        workflows.append(
            wf.model_copy(
                update={
                    "tasks": tasks,
                    "submit_time": float(t_s),
                    "deadline": klass.slack * path_s,
                    "labels": labels,
                }
            )
        )
    return Stream(workflows, cluster, arrival, float(load), rate, offered_load(workflows, cluster, rate))


def alone_problem(wf: Workflow, cluster: Cluster) -> Problem:
    """A one-workflow problem without re-validating what is valid already (the critical path needs it compiled)."""
    return Problem.model_construct(name=wf.name, workflows=[wf], cluster=cluster)


def _mix(mix: str | Sequence[Source]) -> list[Source]:
    if isinstance(mix, str):
        if mix not in MIXES:
            raise InputError("mix", f"unknown mix '{mix}'; choose one of {', '.join(MIXES)}")
        return list(MIXES[mix])
    sources = list(mix)
    if not sources or any(s.weight <= 0 for s in sources):
        raise InputError("mix", "needs at least one source, each with a positive weight")
    return sources


def _source_fits(source: Source, cluster: Cluster, traces: list[str]) -> bool:
    """Whether a source's workflows run on the cluster: judged on its smallest instance of each name."""
    from dagsched.generate.topologies import generate_workflow

    if source.kind == "trace":
        return all(_fits_cluster(_trace_workflow(p), cluster) for p in traces)
    if source.kind == "synthetic":
        return all(_fits_cluster(generate_workflow(name, max(source.sizes), 0), cluster) for name in source.names)
    return True  # recipes ask for one core and no memory
