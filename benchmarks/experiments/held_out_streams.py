"""The held-out streams the shared-cluster experiments run on, and their command-line options.

Imported by the experiments beside it (`python benchmarks/experiments/dispatch_index_held_out.py` puts this
folder first on the path). Seeds 101 and up by default (`stream_arguments`), 401 and up for the judged groups of the
stream goals (`group_arguments`): no suite and no training run uses them.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Sequence

from dagsched.generate import cluster_preset
from dagsched.generate.streams import Source, Stream, generate_stream
from dagsched.model import compile_problem
from dagsched.model.compiled import CompiledProblem

GROUPS = (
    "hetero-16:poisson:default,hetero-16:bursty:default,homog-8:poisson:default,homog-8:bursty:default,"
    "homog-8:poisson:stages,homog-8:bursty:stages"
)
"""The judged groups of the stream goals: cluster:arrival:mix (`stages`: stage-structured analytics jobs alone)."""


def stream_arguments(description: str | None) -> argparse.ArgumentParser:
    """The held-out streams' options: size, load, arrivals, cluster, seeds."""
    ap = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workflows", type=int, default=80)
    ap.add_argument("--load", type=float, default=0.85)
    ap.add_argument("--arrival", default="poisson")
    ap.add_argument("--cluster", default="hetero-16")
    ap.add_argument("--seeds", default="105,106,107,108,109,110")
    return ap


def group_arguments(description: str | None) -> argparse.ArgumentParser:
    """The judged groups' options: which groups, workflows per stream by cluster, load, seeds (401 and up: held out
    from every choice)."""
    ap = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--groups", default=GROUPS, help="cluster:arrival:mix, comma-separated")
    ap.add_argument("--workflows", default="hetero-16=150,homog-8=100", help="workflows per stream, per cluster")
    ap.add_argument("--load", type=float, default=0.85)
    ap.add_argument("--seeds", default="401,402,403,404,405,406,407,408,409,410")
    return ap


def workflows_by_cluster(args: argparse.Namespace) -> dict[str, int]:
    """`--workflows` as {cluster: workflows per stream}."""
    return {k: int(v) for k, v in (kv.split("=") for kv in args.workflows.split(","))}


def generated_streams(
    args: argparse.Namespace, mix: str | Sequence[Source] = "default"
) -> Iterator[tuple[int, Stream]]:
    """(seed, stream) of `mix` for each of `--seeds`, as `stream_arguments` describes them."""
    cluster = cluster_preset(args.cluster)
    for seed in (int(s) for s in args.seeds.split(",")):
        yield seed, generate_stream(cluster, args.workflows, args.load, args.arrival, seed=seed, mix=mix)


def held_out_streams(args: argparse.Namespace) -> Iterator[tuple[int, CompiledProblem]]:
    """(seed, compiled stream) for each of `--seeds`."""
    for seed, stream in generated_streams(args):
        yield seed, compile_problem(stream.problem())
