"""How the learned policy decides on a shared cluster: the offered window's order and when it may wait.

On held-out streams (hetero-16, the `shared` mode's noise, failures and stragglers; seeds 101 and up by
default, which no suite uses), each variant of the `drl` decode runs beside the online heuristics, and the
bench prints each stream's steady-state mean completion time, then per variant the mean of its ratio to
`fair`'s on the same stream with a 95 % bootstrap interval and wins/ties/losses against `fair`.

A variant is `WINDOW/WAITS/ACTION` (`features.WINDOWS`, `drl.WAITS`, `drl.ACTIONS`); `drl` alone is the
scheduler's defaults. `srpt+eft` is the ablation of the learned part: the SRPT window's order (the workflow
with the least work left first, then upward rank) with every task on its earliest-finish startable node and no
waits, i.e. `srpt/idle/rank_node` with the policy's node choice replaced by the earliest finish; `drl+eft` is
the same ablation inside drl's own decision loop (drl's defaults, the earlier of the two nodes).
`srpt+reserve@M` is `srpt+eft` that may leave a node idle (the lever the work-conserving rules lack): a task is
held back, the tasks behind it served, when a node that cannot start it now (busy, or its inputs not there yet)
would finish it earlier than every node that can, by more than M of its run time there (the registered
`srpt_hold` with margin M; `srpt_hold` alone is its default margin); `drl+reserve@M` is drl with the same hold
(`DRLScheduler(reserve=M)`), `drl+eft+reserve@M` drl+eft with it. Prints; asserts nothing.

    .venv/bin/python benchmarks/bench_stream_decode.py --workflows 80 --load 0.85 --arrival poisson \
        --seeds 105,106,107,108,109,110 --variants rank/policy/pair,srpt/idle/pair,srpt/idle/rank_node
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from dagsched.bench.stats import bootstrap_ci
from dagsched.generate import cluster_preset
from dagsched.generate.streams import Source, Stream, generate_stream
from dagsched.model import compile_problem
from dagsched.model.compiled import CompiledProblem
from dagsched.schedulers import make_scheduler
from dagsched.schedulers.base import Scheduler
from dagsched.schedulers.srpt_hold import SRPTHold
from dagsched.sim.config import SimConfig, mode_settings
from dagsched.sim.engine import Simulator
from dagsched.sim.metrics import stream_metrics


class SRPTEarliestFinish(SRPTHold):
    """The workflow with the least work left first (running tasks whole), its longest tail first, each task on
    the startable node that finishes it first: drl's stream decode without the policy (`srpt_hold` that never
    holds)."""

    name = "srpt+eft"

    def __init__(self) -> None:
        super().__init__(margin=None)


def make(variant: str) -> Scheduler:
    from dagsched.schedulers.drl import DRLScheduler, top_finish_nodes

    class DecodeEarliestFinish(DRLScheduler):
        """drl's stream decode (its window, waits and decision loop) with the policy's choice between the two
        nodes replaced by the earlier finish: the learned part's ablation inside drl itself."""

        def _pick(self, obs: Any) -> int:
            rows = np.flatnonzero(obs.legal.any(axis=1))
            if not len(rows):
                return len(obs.candidates) * obs.n_nodes  # wait
            return int(rows[0]) * obs.n_nodes + int(top_finish_nodes(obs, int(rows[0]))[0])

    if variant == "srpt+eft":
        return SRPTEarliestFinish()
    if variant.startswith("srpt+reserve@"):
        return SRPTHold(margin=float(variant.split("@")[1]))
    if variant.startswith("drl+reserve@"):
        return DRLScheduler(reserve=float(variant.split("@")[1]))
    if variant == "drl+eft":
        return DecodeEarliestFinish()
    if variant.startswith("drl+eft+reserve@"):
        return DecodeEarliestFinish(reserve=float(variant.split("@")[1]))
    if variant == "drl":
        return DRLScheduler()
    if variant.count("/") == 2:
        window, waits, action = variant.split("/")
        return DRLScheduler(window=window, waits=waits, action=action)
    return make_scheduler(variant)


def stream_arguments(description: str | None) -> argparse.ArgumentParser:
    """The held-out streams' options, shared by the stream benches: size, load, arrivals, cluster, seeds."""
    ap = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workflows", type=int, default=80)
    ap.add_argument("--load", type=float, default=0.85)
    ap.add_argument("--arrival", default="poisson")
    ap.add_argument("--cluster", default="hetero-16")
    ap.add_argument("--seeds", default="105,106,107,108,109,110")
    return ap


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


def main() -> None:
    ap = stream_arguments(__doc__)
    ap.add_argument("--variants", default="srpt+eft,rank/policy/pair,srpt/idle/pair,srpt/idle/rank_node")
    args = ap.parse_args()
    names = ["fair", *[v for v in args.variants.split(",") if v and v != "fair"]]
    config = SimConfig(**mode_settings("shared"))
    means: dict[str, list[float]] = {v: [] for v in names}
    for seed, cp in held_out_streams(args):
        for v in names:
            sim, sched = Simulator(cp, config, seed), make(v)
            sched.reset(cp, sim.decision_point(), seed)
            t0 = time.perf_counter()
            trace = sim.run(sched)
            m = stream_metrics(cp, trace, config)
            means[v].append(m.completion_mean)
            print(
                f"seed {seed} {v:24s} mean completion {m.completion_mean:8.1f} s  p95 {m.completion_p95:8.1f} s  "
                f"SLA {m.sla_hit_rate:.3f}  {time.perf_counter() - t0:6.1f} s",
                flush=True,
            )
    fair = np.array(means["fair"])
    print(
        f"\n{args.workflows} workflows, load {args.load}, {args.arrival}, seeds {args.seeds}: mean completion / fair's"
    )
    for v in names[1:]:
        ratio = np.array(means[v]) / fair
        low, high = bootstrap_ci(ratio)
        w, t = int((ratio < 0.999).sum()), int((abs(ratio - 1) <= 0.001).sum())
        print(f"  {v:24s} {ratio.mean():.3f} [{low:.3f}, {high:.3f}]  W/T/L vs fair {w}/{t}/{len(ratio) - w - t}")


if __name__ == "__main__":
    main()
