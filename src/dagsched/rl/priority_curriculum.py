"""The workloads the priority policy trains on: synthetic families and WfCommons recipes on generated clusters.

Each draw picks a size from the current curriculum stage, a CCR log-uniform in the range, a node-speed
heterogeneity (fastest over slowest node) log-uniform in the range, a cluster of 2 to 100 nodes, a training
family or recipe, and a mode (classic or cloud). Classic draws make half the machines unrelated (each
task's cost per node off its speed by up to +-40 %). Families, recipes and literature shapes not listed
here are never drawn: they are held out for judging (`HELD_OUT`, recorded in the model's metadata).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dagsched.generate import generate_workflow
from dagsched.generate.clusters import GBIT_S
from dagsched.model import Cluster, Node, Problem, Workflow, compile_problem
from dagsched.model.compiled import CompiledProblem

TRAIN_FAMILIES = ("layered", "random", "ml_pipeline")
TRAIN_RECIPES = ("blast", "bwa", "cycles", "seismology", "soykb")
HELD_OUT = (
    "etl_star",
    "montage",
    "epigenomics",
    "1000genome",
    "srasearch",
    "nextflow",
    "all real WfCommons traces",
    "the literature's shapes and cost model (generate.literature)",
)
BANDWIDTH = 10 * GBIT_S


@dataclass(frozen=True)
class Draw:
    """One training problem and how it was drawn."""

    cp: CompiledProblem
    classic: bool
    source: str
    n_tasks: int
    n_nodes: int
    ccr: float
    heterogeneity: float


def training_cluster(n_nodes: int, heterogeneity: float, rng: np.random.Generator, gpu: bool) -> Cluster:
    """`n_nodes` nodes of speeds log-uniform between 1 and `heterogeneity` (the extremes included), 16 to 32 cpu,
    and one 4-GPU node in four (at least one when `gpu`)."""
    speeds = np.exp(rng.uniform(0.0, math.log(heterogeneity), n_nodes))
    if n_nodes >= 2:
        speeds[:2] = [1.0, heterogeneity]
        rng.shuffle(speeds)
    cpu = rng.choice([16.0, 32.0], n_nodes)
    gpus = (rng.random(n_nodes) < 0.25).astype(int) * 4
    if gpu and not gpus.any():
        gpus[int(rng.integers(n_nodes))] = 4
    nodes = [
        Node(
            id=f"n{i:03d}",
            cpu=float(cpu[i]),
            mem=4.0 * float(cpu[i]) + 64.0,
            gpu=int(gpus[i]),
            speed=float(np.round(speeds[i], 3)),
            bandwidth=BANDWIDTH,
        )
        for i in range(n_nodes)
    ]
    return Cluster(name=f"train-{n_nodes}", nodes=nodes)


def with_ccr(wf: Workflow, ccr: float, bandwidth: float) -> Workflow:
    """`wf` with every edge's data scaled so that mean(data / bandwidth) / mean(runtime) == ccr."""
    if not wf.edges:
        return wf
    mean_rt = float(np.mean([t.runtime for t in wf.tasks])) or 1.0
    mean_data = float(np.mean([e.data for e in wf.edges]))
    if mean_data <= 0:
        edges = [e.model_copy(update={"data": ccr * mean_rt * bandwidth}) for e in wf.edges]
    else:
        factor = ccr * mean_rt * bandwidth / mean_data
        edges = [e.model_copy(update={"data": float(e.data * factor)}) for e in wf.edges]
    return wf.model_copy(update={"edges": edges})


def unrelated(wf: Workflow, cluster: Cluster, spread: float, rng: np.random.Generator) -> Workflow:
    """`wf` with per-node costs: runtime / speed off by a factor uniform in [1 - spread, 1 + spread]."""
    speed = np.array([n.speed for n in cluster.nodes])
    ids = [n.id for n in cluster.nodes]
    tasks = []
    for t in wf.tasks:
        cost = t.runtime / speed * rng.uniform(1 - spread, 1 + spread, len(ids))
        tasks.append(t.model_copy(update={"costs": dict(zip(ids, np.round(cost, 4).tolist(), strict=True))}))
    return wf.model_copy(update={"tasks": tasks})


def draw_problem(
    rng: np.random.Generator,
    size: tuple[int, int],
    ccr: tuple[float, float],
    heterogeneity: tuple[float, float],
    nodes: tuple[int, int],
    recipe_share: float,
    classic_share: float,
) -> Draw:
    """One training problem (see the module's docstring)."""
    lo, hi = size
    n = int(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))
    c = float(math.exp(rng.uniform(math.log(ccr[0]), math.log(ccr[1]))))
    h = float(math.exp(rng.uniform(math.log(heterogeneity[0]), math.log(heterogeneity[1]))))
    m = int(round(math.exp(rng.uniform(math.log(nodes[0]), math.log(nodes[1])))))
    classic = bool(rng.random() < classic_share)
    seed = int(rng.integers(2**31 - 1))
    wf: Workflow | None = None
    source = ""
    if rng.random() < recipe_share:
        from dagsched.generate.recipes import min_tasks, recipe_workflow
        from dagsched.model.errors import InputError

        recipe = str(rng.choice(TRAIN_RECIPES))
        try:
            wf = with_ccr(recipe_workflow(recipe, max(n, min_tasks(recipe)), seed), c, BANDWIDTH)
            source = recipe
        except InputError:
            wf = None
    if wf is None:
        family = str(rng.choice(TRAIN_FAMILIES))
        wf = generate_workflow(family, n, seed, ccr=c, bandwidth=BANDWIDTH)
        source = family
    cluster = training_cluster(m, h, rng, gpu=source == "ml_pipeline")
    if classic and rng.random() < 0.5:
        wf = unrelated(wf, cluster, 0.4, rng)
    cp = compile_problem(Problem(name=f"train-{source}-{n}", workflows=[wf], cluster=cluster))
    return Draw(cp, classic, source, cp.n_tasks, m, c, h)
