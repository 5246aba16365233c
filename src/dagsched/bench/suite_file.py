"""User suites from YAML files, and `get_suite`: a built-in suite by name or a suite file by path.

A suite file names its workloads (workflow file globs, generated families, recipes, real traces),
clusters, modes, seeds and schedulers; see `load_suite_file`. Bad fields raise InputError naming the
field (e.g. `workloads[1].generator`) and the fault, at load time rather than in a worker.
"""

from __future__ import annotations

import fnmatch
import glob as globlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from dagsched.bench.suites import (
    BUILTIN_MODES,
    BUILTIN_SUITES,
    Entry,
    Mode,
    ProblemKind,
    ProblemSpec,
    Suite,
    cluster_label,
    family_fits,
    path_stem,
    short_hash,
    trace_spec,
)
from dagsched.generate.traces import manifest, real_traces, wfinstances_root
from dagsched.model.errors import InputError, parse


def get_suite(name_or_path: str | Path) -> Suite:
    """A built-in suite by name, or a YAML suite file; anything else is an InputError naming the choices."""
    key = str(name_or_path)
    if key in BUILTIN_SUITES:
        return BUILTIN_SUITES[key]()
    path = Path(key)
    if path.suffix in (".yaml", ".yml", ".json") or path.exists():
        return load_suite_file(path)
    raise InputError("--suite", f"'{key}' is neither a built-in suite ({', '.join(BUILTIN_SUITES)}) nor a YAML file")


class _GeneratorSpec(BaseModel):
    """`{generator: layered, tasks: [20, 50], seeds: [0, 1], ccr: 0.5}`; no `seeds`: one instance per run seed."""

    model_config = ConfigDict(extra="forbid")
    generator: str
    tasks: list[int] = Field(min_length=1)
    seeds: list[int] | None = None
    ccr: float = Field(0.5, ge=0)

    @field_validator("generator")
    @classmethod
    def _known_family(cls, v: str) -> str:
        from dagsched.generate import ALL_FAMILIES

        if v not in ALL_FAMILIES:
            raise ValueError(f"unknown family '{v}'; choose one of {', '.join(ALL_FAMILIES)}")
        return v

    @field_validator("tasks")
    @classmethod
    def _positive(cls, v: list[int]) -> list[int]:
        if any(n < 1 for n in v):
            raise ValueError("task counts must be >= 1")
        return v


class _RecipeSpec(BaseModel):
    """`{recipe: montage, tasks: [60, 120], seeds: [0]}`; no `seeds`: one instance per run seed."""

    model_config = ConfigDict(extra="forbid")
    recipe: str
    tasks: list[int] = Field(min_length=1)
    seeds: list[int] | None = None

    @field_validator("recipe")
    @classmethod
    def _known_recipe(cls, v: str) -> str:
        from dagsched.generate import RECIPES

        if v not in RECIPES:
            raise ValueError(f"unknown recipe '{v}'; choose one of {', '.join(RECIPES)}")
        return v


class _GlobSpec(BaseModel):
    """`{glob: "flows/*.yaml", family: etl}`: user workflow files, relative to the suite file."""

    model_config = ConfigDict(extra="forbid")
    glob: str
    family: str | None = None


class _TracesSpec(BaseModel):
    """`{traces: all}` or `{traces: "montage/*"}`: real traces by a glob inside the wfinstances folder."""

    model_config = ConfigDict(extra="forbid")
    traces: str


class _ModeSpec(BaseModel):
    """`{name: flaky, noise_cv: 0.3, mtbf_s: 3600}`: any SimConfig fields under a name."""

    model_config = ConfigDict(extra="allow")
    name: str = Field(min_length=1)


class _SuiteFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1)
    description: str = ""
    workloads: list[Any] = Field(min_length=1)
    """each a glob string or a mapping with generator, recipe, traces or glob; parsed by `_workload`"""
    clusters: list[str] = Field(default_factory=lambda: ["hetero-16"], min_length=1)
    modes: list[Any] = Field(default_factory=lambda: ["classic", "cloud"], min_length=1)
    """each "classic", "cloud" or a mapping {name, SimConfig fields...}"""
    seeds: int | list[int] = 3
    schedulers: str | list[str] = "all"
    tree_search_limit: int | None = Field(None, gt=0)
    """MCTS runs only on problems with fewer tasks x nodes than this; absent: everywhere"""

    @field_validator("seeds")
    @classmethod
    def _seeds(cls, v: int | list[int]) -> int | list[int]:
        if isinstance(v, int) and v < 1:
            raise ValueError("give a count >= 1 or a list of seeds")
        if isinstance(v, list) and (not v or any(s < 0 for s in v)):
            raise ValueError("give a non-empty list of non-negative seeds")
        return v


def load_suite_file(path: str | Path) -> Suite:
    """A suite from YAML: name, workloads, clusters, modes, seeds, schedulers.

    ```yaml
    name: mine
    workloads:
      - "flows/*.yaml"                                  # workflow files, relative to this file
      - {generator: layered, tasks: [20, 50]}           # one instance per run seed
      - {generator: random, tasks: [100], seeds: [7]}   # one fixed instance, run with every seed
      - {recipe: montage, tasks: [60]}
      - {traces: "montage/*"}                           # or {traces: all}
    clusters: [hetero-16, my-cluster.yaml]
    modes: [classic, cloud, {name: flaky, noise_cv: 0.3, mtbf_s: 3600}]
    seeds: 5                                            # 1..5, or a list
    schedulers: all                                     # or [heft, cpop]
    tree_search_limit: 50000                            # MCTS only below 50,000 tasks x nodes
    ```

    Bad fields raise InputError naming the field (e.g. `workloads[1].generator`) and the fault.
    """
    import yaml

    path = Path(path)
    if not path.exists():
        raise InputError("--suite", f"suite file not found: {path}")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise InputError("--suite", f"{path} is not valid YAML: {err}") from None
    if not isinstance(data, dict):
        raise InputError("--suite", f"{path} must hold a mapping with name, workloads, clusters, ...")
    spec: _SuiteFile = parse(_SuiteFile, data)
    base = path.resolve().parent

    seeds = tuple(range(1, spec.seeds + 1)) if isinstance(spec.seeds, int) else tuple(dict.fromkeys(spec.seeds))
    clusters = [_resolve_cluster(c, base, f"clusters[{i}]") for i, c in enumerate(spec.clusters)]
    modes = _modes(spec.modes)
    entries: list[Entry] = []
    for i, raw in enumerate(spec.workloads):
        where = f"workloads[{i}]"
        entries += _workload_entries(_workload(raw, where), base, clusters, seeds, where)
    unique = list({e.spec.problem_id: e for e in entries}.values())
    schedulers = None if spec.schedulers in ("all", ["all"]) else tuple(_as_list(spec.schedulers))
    suite = Suite(spec.name, tuple(unique), tuple(modes), schedulers, spec.description, seeds, spec.tree_search_limit)
    suite.scheduler_names()  # unknown names fail now, not after the first cells ran
    return suite


def _as_list(v: str | list[str]) -> list[str]:
    return [s.strip() for s in v.split(",") if s.strip()] if isinstance(v, str) else v


def _resolve_cluster(name: str, base: Path, field_name: str) -> str:
    from dagsched.generate.clusters import PRESETS

    if name in PRESETS:
        return name
    path = Path(name) if Path(name).is_absolute() else base / name
    if path.exists():
        from dagsched.io import read_cluster

        read_cluster(path)  # fail at load on a bad file
        return str(path)
    raise InputError(field_name, f"'{name}' is neither a preset ({', '.join(PRESETS)}) nor a cluster file")


_WORKLOAD_KEYS: dict[str, type[BaseModel]] = {
    "generator": _GeneratorSpec,
    "recipe": _RecipeSpec,
    "traces": _TracesSpec,
    "glob": _GlobSpec,
}


def _workload(raw: Any, where: str) -> str | _GeneratorSpec | _RecipeSpec | _TracesSpec | _GlobSpec:
    """One workloads item, dispatched on its key so that errors name that kind's fields only."""
    if isinstance(raw, str) and raw.strip():
        return raw
    if isinstance(raw, dict):
        for key, model in _WORKLOAD_KEYS.items():
            if key in raw:
                return parse(model, raw, where)  # type: ignore[no-any-return]
    raise InputError(where, f"expected a glob string or a mapping with one of {', '.join(_WORKLOAD_KEYS)}; got {raw!r}")


def _modes(raw: Iterable[Any]) -> list[Mode]:
    out: dict[str, Mode] = {}
    for i, m in enumerate(raw):
        if isinstance(m, str):
            if m not in BUILTIN_MODES:
                raise InputError(
                    f"modes[{i}]", f"unknown mode '{m}'; use classic, cloud or {{name: ..., noise_cv: ...}}"
                )
            mode = BUILTIN_MODES[m]
        elif isinstance(m, dict):
            named: _ModeSpec = parse(_ModeSpec, m, f"modes[{i}]")
            mode = Mode.of(named.name, dict(named.model_extra or {}), f"modes[{i}]")
        else:
            raise InputError(f"modes[{i}]", f"expected classic, cloud or a mapping with a name; got {m!r}")
        if mode.name in out:
            raise InputError(f"modes[{i}]", f"mode name '{mode.name}' used twice")
        out[mode.name] = mode
    return list(out.values())


def _workload_entries(
    w: str | _GeneratorSpec | _RecipeSpec | _TracesSpec | _GlobSpec,
    base: Path,
    clusters: list[str],
    seeds: tuple[int, ...],
    where: str,
) -> list[Entry]:
    if isinstance(w, _GeneratorSpec | _RecipeSpec):
        kind: ProblemKind = "synthetic" if isinstance(w, _GeneratorSpec) else "recipe"
        family = w.generator if isinstance(w, _GeneratorSpec) else w.recipe
        out = []
        for cl in clusters:
            if isinstance(w, _GeneratorSpec) and not family_fits(w.generator, cl):
                raise InputError(where, f"family '{w.generator}' needs GPUs and cluster '{cl}' has none")
            cid = cluster_label(cl)
            for n in w.tasks:
                pairs = [(s, (s,)) for s in seeds] if w.seeds is None else [(g, seeds) for g in w.seeds]
                for gen_seed, run_seeds in pairs:
                    spec = ProblemSpec(
                        kind,
                        family,
                        cl,
                        n_tasks=n,
                        gen_seed=gen_seed,
                        ccr=w.ccr if isinstance(w, _GeneratorSpec) else 0.5,
                        recipe=w.recipe if isinstance(w, _RecipeSpec) else None,
                        cluster_id=cid,
                    )
                    out.append(Entry(spec, run_seeds))
        return out
    if isinstance(w, _TracesSpec):
        root = wfinstances_root()
        within = "*" if w.traces == "all" else w.traces
        chosen = [t for t in real_traces(root) if fnmatch.fnmatch(t.file, within)]
        if not chosen:
            raise InputError(f"{where}.traces", f"'{w.traces}' matches no trace in {root}/MANIFEST.csv")
        return [Entry(trace_spec(t, root, cl), seeds) for cl in clusters for t in chosen]
    pattern = w if isinstance(w, str) else w.glob
    label = None if isinstance(w, str) else w.family
    full = pattern if Path(pattern).is_absolute() else str(base / pattern)
    files = sorted(Path(p) for p in globlib.glob(full, recursive=True) if Path(p).is_file())
    if not files:
        raise InputError(where, f"'{pattern}' matches no file (relative to {base})")
    return [e for p in files for e in _file_entries(p, label, clusters, seeds)]


def _file_entries(path: Path, family: str | None, clusters: list[str], seeds: tuple[int, ...]) -> list[Entry]:
    """A user workflow on every cluster; a classic file brings its own machines, so it runs once."""
    from dagsched.io import detect_format, read_document

    label = family or _manifest_family(path) or "user"
    name = f"{path_stem(str(path))}-{short_hash(path)}"
    targets = ["own"] if detect_format(read_document(path)) == "classic" else clusters
    return [
        Entry(ProblemSpec("file", label, cl, path=str(path), name=name, cluster_id=cluster_label(cl)), seeds)
        for cl in targets
    ]


def _manifest_family(path: Path) -> str | None:
    root = wfinstances_root()
    try:
        rel = path.resolve().relative_to(root).as_posix()
    except ValueError:
        return None
    try:
        return next((e.family for e in manifest(root) if e.file == rel), None)
    except InputError:
        return None
