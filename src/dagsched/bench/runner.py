"""Run a suite's cells in this process, in a local process pool, or on Ray; store each chunk as it lands.

The driver lists the suite's cells, drops those already in the results store, and groups the rest
into *chunks*: cells of one problem together, so a worker builds and compiles each problem once per
chunk, and big enough that a 20-task cell (a few milliseconds) does not drown in task overhead.
Workers return plain row dicts; only the driver writes, one transaction per chunk. Every cell's
trace goes through the validator (`simulate` does it). A cell is deterministic given its key, so
in-process, pool and Ray runs store the same numbers (except the timing columns).
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dagsched.bench.store import ResultStore
from dagsched.bench.suite_file import get_suite
from dagsched.bench.suites import Cell, Mode, ProblemSpec, Suite

if TYPE_CHECKING:
    from dagsched.model.compiled import CompiledProblem

Row = dict[str, Any]

CHUNKS_PER_WORKER = 4
"""Auto chunking aims at this many chunks per worker, so the last chunks finish close together."""

MAX_CHUNK_CELLS = 64
"""At most this many cells per automatic chunk: 64 cells of 20 tasks take about a third of a second."""

MAX_CHUNK_COST = 64 * 100**1.3
"""At most this much estimated work per automatic chunk (64 cells of 100 tasks; a few seconds)."""

TIMING_COLUMNS = ("wall_s", "decision_latency_mean_ms", "decision_latency_p99_ms", "created_at")
"""Columns that depend on the machine and the moment, not on the cell: left out of equality checks."""


@dataclass(frozen=True)
class Chunk:
    """Cells of one problem, run one after another by one worker on one compiled problem."""

    spec: ProblemSpec
    cells: tuple[tuple[str, int, Mode], ...]
    """(scheduler, seed, mode) per cell"""

    def cost(self) -> float:
        return self.spec.cost_estimate() * len(self.cells)


@dataclass
class RunSummary:
    """What a run did: cells in the suite, skipped as already stored, run now, failed, and how fast."""

    suite: str
    out_dir: str
    backend: str
    workers: int
    total: int
    skipped: int
    ran: int = 0
    errors: int = 0
    invalid: int = 0
    reused: int = 0
    """cells not simulated because a seed-free run of the same problem, scheduler and mode stands for them"""
    lost: int = 0
    """cells whose worker died (not stored, so the next run retries them)"""
    chunks: int = 0
    wall_s: float = 0.0
    simulate_s: float = 0.0
    """sum of the cells' own wall time (scheduler + simulation + validation)"""
    failures: list[str] = field(default_factory=list)
    """the first few error messages, for the console"""

    @property
    def cells_per_s(self) -> float:
        return self.ran / self.wall_s if self.wall_s > 0 else math.nan

    @property
    def overhead_per_cell_s(self) -> float:
        """Worker-seconds per cell beyond the cell's own time: build, transport, store, idle workers at the end."""
        if not self.ran:
            return math.nan
        return (self.wall_s * max(self.workers, 1) - self.simulate_s) / self.ran


# -- the worker side --------------------------------------------------------------------------------


def _base_row(spec: ProblemSpec, cp: CompiledProblem | None) -> Row:
    return {
        "family": spec.family,
        "problem_id": spec.problem_id,
        "cluster": spec.cluster_key,
        "n_tasks": cp.n_tasks if cp is not None else spec.n_tasks,
        "n_edges": int(len(cp.succ_idx)) if cp is not None else None,
        "n_nodes": cp.n_nodes if cp is not None else None,
    }


def _error_text(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}"[:2000]


def run_cell(cp: CompiledProblem, spec: ProblemSpec, scheduler: str, seed: int, mode: Mode) -> Row:
    """One simulation, validated; any exception becomes a row with `error` set and valid false."""
    from dagsched.schedulers import make_scheduler, simulate

    row = _base_row(spec, cp) | {"scheduler": scheduler, "seed": seed, "mode": mode.name}
    t0 = time.perf_counter()
    try:
        result = simulate(cp, make_scheduler(scheduler), mode.config(), seed)
    except Exception as err:  # one broken scheduler must not stop the benchmark
        return row | {"valid": False, "error": _error_text(err), "wall_s": time.perf_counter() - t0}
    m = result.metrics
    row |= {
        "makespan": m.makespan,
        "cost": m.cost,
        "sla_hit_rate": m.sla_hit_rate,
        "utilisation": m.utilisation,
        "fragmentation": m.fragmentation,
        "load_std": m.load_std,
        "lower_bound": m.lower_bound,
        "slr": m.slr,
        "decision_latency_mean_ms": m.decision_latency_mean_ms,
        "decision_latency_p99_ms": m.decision_latency_p99_ms,
        "decisions": m.decisions,
        "objective": objective_value(cp, result.trace, mode.config(), m),
        "valid": result.valid,
        "error": None if result.valid else "invalid trace: " + "; ".join(result.violations[:3]),
    }
    if spec.kind == "stream":
        row |= stream_columns(cp, result.trace, mode.config()) | {"load": spec.load, "arrival": spec.arrival}
    row["wall_s"] = time.perf_counter() - t0
    return row


def objective_value(cp: CompiledProblem, trace: Any, config: Any, metrics: Any = None) -> float:
    """The one objective (`dagsched.sim.objective`) at its default weights, against the lower bounds."""
    from dagsched.sim.objective import ObjectiveWeights, lower_bound_baseline, objective_terms

    terms = objective_terms(cp, trace, config, lower_bound_baseline(cp, config), metrics)
    return ObjectiveWeights().combine(terms)


def stream_columns(cp: CompiledProblem, trace: Any, config: Any) -> Row:
    """The steady-state figures of a stream run (`sim.metrics.stream_metrics`) as result columns."""
    import json

    from dagsched.sim.metrics import stream_metrics

    sm = stream_metrics(cp, trace, config)
    row: Row = {"workflows": sm.workflows}
    for m in ("completion", "slowdown", "queue"):
        for q in ("mean", "p50", "p95", "p99"):
            row[f"{m}_{q}"] = getattr(sm, f"{m}_{q}")
    row |= {
        "throughput_per_h": sm.throughput_per_h,
        "sla_steady": sm.sla_hit_rate,
        "sla_by_class": json.dumps(sm.sla_by_class, sort_keys=True),
        "util_cpu": sm.utilisation["cpu"],
        "util_mem": sm.utilisation["mem"],
        "util_gpu": None if math.isnan(sm.utilisation["gpu"]) else sm.utilisation["gpu"],
        "fairness": sm.fairness,
    }
    return row


def run_chunk(chunk: Chunk) -> list[Row]:
    """Build the chunk's problem once and run its cells; a problem that fails to build fails every cell."""
    try:
        cp = chunk.spec.build()
    except Exception as err:
        base = _base_row(chunk.spec, None)
        text = "problem: " + _error_text(err)
        return [
            base | {"scheduler": s, "seed": seed, "mode": mode.name, "valid": False, "error": text, "wall_s": 0.0}
            for s, seed, mode in chunk.cells
        ]
    return [run_cell(cp, chunk.spec, s, seed, mode) for s, seed, mode in chunk.cells]


def collapse_seed_free(cells: Sequence[Cell]) -> tuple[list[Cell], dict[tuple[str, str, int, str], list[int]]]:
    """Drop cells whose result another cell already gives, and say which seeds each kept cell stands for.

    When the mode has no hidden randomness (`SimConfig.seed_free`) and the scheduler never reads the
    seed (`Scheduler.uses_seed` false), a fixed problem's run is the same for every seed: a trace in
    classic mode with HEFT gives one makespan ten times. Only the first such seed runs; the driver
    stores its row under the other seeds too, so paired statistics still see every seed.
    """
    from dagsched.schedulers import make_scheduler

    seedless = {name: not make_scheduler(name).uses_seed for name in {c.scheduler for c in cells}}
    exact = {c.mode.name: c.mode.config().seed_free for c in cells}
    kept: list[Cell] = []
    first: dict[tuple[str, str, str], Cell] = {}
    echoes: dict[tuple[str, str, int, str], list[int]] = {}
    for c in cells:
        if not (seedless[c.scheduler] and exact[c.mode.name]):
            kept.append(c)
            continue
        lead = first.setdefault((c.spec.problem_id, c.scheduler, c.mode.name), c)
        if lead is c:
            kept.append(c)
        else:
            echoes.setdefault(lead.key, []).append(c.seed)
    return kept, echoes


def _with_echoes(rows: list[Row], echoes: dict[tuple[str, str, int, str], list[int]]) -> list[Row]:
    out = []
    for row in rows:
        out.append(row)
        key = (row["problem_id"], row["scheduler"], row["seed"], row["mode"])
        out += [row | {"seed": seed} for seed in echoes.get(key, ())]
    return out


# -- chunking ---------------------------------------------------------------------------------------


def make_chunks(cells: Sequence[Cell], workers: int, chunk_size: int | None = None) -> list[Chunk]:
    """Group cells by problem, then split groups so the work spreads over `workers`.

    With `chunk_size`, a chunk holds at most that many cells. Otherwise a problem's cells stay in one
    chunk unless its estimated work exceeds 1/(CHUNKS_PER_WORKER x workers) of the total, MAX_CHUNK_COST
    or MAX_CHUNK_CELLS (so an interrupt never throws away much). A split deals the cells round-robin,
    so slow and fast schedulers spread evenly over the pieces.
    """
    groups: dict[str, list[Cell]] = defaultdict(list)
    for c in cells:
        groups[c.spec.problem_id].append(c)
    total = sum(c.spec.cost_estimate() for c in cells)
    spread = total / (CHUNKS_PER_WORKER * workers) if workers > 1 else math.inf
    target = max(min(spread, MAX_CHUNK_COST), 1.0)
    chunks = []
    for group in groups.values():
        if chunk_size:
            pieces = math.ceil(len(group) / chunk_size)
        else:
            work = group[0].spec.cost_estimate() * len(group)
            pieces = max(math.ceil(work / target), math.ceil(len(group) / MAX_CHUNK_CELLS))
        pieces = min(max(pieces, 1), len(group))
        for i in range(pieces):
            part = group[i::pieces]
            chunks.append(Chunk(part[0].spec, tuple((c.scheduler, c.seed, c.mode) for c in part)))
    return chunks


# -- the driver -------------------------------------------------------------------------------------


def _progress_bar(enabled: bool) -> Any:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("cells"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        disable=not enabled,
    )


Outcome = tuple[Chunk, "list[Row] | BaseException"]


class _InProcess:
    """Runs chunks one after another in this process when iterated."""

    def __init__(self, chunks: list[Chunk]) -> None:
        self.chunks = chunks

    def __iter__(self) -> Iterator[Outcome]:
        return ((ch, run_chunk(ch)) for ch in self.chunks)

    def close(self) -> None:
        pass


class _Pool:
    """A local process pool, started and fed at construction; yields chunks as workers finish them."""

    def __init__(self, chunks: list[Chunk], workers: int) -> None:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor
        from multiprocessing.context import BaseContext

        # fork is the cheapest start and, unlike spawn and forkserver, does not re-import the caller's
        # main module (unguarded scripts work); it is only safe while this process has no other thread,
        # so the pool starts (all workers at the first submit) before the progress bar's thread does.
        # A driver that already runs threads (Ray, a notebook) gets forkserver with dagsched preloaded.
        ctx: BaseContext
        if threading.active_count() == 1:
            ctx = mp.get_context("fork")
        else:
            server = mp.get_context("forkserver")
            server.set_forkserver_preload(["dagsched.bench.runner"])
            ctx = server
        self.pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx)
        try:
            self.futures = {self.pool.submit(run_chunk, ch): ch for ch in chunks}
        except BaseException:
            self.close()
            raise

    def __iter__(self) -> Iterator[Outcome]:
        from concurrent.futures import as_completed

        for fut in as_completed(self.futures):
            try:
                yield self.futures[fut], fut.result()
            except Exception as err:  # a dead worker (BrokenProcessPool): its cells stay missing
                yield self.futures[fut], err

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


class _Ray:
    """Ray tasks, one per chunk, submitted at construction; starts (and later stops) Ray if needed."""

    def __init__(self, chunks: list[Chunk], workers: int | None, address: str | None) -> None:
        import logging

        import ray

        self.started = False
        if not ray.is_initialized():
            if address:
                ray.init(address=address, logging_level=logging.WARNING)
            else:
                ray.init(num_cpus=workers, include_dashboard=False, logging_level=logging.WARNING)
            self.started = True
        remote = ray.remote(num_cpus=1, max_retries=1)(run_chunk)
        self.refs = {remote.remote(ch): ch for ch in chunks}

    def __iter__(self) -> Iterator[Outcome]:
        import ray

        pending = list(self.refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                try:
                    yield self.refs[ref], ray.get(ref)
                except Exception as err:  # the task failed twice (worker died): its cells stay missing
                    yield self.refs[ref], err

    def close(self) -> None:
        if self.started:
            import ray

            ray.shutdown()


def run_suite(
    suite: Suite | str | Path,
    out_dir: str | Path,
    *,
    workers: int | None = None,
    use_ray: bool = False,
    address: str | None = None,
    chunk_size: int | None = None,
    progress: bool = True,
    schedulers: Sequence[str] | None = None,
    limit: int | None = None,
    retry_errors: bool = False,
    on_rows: Callable[[list[Row]], None] | None = None,
) -> RunSummary:
    """Run every cell of `suite` not yet stored in `out_dir`/results.sqlite; return what was done.

    `workers`: processes (default os.cpu_count(); 0 runs in this process, for tests and debugging) or,
    with `use_ray`, the CPUs of a local Ray (`address` joins an existing cluster instead).
    `schedulers` overrides the suite's list; `limit` runs at most that many of the missing cells;
    `retry_errors` forgets stored failures of this suite's cells first. `on_rows` is called after each
    chunk is committed (progress hooks, tests that interrupt a run).
    """
    suite = suite if isinstance(suite, Suite) else get_suite(suite)
    store = ResultStore(out_dir)
    cells = suite.cells(schedulers)
    if retry_errors:
        store.delete_errors(c.key for c in cells)
    done = store.done_keys()
    pending = [c for c in cells if c.key not in done]
    skipped = len(cells) - len(pending)
    if limit is not None:
        pending = pending[: max(limit, 0)]
    n_pending = len(pending)
    pending, echoes = collapse_seed_free(pending)

    if use_ray or address:
        backend, n_workers = "ray", workers or os.cpu_count() or 1
    elif workers == 0:
        backend, n_workers = "in-process", 0
    else:
        backend, n_workers = "processes", workers or os.cpu_count() or 1
    chunks = make_chunks(pending, n_workers, chunk_size)
    if backend != "in-process":
        chunks.sort(key=lambda ch: -ch.cost())  # longest first: fewer stragglers at the end
    summary = RunSummary(suite.name, str(out_dir), backend, n_workers, len(cells), skipped, chunks=len(chunks))

    t0 = time.perf_counter()
    source: _InProcess | _Pool | _Ray
    if backend == "in-process" or not chunks:
        source = _InProcess(chunks)
    elif backend == "processes":
        source = _Pool(chunks, n_workers)
    else:
        source = _Ray(chunks, workers, address)
    try:
        with _progress_bar(progress) as bar:
            task = bar.add_task(f"{suite.name} ({backend})", total=n_pending)
            for chunk, rows in source:
                if isinstance(rows, BaseException):
                    keys = [(chunk.spec.problem_id, s, seed, mode.name) for s, seed, mode in chunk.cells]
                    lost = len(chunk.cells) + sum(len(echoes.get(k, ())) for k in keys)
                    summary.lost += lost
                    summary.failures.append(f"{chunk.spec.problem_id}: worker failed: {_error_text(rows)}")
                    bar.advance(task, lost)
                    continue
                summary.simulate_s += sum(float(r.get("wall_s") or 0.0) for r in rows)
                ran = len(rows)
                rows = _with_echoes(rows, echoes)
                summary.reused += len(rows) - ran
                for row in rows:
                    row["suite"] = suite.name
                store.write(rows)
                summary.ran += ran
                for row in rows:
                    if row.get("error"):
                        summary.errors += 1
                        summary.invalid += int(str(row["error"]).startswith("invalid trace"))
                        if len(summary.failures) < 20:
                            summary.failures.append(
                                f"{row['problem_id']} {row['scheduler']} seed {row['seed']} "
                                f"{row['mode']}: {row['error']}"
                            )
                bar.advance(task, len(rows))
                if summary.errors:
                    bar.update(task, description=f"{suite.name} ({backend}, {summary.errors} failed)")
                if on_rows is not None:
                    on_rows(rows)
    finally:
        source.close()
        summary.wall_s = time.perf_counter() - t0
        store.close()
    return summary
