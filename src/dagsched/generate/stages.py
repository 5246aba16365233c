"""The stage-structured analytics family: Spark / Dask / TPC-H jobs as stages of identical short tasks.

A data-parallel analytics job is a small DAG of *stages*; a stage is 1-200 identical tasks (one per data
partition) that run the same code on different slices, and a stage starts only when every task of the stages
it reads has finished (the shuffle is a barrier). Its shape here, and where each parameter comes from:

- **Stages per job: 2-20**, drawn from the stage counts of the 22 TPC-H queries in Decima's Spark traces
  (Mao et al., "Learning Scheduling Algorithms for Data Processing Clusters", SIGCOMM 2019; the query DAGs
  are the `adj_mat_*.npy` files of github.com/hongzimao/decima-sim, `spark_env/tpch/`: 2, 4, 4, 4, 6, 6, 6,
  6, 7, 7, 8, 8, 9, 9, 11, 12, 13, 14, 14, 16, 18, 18 stages, the same at every input size from 2 to 100 GB),
  `TPCH_STAGES`.
- **Stage DAG: a join tree.** Those query plans have about one edge per stage: every stage but the last
  feeds one later stage, several leaf stages (table scans) join towards one final stage. Production DAGs
  look alike: Alibaba's batch jobs (cluster-trace-v2018) "have sparsely connected vertices and can be
  approximately decomposed into multiple trees with bounded depth" (Tian, Zheng and Wang, "Characterizing
  and Synthesizing Task Dependencies of Data-Parallel Jobs in Alibaba Cloud", SoCC 2019). Each stage feeds
  one of the next `MAX_JUMP` stages, and with probability `EXTRA_CHILD_P` a second one (a reused result).
- **Tasks per stage: 1-200.** A shuffle stage runs one task per shuffle partition, 200 by default in Spark
  SQL (`spark.sql.shuffle.partitions`); a scan stage one per input split, more for large tables; a final
  stage often one (collect, global sort). Stage sizes are drawn lognormal (scans 2.7 x larger on average),
  the last stage is one task half the time, and every stage is clipped to 1-200 tasks so that the job has
  exactly `n_tasks` tasks.
- **Task times: heavy-tailed within a stage.** A stage's tasks are identical in code and requests but not
  in time: partitions are skewed and some tasks straggle. Tian et al. measure large duration variability
  among a stage's instances even in recurring jobs; here a task takes its stage's median times a Pareto
  factor of shape `TAIL_ALPHA` = 2 (median 1, P(factor > k) ~ k^-2 / 2, capped at `TAIL_CAP`). Stage
  medians are lognormal around 8 s (`STAGE_MEDIAN`): short tasks, as in Spark.
- **Requests.** Spark runs a task on one executor core (`spark.task.cpus` = 1): 1 core (80 %) or 2, and
  0.5-8 GiB, the same for every task of a stage.

The barrier is a task of its own, `s<k>_barrier`, between a stage and the stages it reads (zero cores, zero
memory, 1 ms): every task of the parent stages precedes it and it precedes every task of the stage, which
takes p + c edges instead of the p x c of an all-to-all shuffle. Its in-edges carry no data (it is a point
of synchronisation, not a process); its out-edges carry the shuffle reads, scaled so that the job's mean
edge transfer over its mean task time is `ccr`, as in the other families. The barrier tasks count in
`n_tasks`.
"""

from __future__ import annotations

import math

import numpy as np

from dagsched.generate._dag import FloatArray, IntArray
from dagsched.generate.distributions import LogNormal, RuntimeDistribution
from dagsched.model.entities import Workflow
from dagsched.model.errors import InputError

TPCH_STAGES = (2, 4, 4, 4, 6, 6, 6, 6, 7, 7, 8, 8, 9, 9, 11, 12, 13, 14, 14, 16, 18, 18)
"""Stages of the 22 TPC-H queries in Decima's Spark traces (any input size)."""
MIN_STAGES, MAX_STAGES = 2, 20
MAX_STAGE_TASKS = 200
"""Spark SQL's default shuffle partitions: the widest stage."""
MIN_TASKS = 3
"""Two stages of one task and the barrier between them."""
MAX_TASKS = MAX_STAGES * MAX_STAGE_TASKS + 1
"""20 full stages and one barrier, the fewest a join tree has (its sink's): the most every tree of 20 stages holds."""
MAX_JUMP = 3
"""A stage feeds one of the next this many stages (a shallow join tree)."""
EXTRA_CHILD_P = 0.1
"""Probability that a stage feeds a second later stage as well."""
SCAN_SIZE_MU = 1.0
"""Scan (leaf) stages draw their relative size from lognormal(1.0, 0.8), the others from lognormal(0, 0.8)."""
STAGE_SIZE_SIGMA = 0.8
SINGLE_SINK_P = 0.5
"""Probability that the last stage is one task (collect, global sort)."""
STAGE_MEDIAN: RuntimeDistribution = LogNormal(mu=math.log(8.0), sigma=0.9)
"""Median task time of a stage, seconds at speed 1.0."""
TAIL_ALPHA = 2.0
TAIL_CAP = 20.0
BARRIER_RUNTIME_S = 0.001


def stage_dag(n_stages: int, rng: np.random.Generator) -> list[list[int]]:
    """Parents of each stage of a join tree over stages numbered in topological order (the last is the sink)."""
    parents: list[list[int]] = [[] for _ in range(n_stages)]
    for k in range(n_stages - 1):
        hi = min(k + 1 + MAX_JUMP, n_stages)
        children = [int(rng.integers(k + 1, hi))]
        if hi - (k + 1) > 1 and rng.random() < EXTRA_CHILD_P:
            other = int(rng.integers(k + 1, hi - 1))
            children.append(other if other < children[0] else other + 1)
        for c in children:
            parents[c].append(k)
    return parents


def split_sizes(total: int, weight: FloatArray, cap: int) -> IntArray:
    """`total` tasks over stages in proportion to `weight`, each stage 1 to `cap` (needs len <= total <= len x cap).

    Largest remainders after one task each; what a capped stage cannot take goes to the others by weight."""
    k = len(weight)
    if not k <= total <= k * cap:  # no split exists: the loop below would never end
        raise ValueError(f"cannot split {total} tasks over {k} stages of 1 to {cap}")
    sizes = np.ones(k, dtype=np.int64)
    left = total - k
    while left > 0:
        room = cap - sizes
        w = np.where(room > 0, weight, 0.0)
        share = w / w.sum() * left
        add = np.minimum(np.floor(share).astype(np.int64), room)
        if add.sum() == 0:  # fewer tasks left than stages with room: one each to the heaviest
            order = np.argsort(-(share - np.floor(share)), kind="stable")
            add = np.zeros(k, dtype=np.int64)
            add[order[:left]] = 1
            add = np.minimum(add, room)
        sizes += add
        left -= int(add.sum())
    return sizes


def _n_stages(n: int, rng: np.random.Generator) -> int:
    drawn = int(TPCH_STAGES[int(rng.integers(len(TPCH_STAGES)))])
    most = min(MAX_STAGES, (n + 1) // 2)  # s stages need s tasks and up to s - 1 barriers
    least = max(MIN_STAGES, math.ceil((n - 1) / MAX_STAGE_TASKS))  # the stages hold n less their barriers, >= 1
    return int(np.clip(drawn, least, most))


def stages_workflow(
    n_tasks: int,
    seed: int,
    *,
    ccr: float,
    bandwidth: float,
    runtime_dist: RuntimeDistribution | None,
    name: str | None,
) -> Workflow:
    """A stage-structured analytics job of exactly `n_tasks` tasks, barriers included (see the module)."""
    from dagsched.generate.topologies import assemble, edge_data_bytes

    if not MIN_TASKS <= n_tasks <= MAX_TASKS:
        raise InputError(
            "n_tasks",
            f"the stages family needs {MIN_TASKS} to {MAX_TASKS} tasks (2-20 stages of 1-200 tasks and "
            f"their barriers), got {n_tasks}",
        )
    n = int(n_tasks)
    rng = np.random.default_rng(seed)
    s = _n_stages(n, rng)
    parents = stage_dag(s, rng)
    n_barriers = sum(1 for p in parents if p)  # s + n_barriers <= n since s <= (n + 1) // 2
    leaf = np.array([not p for p in parents])
    weight = rng.lognormal(np.where(leaf, SCAN_SIZE_MU, 0.0), STAGE_SIZE_SIGMA)
    single_sink = rng.random() < SINGLE_SINK_P and n - n_barriers - 1 <= (s - 1) * MAX_STAGE_TASKS
    if single_sink:
        sizes = np.append(split_sizes(n - n_barriers - 1, weight[:-1], MAX_STAGE_TASKS), 1)
    else:
        sizes = split_sizes(n - n_barriers, weight, MAX_STAGE_TASKS)
    median_s = (runtime_dist or STAGE_MEDIAN).sample(rng, s)
    cpu_s = rng.choice((1.0, 2.0), size=s, p=(0.8, 0.2))
    mem_s = np.clip(np.round(np.exp(rng.uniform(math.log(0.5), math.log(8.0), size=s)) * 2) / 2, 0.5, 8.0)
    prio_s = rng.integers(0, 3, size=s)

    ids: list[str] = []
    kinds: list[str] = []
    stage_of: list[int] = []
    first = np.zeros(s, dtype=np.int64)
    barrier = np.full(s, -1, dtype=np.int64)
    for k in range(s):
        if parents[k]:
            barrier[k] = len(ids)
            ids.append(f"s{k:02d}_barrier")
            kinds.append("barrier")
            stage_of.append(k)
        first[k] = len(ids)
        ids += [f"s{k:02d}_t{j:03d}" for j in range(int(sizes[k]))]
        kinds += ["scan" if leaf[k] else "reduce"] * int(sizes[k])
        stage_of += [k] * int(sizes[k])
    assert len(ids) == n, (len(ids), n)
    src_parts: list[IntArray] = []
    dst_parts: list[IntArray] = []
    for k in range(s):
        if not parents[k]:
            continue
        for p in parents[k]:
            src_parts.append(np.arange(first[p], first[p] + sizes[p]))
            dst_parts.append(np.full(int(sizes[p]), barrier[k]))
        dst_parts.append(np.arange(first[k], first[k] + sizes[k]))
        src_parts.append(np.full(int(sizes[k]), barrier[k]))
    src, dst = np.concatenate(src_parts), np.concatenate(dst_parts)

    stage = np.array(stage_of)
    is_barrier = np.array([kd == "barrier" for kd in kinds])
    u = rng.random(n)
    tail = np.minimum((1.0 - u) ** (-1.0 / TAIL_ALPHA) / 2 ** (1.0 / TAIL_ALPHA), TAIL_CAP)
    runtime_s = np.where(is_barrier, BARRIER_RUNTIME_S, np.maximum(np.round(median_s[stage] * tail, 3), 0.001))
    cpu = np.where(is_barrier, 0.0, cpu_s[stage])
    mem_gib = np.where(is_barrier, 0.0, mem_s[stage])
    gpu = np.zeros(n, dtype=np.int64)
    data_bytes = edge_data_bytes(rng, n, src, runtime_s[~is_barrier], ccr, bandwidth)
    into_barrier = is_barrier[dst]
    data_bytes[into_barrier] = 0.0
    if data_bytes.sum() > 0:  # the shuffle reads carry the whole job's mean transfer
        data_bytes = np.round(data_bytes * len(data_bytes) / (~into_barrier).sum())
    labels = {
        "family": "stages",
        "seed": str(seed),
        "ccr": f"{ccr:g}",
        "runtime_dist": getattr(runtime_dist or STAGE_MEDIAN, "name", type(runtime_dist).__name__),
        "stages": str(s),
    }
    return assemble(
        name or f"stages-{n}-s{seed}",
        ids,
        kinds,
        src,
        dst,
        runtime_s,
        cpu,
        mem_gib,
        gpu,
        prio_s[stage],
        data_bytes,
        labels,
    )
