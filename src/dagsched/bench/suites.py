"""Benchmark suites: which problems, clusters, modes, seeds and schedulers make up a run.

A suite expands into *cells*, one per (problem, scheduler, seed, mode). A problem is a
`ProblemSpec`: a few strings and numbers that are cheap to send to a worker process or a Ray
node, which builds the compiled problem from them, identically everywhere.

Seed semantics (paired comparisons): every scheduler runs on the same seed list. A seed fixes
the hidden randomness of the simulation (runtime noise, failures) and, for synthetic workflows
and recipes without explicit instance seeds, the generated instance too: seed 3 of `layered`
at 50 tasks is one fresh workflow that every scheduler sees. Real traces are one fixed
instance each, run once per seed.

Built-in suites: `quick` (about two minutes on two cores), `standard` (the full grid), `real`
(the WfCommons traces only), `shared` (workflow streams on a loaded shared cluster) and
`shared-quick` (its few-minute variant). Any other name is read as a YAML suite file, see
`load_suite_file`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationError

from dagsched.generate.traces import TraceEntry, real_traces, wfinstances_root
from dagsched.model.errors import InputError, from_pydantic, parse

if TYPE_CHECKING:
    from dagsched.model.compiled import CompiledProblem
    from dagsched.sim.config import SimConfig

ProblemKind = Literal["synthetic", "trace", "recipe", "file", "stream"]

NEEDS_GPU = frozenset({"ml_pipeline"})
"""Synthetic families whose tasks request GPUs: they cannot run on a cluster without any."""


# -- problems, modes, cells -------------------------------------------------------------------------


def short_hash(path: Path) -> str:
    return hashlib.sha1(path.read_bytes()).hexdigest()[:8]


def _is_preset(name: str) -> bool:
    from dagsched.generate.clusters import PRESETS

    return name in PRESETS


def cluster_label(cluster: str) -> str:
    """A preset's name, a cluster file's stem plus content hash, or "own" for classic files."""
    if cluster == "own" or _is_preset(cluster):
        return cluster
    path = Path(cluster)
    return f"{path.name.split('.')[0]}-{short_hash(path)}"


@dataclass(frozen=True)
class ProblemSpec:
    """How to build one problem (workflow plus cluster) anywhere, deterministically.

    `kind` picks the source: "synthetic" (family, n_tasks, gen_seed, ccr), "trace" (a WfCommons
    trace `path`), "recipe" (a WfCommons recipe, n_tasks, gen_seed), "file" (a user workflow
    `path`) or "stream" (n_workflows of a `mix` arriving by `arrival` at offered `load`, gen_seed;
    see `dagsched.generate.streams`). `cluster` is a preset name, a cluster file path or "own" (a
    classic file's machines).
    """

    kind: ProblemKind
    family: str
    """the label results are grouped by: synthetic family, the trace's MANIFEST family, the recipe"""
    cluster: str
    n_tasks: int | None = None
    """tasks (synthetic, trace), upper bound (recipe) or None (file, unknown before reading)"""
    gen_seed: int | None = None
    ccr: float = 0.5
    recipe: str | None = None
    path: str | None = None
    name: str | None = None
    """the trace or file name in problem_id; defaults to the path's stem"""
    cluster_id: str | None = None
    """the cluster's label in problem_id; computed from `cluster` when None"""
    load: float | None = None
    """stream: target offered load of the binding resource"""
    arrival: str | None = None
    """stream: arrival process (poisson, bursty, diurnal)"""
    n_workflows: int | None = None
    """stream: number of workflows"""
    mix: str | None = None
    """stream: name of the workload mix (`dagsched.generate.streams.MIXES`)"""

    @property
    def cluster_key(self) -> str:
        """The cluster's label in problem_id (and what `Suite.restricted` selects by)."""
        return self.cluster_id or cluster_label(self.cluster)

    @property
    def problem_id(self) -> str:
        """Stable across machines and runs: the store's key for this problem."""
        at = self.cluster_key
        if self.kind == "synthetic":
            return f"syn/{self.family}/n{self.n_tasks}/s{self.gen_seed}/ccr{self.ccr:g}@{at}"
        if self.kind == "recipe":
            return f"recipe/{self.recipe}/n{self.n_tasks}/s{self.gen_seed}@{at}"
        if self.kind == "trace":
            return f"trace/{self.family}/{self.name or path_stem(self.path)}@{at}"
        if self.kind == "stream":
            return f"stream/{self.mix}/{self.arrival}/w{self.n_workflows}/load{self.load:g}/s{self.gen_seed}@{at}"
        return f"file/{self.name or path_stem(self.path)}@{at}"

    @property
    def n_nodes(self) -> int | None:
        """The cluster's node count when it is a preset; None for a cluster file (unknown until read)."""
        from dagsched.generate.clusters import PRESETS

        preset = PRESETS.get(self.cluster)
        return preset.n_nodes if preset else None

    @property
    def expected_tasks(self) -> int | None:
        """The task count when known before building; for a stream, n_workflows x STREAM_MEAN_TASKS (an estimate)."""
        if self.kind == "stream" and self.n_workflows is not None:
            return self.n_workflows * STREAM_MEAN_TASKS
        return self.n_tasks

    def cost_estimate(self) -> float:
        """Relative work of one cell, for chunking and ordering: grows a little faster than the task count."""
        n = float(self.expected_tasks or 200)
        return float(n**1.3)

    def build(self) -> CompiledProblem:
        """The compiled problem; the same spec gives the same problem on every machine."""
        from dagsched.model import Problem, compile_problem

        if self.kind == "synthetic":
            from dagsched.generate import generate_workflow

            assert self.n_tasks is not None and self.gen_seed is not None
            wf = generate_workflow(self.family, self.n_tasks, self.gen_seed, ccr=self.ccr)
            return compile_problem(parse(Problem, {"name": wf.name, "workflows": [wf], "cluster": self._cluster()}))
        if self.kind == "recipe":
            from dagsched.generate import recipe_workflow

            assert self.recipe is not None and self.n_tasks is not None and self.gen_seed is not None
            wf = recipe_workflow(self.recipe, self.n_tasks, self.gen_seed)
            return compile_problem(parse(Problem, {"name": wf.name, "workflows": [wf], "cluster": self._cluster()}))
        if self.kind == "stream":
            from dagsched.generate.streams import generate_stream

            assert self.n_workflows is not None and self.load is not None and self.gen_seed is not None
            stream = generate_stream(
                self._cluster(),
                self.n_workflows,
                self.load,
                self.arrival or "poisson",
                self.gen_seed,
                mix=self.mix or "default",
            )
            return compile_problem(stream.problem(self.problem_id))
        from dagsched.io import read_problem

        assert self.path is not None
        if not Path(self.path).exists():
            raise InputError("path", f"workflow file not found: {self.path}")
        return compile_problem(read_problem(self.path, None if self.cluster == "own" else self._cluster()))

    def _cluster(self) -> Any:
        if _is_preset(self.cluster):
            from dagsched.generate import cluster_preset

            return cluster_preset(self.cluster)
        from dagsched.io import read_cluster

        return read_cluster(self.cluster)


def path_stem(path: str | None) -> str:
    name = Path(path or "?").name
    for suffix in (".gz", ".json", ".yaml", ".yml"):
        name = name.removesuffix(suffix)
    return name


@dataclass(frozen=True)
class Mode:
    """A named simulation setting: "classic" (textbook model) or "cloud" (noise), or a custom one."""

    name: str
    settings: tuple[tuple[str, Any], ...] = ()
    """SimConfig keyword arguments, as sorted pairs so that the mode stays hashable"""

    def config(self) -> SimConfig:
        from dagsched.sim.config import SimConfig

        return SimConfig(**dict(self.settings))

    @classmethod
    def of(cls, name: str, settings: dict[str, Any], where: str = "mode") -> Mode:
        """A mode whose settings are checked now, so a bad one fails at suite load, not in a worker."""
        from dagsched.sim.config import SimConfig

        try:
            SimConfig(**settings)
        except ValidationError as err:
            raise from_pydantic(err, where) from None
        return cls(name, tuple(sorted(settings.items())))


def _named_mode(name: str) -> Mode:
    from dagsched.sim.config import mode_settings

    return Mode(name, tuple(sorted(mode_settings(name).items())))


CLASSIC = _named_mode("classic")
CLOUD = _named_mode("cloud")
SHARED = _named_mode("shared")
BUILTIN_MODES = {"classic": CLASSIC, "cloud": CLOUD, "shared": SHARED}
"""The simulator's named modes (`dagsched.sim.config.MODES`) as suite modes."""


@dataclass(frozen=True)
class Cell:
    """One unit of work and one row of results: a problem, a scheduler, a seed, a mode."""

    spec: ProblemSpec
    scheduler: str
    seed: int
    mode: Mode

    @property
    def key(self) -> tuple[str, str, int, str]:
        """The store's unique key (problem_id, scheduler, seed, mode)."""
        return (self.spec.problem_id, self.scheduler, self.seed, self.mode.name)


@dataclass(frozen=True)
class Entry:
    """A problem and the seeds it runs with (a synthetic instance tied to its seed runs with that seed only)."""

    spec: ProblemSpec
    seeds: tuple[int, ...]


@dataclass(frozen=True)
class Suite:
    """Problems x modes x schedulers x seeds. `schedulers=None` means every registered one at run time."""

    name: str
    entries: tuple[Entry, ...]
    modes: tuple[Mode, ...] = (CLASSIC, CLOUD)
    schedulers: tuple[str, ...] | None = None
    description: str = ""
    seeds: tuple[int, ...] = field(default=())
    """the suite's seed list (for display); each entry carries the seeds it actually uses"""
    tree_search_limit: int | None = None
    """tree-search schedulers (`Scheduler.tree_search`, MCTS) run only on problems with fewer than this
    many tasks x nodes; None runs them everywhere"""
    skip: tuple[str, ...] = ()
    """schedulers left out of "every registered scheduler" (the suite's docstring says why)"""

    def restricted(
        self,
        clusters: Sequence[str] | None = None,
        seeds: Sequence[int] | None = None,
        loads: Sequence[float] | None = None,
    ) -> Suite:
        """The slice of this suite on `clusters` (problem-id labels), `seeds` and offered `loads` (streams); None
        keeps all.

        Cells keep their ids, so a slice's results resume into, and are resumed by, the whole suite."""
        known_clusters = sorted({e.spec.cluster_key for e in self.entries})
        unknown = sorted(set(clusters or ()) - set(known_clusters))
        if unknown:
            raise InputError("clusters", f"{', '.join(unknown)} not in suite {self.name}: {', '.join(known_clusters)}")
        if loads:
            known_loads = sorted({e.spec.load for e in self.entries if e.spec.load is not None})
            missing = [x for x in loads if not any(abs(x - k) < 1e-9 for k in known_loads)]
            if missing:
                have = ", ".join(map(str, known_loads)) or "none: it has no streams"
                raise InputError("loads", f"{', '.join(map(str, missing))} not in suite {self.name} (loads: {have})")
        entries = []
        for entry in self.entries:
            if clusters and entry.spec.cluster_key not in clusters:
                continue
            if loads and (entry.spec.load is None or not any(abs(entry.spec.load - x) < 1e-9 for x in loads)):
                continue
            kept = tuple(s for s in entry.seeds if seeds is None or s in seeds)
            if kept:
                entries.append(Entry(entry.spec, kept))
        if not entries:
            raise InputError("seeds", f"no cell of suite {self.name} has seed {', '.join(map(str, seeds or ()))}")
        return replace(self, entries=tuple(entries))

    def scheduler_names(self, override: Sequence[str] | None = None) -> list[str]:
        """`override`, else the suite's list, else every registered scheduler now (later ones included)."""
        from dagsched.schedulers import registered_names

        known = registered_names()
        names = list(override) if override else list(self.schedulers or [n for n in known if n not in self.skip])
        if names == ["all"]:
            names = known
        unknown = [n for n in names if n not in known]
        if unknown:
            raise InputError("schedulers", f"unknown scheduler(s) {', '.join(unknown)}; known: {', '.join(known)}")
        return list(dict.fromkeys(names))

    def cells(self, schedulers: Sequence[str] | None = None) -> list[Cell]:
        """Every cell, grouped by problem (so one worker compiles a problem once for all its cells)."""
        from dagsched.schedulers import is_tree_search

        names = self.scheduler_names(schedulers)
        capped = {name for name in names if is_tree_search(name)}
        return [
            Cell(entry.spec, name, seed, mode)
            for entry in self.entries
            for mode in self.modes
            for name in names
            if name not in capped or self.within_tree_search_limit(entry.spec)
            for seed in entry.seeds
        ]

    def within_tree_search_limit(self, spec: ProblemSpec) -> bool:
        """Whether tree search runs on `spec`: tasks x nodes under the limit (or either one unknown).

        A stream's task count is its estimate (`ProblemSpec.expected_tasks`)."""
        tasks = spec.expected_tasks
        if self.tree_search_limit is None or tasks is None or spec.n_nodes is None:
            return True
        return tasks * spec.n_nodes < self.tree_search_limit


# -- built-in suites --------------------------------------------------------------------------------


def _synthetic(family: str, n_tasks: int, seed: int, cluster: str, ccr: float = 0.5) -> ProblemSpec:
    return ProblemSpec("synthetic", family, cluster, n_tasks=n_tasks, gen_seed=seed, ccr=ccr, cluster_id=cluster)


def trace_spec(entry: TraceEntry, root: Path, cluster: str) -> ProblemSpec:
    return ProblemSpec(
        "trace",
        entry.family,
        cluster,
        n_tasks=entry.n_tasks,
        path=str(root / entry.file),
        name=path_stem(entry.file),
        cluster_id=cluster_label(cluster),
    )


def family_fits(family: str, cluster: str) -> bool:
    """Whether a synthetic family can run on a preset at all (ml_pipeline trains on GPUs)."""
    from dagsched.generate.clusters import NODE_TYPES, PRESETS

    if family not in NEEDS_GPU or cluster not in PRESETS:
        return True
    return any(NODE_TYPES[inst].gpu > 0 for inst, _ in PRESETS[cluster].composition)


QUICK_FAMILIES = ("layered", "ml_pipeline", "etl_star")
QUICK_SCALES = (20, 50, 100, 200)
QUICK_TRACES = (
    "epigenomics/epigenomics-chameleon-hep-1seq-100k-001.json.gz",
    "montage/montage-chameleon-2mass-005d-001.json.gz",
    "nextflow/cutandrun-dirt02-001.json.gz",
    "montage/montage-chameleon-2mass-015d-001.json.gz",
)
STANDARD_CLUSTERS = ("homog-8", "hetero-16", "large-100")
STANDARD_SEEDS = tuple(range(1, 11))
STREAM_MEAN_TASKS = 75
"""Mean tasks per workflow of the stream mixes (the default mix drew 21,776 tasks in 300 workflows): a stream's
size estimate before it is built."""
STANDARD_TREE_SEARCH_LIMIT = 50_000
"""tasks x nodes below which the standard suite runs MCTS: all of hetero-16 and homog-8, large-100 to 200 tasks"""


def quick_suite() -> Suite:
    """A few minutes on two cores: 3 families x 3 scales + 4 small real traces, hetero-16, both modes, 3 seeds."""
    seeds = (1, 2, 3)
    root = wfinstances_root()
    entries = [
        Entry(_synthetic(fam, n, s, "hetero-16"), (s,)) for fam in QUICK_FAMILIES for n in QUICK_SCALES for s in seeds
    ]
    by_file = {e.file: e for e in real_traces(root)}
    entries += [Entry(trace_spec(by_file[f], root, "hetero-16"), seeds) for f in QUICK_TRACES if f in by_file]
    return Suite("quick", tuple(entries), seeds=seeds, description=quick_suite.__doc__ or "")


def standard_suite(root: Path | None = None) -> Suite:
    """4 families x 7 scales x 3 clusters x 2 modes x 10 seeds, plus every real trace on hetero-16.

    The real traces run on the heterogeneous cluster only: on the homogeneous and
    100-node clusters they add two thirds of the suite's time (the 1,700- to 2,100-task
    traces dominate it) and little the synthetic grid does not already show.

    ml_pipeline on homog-8 is left out: its training tasks need GPUs and homog-8 has none.

    MCTS (the tree-search schedulers) runs on problems under 50,000 tasks x nodes, so not on the
    500- and 1,000-task workflows on large-100: its cost per decision grows with tasks x nodes, and
    one 1,000-task etl_star cell on large-100 in cloud mode took 21 minutes, about as long as the
    other 13 schedulers' whole 500-task grid.
    """
    from dagsched.generate import FAMILIES, SCALES

    root = root or wfinstances_root()
    entries = [
        Entry(_synthetic(fam, n, s, cl), (s,))
        for cl in STANDARD_CLUSTERS
        for fam in FAMILIES
        if family_fits(fam, cl)
        for n in SCALES
        for s in STANDARD_SEEDS
    ]
    entries += [Entry(trace_spec(t, root, "hetero-16"), STANDARD_SEEDS) for t in real_traces(root)]
    return Suite(
        "standard",
        tuple(entries),
        seeds=STANDARD_SEEDS,
        description=standard_suite.__doc__ or "",
        tree_search_limit=STANDARD_TREE_SEARCH_LIMIT,
    )


def real_suite(root: Path | None = None) -> Suite:
    """Every real WfCommons trace (no legacy/, helloworld/) on hetero-16, both modes, 10 seeds."""
    root = root or wfinstances_root()
    entries = [Entry(trace_spec(t, root, "hetero-16"), STANDARD_SEEDS) for t in real_traces(root)]
    return Suite("real", tuple(entries), seeds=STANDARD_SEEDS, description=real_suite.__doc__ or "")


SHARED_CLUSTERS = ("homog-8", "hetero-16", "large-100")
SHARED_LOADS = (0.3, 0.6, 0.85, 0.95)
SHARED_ARRIVALS = ("poisson", "bursty")
SHARED_WORKFLOWS = {"homog-8": 100, "hetero-16": 150, "large-100": 250}
"""Workflows per stream on each cluster (see `shared_suite` for why these lengths)."""
SHARED_STAGES_CLUSTER = "homog-8"
"""Where the shared suite also runs streams of stage-structured analytics jobs alone (`MIXES["stages"]`)."""
SHARED_SKIP = ("mcts_uct", "tabu")
"""Registered schedulers the shared suite leaves out (see `shared_suite`); shared-quick runs them."""


def stream_spec(
    cluster: str, n_workflows: int, load: float, arrival: str, seed: int, mix: str = "default"
) -> ProblemSpec:
    """A stream of `mix` at `load` on a preset cluster, as the shared suites build theirs (grouped by arrival
    process, and by mix when it is not the default one)."""
    return ProblemSpec(
        "stream",
        arrival if mix == "default" else f"{mix}-{arrival}",
        cluster,
        gen_seed=seed,
        cluster_id=cluster,
        load=load,
        arrival=arrival,
        n_workflows=n_workflows,
        mix=mix,
    )


def shared_suite() -> Suite:
    """Workflow streams on a shared, loaded cluster: 3 clusters x 4 offered loads x 2 arrival processes x 10 seeds,
    and streams of analytics jobs alone on homog-8 at the same loads, arrivals and seeds.

    Each stream mixes four tenants' workflows (ETL, analytics, ML pipelines, science: synthetic
    families, WfCommons recipes and real traces, `MIXES["default"]`) arriving by a Poisson or a
    bursty (MMPP-2) process at offered load 0.3, 0.6, 0.85 or 0.95 of the binding resource, in the
    `shared` mode (noise CV 0.3, node failures and stragglers). The seed fixes the stream and the
    hidden randomness. Streams hold 100 workflows on homog-8, 150 on hetero-16 and 250 on large-100
    (about 7,500, 11,000 and 19,000 tasks), spanning about 3 to 40 hours of simulated time: long enough
    for several workflow lifetimes at every load, short enough that the cells run in hours on
    two cores (a steady state on large-100 would need about 100,000 tasks per stream; its figures are
    those of a cluster still filling at the high loads, and the report's utilisation says by how much).
    The analytics streams (`MIXES["stages"]`: Spark / TPC-H shaped jobs of 2-20 stages of 1-200 short tasks
    with barriers between stages) hold 100 workflows on homog-8 (about 9,000 tasks), grouped as
    `stages-poisson` and `stages-bursty`.

    Every registered scheduler runs except two whose cost per decision grows with everything queued
    on the cluster, which a stream makes large (`SHARED_SKIP`; shared-quick runs them on short
    streams): `mcts_uct` re-plans every
    unstarted task of every workflow at each decision once their rollout budget is spent (one
    30-workflow stream took more than 25 minutes), and `tabu`, whose re-plan budget of 25,000 task
    placements is smaller than a few evaluations of a loaded stream's queue, plans what HEFT plans
    at several times HEFT's cost (identical mean completion time on a 200-workflow stream, 164 s
    against 38 s).
    """
    entries = [
        Entry(stream_spec(cl, SHARED_WORKFLOWS[cl], load, arrival, s), (s,))
        for cl in SHARED_CLUSTERS
        for load in SHARED_LOADS
        for arrival in SHARED_ARRIVALS
        for s in STANDARD_SEEDS
    ]
    entries += [
        Entry(
            stream_spec(SHARED_STAGES_CLUSTER, SHARED_WORKFLOWS[SHARED_STAGES_CLUSTER], load, arrival, s, "stages"),
            (s,),
        )
        for load in SHARED_LOADS
        for arrival in SHARED_ARRIVALS
        for s in STANDARD_SEEDS
    ]
    return Suite(
        "shared",
        tuple(entries),
        modes=(SHARED,),
        seeds=STANDARD_SEEDS,
        description=shared_suite.__doc__ or "",
        skip=SHARED_SKIP,
    )


SHARED_QUICK_WORKFLOWS = 10


def shared_quick_suite() -> Suite:
    """A few minutes: 10-workflow streams of the default mix on hetero-16, loads 0.3 and 0.85, Poisson and
    bursty, one seed, the `shared` mode; every registered scheduler, those the shared suite skips included."""
    seeds = (1,)
    entries = [
        Entry(stream_spec("hetero-16", SHARED_QUICK_WORKFLOWS, load, arrival, s), (s,))
        for load in (0.3, 0.85)
        for arrival in SHARED_ARRIVALS
        for s in seeds
    ]
    return Suite(
        "shared-quick", tuple(entries), modes=(SHARED,), seeds=seeds, description=shared_quick_suite.__doc__ or ""
    )


BUILTIN_SUITES = {
    "quick": quick_suite,
    "standard": standard_suite,
    "real": real_suite,
    "shared": shared_suite,
    "shared-quick": shared_quick_suite,
}
