"""Synthetic workflow families at any size, seeded and reproducible.

Five shapes that stress schedulers differently (and that a learned policy must
generalise across):

- ``layered``: Montage-like scientific workflow. Widening layers of parallel
  tasks (project, diff, fit, background, warp; each task reads one or two
  neighbours of the layer above), then a serial aggregation tail (concat,
  bgmodel, add, shrink). Wide and shallow; default runtimes lognormal.
- ``ml_pipeline``: a serial chain ingest, validate, preprocess, features, then
  training epochs; every epoch branches off a checkpoint and an evaluation of
  that checkpoint; a final test and model registration. Deep and narrow;
  training tasks request 1-2 GPUs and 16-32 GiB. Default runtimes gamma.
- ``etl_star``: many extract tasks feed one central join, which fans out to
  load tasks. One heavy bottleneck; default runtimes Weibull.
- ``random``: random layered DAG. About sqrt(n) layers of random width; a task
  takes each task of the previous layer as parent with probability `density`,
  of the layer d back with probability density / 2**(d-1) (so skip edges exist
  but stay few), and every non-entry task has at least one parent. Default
  runtimes lognormal.
- ``stages``: stage-structured analytics jobs (Spark, Dask, TPC-H): 2-20
  stages of 1-200 identical short tasks with heavy-tailed times, a barrier
  between dependent stages (`dagsched.generate.stages`, where its parameters
  and their sources are). Not in the standard suite's grid (`FAMILIES`); the
  workflow streams draw it.

Per task kind, runtimes are the drawn value times a fixed scale (training is
3x, a checkpoint 0.1x, ...), resource requests come from a kind profile (cpu in
{1, 2, 4, 8}, mem 0.5-32 GiB log-uniform in 0.5 GiB steps, GPUs for training),
priorities are uniform in 0..2 with tasks on the critical path raised to 3 and
flagged `critical`. Edge data sizes are drawn per producing task and then
scaled so that mean(data / bandwidth) / mean(runtime) equals `ccr`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dagsched.generate._dag import BoolArray, FloatArray, IntArray, critical_mask
from dagsched.generate.distributions import Gamma, LogNormal, RuntimeDistribution, Weibull, by_name
from dagsched.generate.stages import STAGE_MEDIAN, stages_workflow
from dagsched.model.entities import Edge, Task, Workflow
from dagsched.model.errors import InputError

FAMILIES = ("layered", "ml_pipeline", "etl_star", "random")
"""The four DAG shapes of the standard suite's grid."""
ALL_FAMILIES = (*FAMILIES, "stages")
"""Every family `generate_workflow` builds: the four shapes and the stage-structured analytics jobs
(`dagsched.generate.stages`), which the workflow streams draw."""
SCALES = (10, 20, 50, 100, 200, 500, 1000)

DEFAULT_RUNTIME: dict[str, RuntimeDistribution] = {
    "layered": LogNormal(mu=4.5, sigma=0.8),
    "ml_pipeline": Gamma(k=3.0, theta=40.0),
    "etl_star": Weibull(lam=100.0, k=1.2),
    "random": LogNormal(mu=4.5, sigma=0.8),
}
"""Runtime distribution per family when `runtime_dist` is None."""

RANDOM_MAX_JUMP = 8
"""The random family looks at most this many layers back for parents (density / 2**7 is negligible)."""


@dataclass(frozen=True)
class _Profile:
    """What a kind of task asks of a node."""

    cpu_choices: tuple[int, ...]
    cpu_p: tuple[float, ...]
    mem_gib: tuple[float, float]
    gpu: tuple[int, int]


_LIGHT = _Profile((1, 2), (0.7, 0.3), (0.5, 2.0), (0, 0))
_STANDARD = _Profile((1, 2, 4, 8), (0.35, 0.35, 0.2, 0.1), (0.5, 8.0), (0, 0))
_HEAVY = _Profile((4, 8), (0.5, 0.5), (8.0, 32.0), (0, 0))
_TRAIN = _Profile((4, 8), (0.5, 0.5), (16.0, 32.0), (1, 2))

# kind -> (runtime scale, resource profile); kinds not listed get (1.0, _STANDARD)
_KIND_TRAITS: dict[str, tuple[float, _Profile]] = {
    "diff": (0.3, _LIGHT),
    "fit": (0.5, _STANDARD),
    "concat": (0.5, _STANDARD),
    "bgmodel": (2.0, _HEAVY),
    "add": (3.0, _HEAVY),
    "shrink": (0.5, _LIGHT),
    "ingest": (1.0, _STANDARD),
    "validate": (0.3, _LIGHT),
    "preprocess": (1.5, _HEAVY),
    "features": (1.0, _STANDARD),
    "train": (3.0, _TRAIN),
    "ckpt": (0.1, _LIGHT),
    "eval": (0.5, _STANDARD),
    "test": (1.0, _STANDARD),
    "register": (0.1, _LIGHT),
    "extract": (1.0, _STANDARD),
    "join": (4.0, _HEAVY),
    "load": (0.7, _STANDARD),
}

_LAYER_KINDS = ("project", "diff", "fit", "background", "warp")
_TAIL_KINDS = ("concat", "bgmodel", "add", "shrink")
_ML_HEAD = ("ingest", "validate", "preprocess", "features")


@dataclass
class _Skeleton:
    """A DAG shape: ids, a kind per task and forward edges (src < dst)."""

    ids: list[str]
    kinds: list[str]
    src: IntArray
    dst: IntArray


def _digits(n: int) -> int:
    return max(4, len(str(n - 1)))


def _layered(n: int, rng: np.random.Generator, density: float) -> _Skeleton:
    n_tail = min(len(_TAIL_KINDS), max(1, n // 8))
    m = n - n_tail
    n_layers = int(np.clip(round(math.log2(m)) - 1, 1, len(_LAYER_KINDS))) if m > 1 else 1
    weights = np.arange(1, n_layers + 1)
    widths = np.floor(m * weights / weights.sum()).astype(np.int64)
    widths[-1] += m - widths.sum()
    assert widths.min() >= 1 and np.all(np.diff(widths) >= 0), widths  # chosen n_layers guarantees it
    offsets = np.concatenate([[0], np.cumsum(widths)])
    d = _digits(int(widths.max()))
    ids: list[str] = []
    kinds: list[str] = []
    for k, w in enumerate(widths):
        kinds += [_LAYER_KINDS[k]] * int(w)
        ids += [f"{_LAYER_KINDS[k]}_{j:0{d}d}" for j in range(w)]
    src_parts: list[IntArray] = []
    dst_parts: list[IntArray] = []
    for k in range(1, n_layers):
        pw, cw = int(widths[k - 1]), int(widths[k])
        j = np.arange(cw)
        parent = (j * pw) // cw  # onto, since cw >= pw: every task of the layer above has a child
        src_parts += [offsets[k - 1] + parent]
        dst_parts += [offsets[k] + j]
        second = (parent + 1 < pw) & (rng.random(cw) < 0.7)  # most tasks read an overlapping neighbour too
        src_parts += [offsets[k - 1] + parent[second] + 1]
        dst_parts += [offsets[k] + j[second]]
    last = np.arange(offsets[n_layers - 1], m)
    src_parts += [last, np.arange(m, n - 1)]
    dst_parts += [np.full(len(last), m), np.arange(m + 1, n)]
    ids += list(_TAIL_KINDS[:n_tail])
    kinds += list(_TAIL_KINDS[:n_tail])
    return _Skeleton(ids, kinds, np.concatenate(src_parts), np.concatenate(dst_parts))


def _ml_pipeline(n: int, rng: np.random.Generator, density: float) -> _Skeleton:
    n_head = min(len(_ML_HEAD), max(1, n // 5))
    n_tail = 2 if n >= 8 else 0
    n_mid = n - n_head - n_tail
    ids = list(_ML_HEAD[:n_head])
    kinds = list(ids)
    edges = [(i - 1, i) for i in range(1, n_head)]
    chain = n_head - 1  # the last task of the serial chain
    last_ckpt = -1
    for k in range(n_mid):
        t = n_head + k
        epoch, role = k // 3 + 1, k % 3
        if role == 0:
            ids.append(f"train_{epoch}")
            edges.append((chain, t))
            chain = t
        elif role == 1:
            ids.append(f"ckpt_{epoch}")
            edges.append((t - 1, t))
            last_ckpt = t
        else:
            ids.append(f"eval_{epoch}")
            edges.append((t - 1, t))
        kinds.append(ids[-1].split("_")[0])
    if n_tail:
        test, register = n - 2, n - 1
        ids += ["test", "register"]
        kinds += ["test", "register"]
        edges += [(chain, test), (test, register)]
        if last_ckpt >= 0:
            edges.append((last_ckpt, register))  # the registered model is the last checkpoint
    src, dst = np.array(edges, dtype=np.int64).reshape(-1, 2).T
    return _Skeleton(ids, kinds, src, dst)


def _etl_star(n: int, rng: np.random.Generator, density: float) -> _Skeleton:
    n_src = int(np.clip(round((n - 1) * rng.uniform(0.5, 0.7)), 1, n - 1))
    n_sink = n - 1 - n_src
    d = _digits(max(n_src, n_sink, 1))
    ids = [f"extract_{i:0{d}d}" for i in range(n_src)] + ["join"] + [f"load_{i:0{d}d}" for i in range(n_sink)]
    kinds = ["extract"] * n_src + ["join"] + ["load"] * n_sink
    src = np.concatenate([np.arange(n_src), np.full(n_sink, n_src)])
    dst = np.concatenate([np.full(n_src, n_src), np.arange(n_src + 1, n)])
    return _Skeleton(ids, kinds, src, dst)


def _random(n: int, rng: np.random.Generator, density: float) -> _Skeleton:
    n_layers = int(np.clip(round(math.sqrt(n) * rng.uniform(0.7, 1.3)), 2, n))
    widths = 1 + rng.multinomial(n - n_layers, np.full(n_layers, 1.0 / n_layers))
    offsets = np.concatenate([[0], np.cumsum(widths)])
    src_parts: list[IntArray] = []
    dst_parts: list[IntArray] = []
    for layer in range(1, n_layers):
        cw, co = int(widths[layer]), int(offsets[layer])
        has_parent = np.zeros(cw, dtype=bool)
        for jump in range(1, min(layer, RANDOM_MAX_JUMP) + 1):
            p_edge = density / 2 ** (jump - 1)
            pw, po = int(widths[layer - jump]), int(offsets[layer - jump])
            child, parent = np.nonzero(rng.random((cw, pw)) < p_edge)
            src_parts.append(po + parent)
            dst_parts.append(co + child)
            has_parent[child] = True
        orphans = np.flatnonzero(~has_parent)
        pw, po = int(widths[layer - 1]), int(offsets[layer - 1])
        src_parts.append(po + rng.integers(0, pw, size=len(orphans)))
        dst_parts.append(co + orphans)
    d = _digits(n)
    ids = [f"t{i:0{d}d}" for i in range(n)]
    return _Skeleton(ids, ["task"] * n, np.concatenate(src_parts), np.concatenate(dst_parts))


_BUILDERS: dict[str, Callable[[int, np.random.Generator, float], _Skeleton]] = {
    "layered": _layered,
    "ml_pipeline": _ml_pipeline,
    "etl_star": _etl_star,
    "random": _random,
}


def _requests(rng: np.random.Generator, profiles: list[_Profile]) -> tuple[FloatArray, FloatArray, IntArray]:
    """cpu cores, mem GiB and GPUs per task, drawn from each task's kind profile."""
    n = len(profiles)
    cpu = np.empty(n)
    mem_gib = np.empty(n)
    gpu = np.zeros(n, dtype=np.int64)
    for profile in dict.fromkeys(profiles):  # distinct, in first-seen order, so draws are reproducible
        idx = np.array([i for i, p in enumerate(profiles) if p is profile])
        cpu[idx] = rng.choice(profile.cpu_choices, size=len(idx), p=profile.cpu_p)
        lo, hi = profile.mem_gib
        mem_gib[idx] = np.exp(rng.uniform(math.log(lo), math.log(hi), size=len(idx)))
        gpu[idx] = rng.integers(profile.gpu[0], profile.gpu[1] + 1, size=len(idx))
    mem_gib = np.clip(np.round(mem_gib * 2) / 2, 0.5, 32.0)
    return cpu, mem_gib, gpu


def edge_data_bytes(
    rng: np.random.Generator, n: int, src: IntArray, runtime_s: FloatArray, ccr: float, bandwidth: float
) -> FloatArray:
    """Bytes per edge with mean(data / bandwidth) / mean(runtime_s) == ccr.

    A producing task writes one output of lognormal size that all its children
    read (with some per-child variation), so fan-outs carry similar data.
    """
    output_weight = rng.lognormal(0.0, 0.6, size=n)
    weight = output_weight[src] * rng.lognormal(0.0, 0.25, size=len(src))
    if len(src) == 0 or ccr == 0:
        return np.zeros(len(src))
    mean_bytes = ccr * float(runtime_s.mean()) * bandwidth
    data_bytes: FloatArray = np.round(weight / weight.mean() * mean_bytes)
    return data_bytes


def _resolve_dist(family: str, runtime_dist: RuntimeDistribution | str | None) -> RuntimeDistribution:
    if runtime_dist is None:
        return STAGE_MEDIAN if family == "stages" else DEFAULT_RUNTIME[family]
    if isinstance(runtime_dist, str):
        return by_name(runtime_dist)
    if not callable(getattr(runtime_dist, "sample", None)):
        raise InputError("runtime_dist", f"expected a name or an object with sample(rng, n), got {runtime_dist!r}")
    return runtime_dist


def _check_args(family: str, n_tasks: int, seed: int, ccr: float, density: float, bandwidth: float) -> None:
    if family not in ALL_FAMILIES:
        raise InputError("family", f"unknown family '{family}'; choose one of {', '.join(ALL_FAMILIES)}")
    if isinstance(n_tasks, bool) or not isinstance(n_tasks, int | np.integer) or n_tasks < 2:
        raise InputError("n_tasks", f"a workflow needs at least 2 tasks, got {n_tasks!r}")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise InputError("seed", f"must be a non-negative integer, got {seed!r}")
    if not (math.isfinite(ccr) and ccr >= 0):
        raise InputError("ccr", f"must be a finite number >= 0, got {ccr!r}")
    if not (0.0 <= density <= 1.0):
        raise InputError("density", f"is an edge probability and must lie in [0, 1], got {density!r}")
    if not (math.isfinite(bandwidth) and bandwidth > 0):
        raise InputError("bandwidth", f"must be a positive number of bytes per second, got {bandwidth!r}")


def assemble(
    name: str,
    ids: list[str],
    kinds: list[str],
    src: IntArray,
    dst: IntArray,
    runtime_s: FloatArray,
    cpu: FloatArray,
    mem_gib: FloatArray,
    gpu: IntArray,
    priority: IntArray,
    data_bytes: FloatArray,
    labels: dict[str, str],
) -> Workflow:
    """Validated Workflow from arrays; marks the critical path and raises its tasks' priority to 3."""
    critical: BoolArray = critical_mask(len(ids), src, dst, runtime_s)
    priority = np.where(critical, 3, priority)
    tasks = [
        Task(
            id=ids[i],
            runtime=float(runtime_s[i]),
            cpu=float(cpu[i]),
            mem=float(mem_gib[i]),
            gpu=int(gpu[i]),
            priority=int(priority[i]),
            critical=bool(critical[i]),
            labels={"kind": kinds[i]},
        )
        for i in range(len(ids))
    ]
    order = np.lexsort((dst, src))
    edges = [Edge(src=ids[src[e]], dst=ids[dst[e]], data=float(data_bytes[e])) for e in order]
    return Workflow(name=name, tasks=tasks, edges=edges, labels=labels)


def generate_workflow(
    family: str,
    n_tasks: int,
    seed: int,
    *,
    ccr: float = 0.5,
    density: float = 0.3,
    runtime_dist: RuntimeDistribution | str | None = None,
    name: str | None = None,
    bandwidth: float = 1.25e9,
) -> Workflow:
    """A `family` workflow of exactly `n_tasks` tasks; same arguments and seed give an equal Workflow.

    `ccr` is the communication-to-computation ratio at `bandwidth` bytes/s;
    `density` only shapes the ``random`` family; `runtime_dist` is a
    distribution object, a name from `distributions.by_name`, or None for the
    family default (`DEFAULT_RUNTIME`; for ``stages`` it draws each stage's
    median task time, `stages.STAGE_MEDIAN` by default).
    """
    _check_args(family, n_tasks, seed, ccr, density, bandwidth)
    dist = _resolve_dist(family, runtime_dist)
    if family == "stages":
        return stages_workflow(int(n_tasks), int(seed), ccr=ccr, bandwidth=bandwidth, runtime_dist=dist, name=name)
    n = int(n_tasks)
    rng = np.random.default_rng(seed)
    shape = _BUILDERS[family](n, rng, density)
    traits = [_KIND_TRAITS.get(kind, (1.0, _STANDARD)) for kind in shape.kinds]
    scale = np.array([t[0] for t in traits])
    runtime_s = np.maximum(np.round(dist.sample(rng, n) * scale, 3), 0.001)
    cpu, mem_gib, gpu = _requests(rng, [t[1] for t in traits])
    priority = rng.integers(0, 3, size=n)
    data_bytes = edge_data_bytes(rng, n, shape.src, runtime_s, ccr, bandwidth)
    labels = {
        "family": family,
        "seed": str(seed),
        "ccr": f"{ccr:g}",
        "runtime_dist": getattr(dist, "name", type(dist).__name__),
    }
    if family == "random":
        labels["density"] = f"{density:g}"
    return assemble(
        name or f"{family}-{n}-s{seed}",
        shape.ids,
        shape.kinds,
        shape.src,
        shape.dst,
        runtime_s,
        cpu,
        mem_gib,
        gpu,
        priority,
        data_bytes,
        labels,
    )
