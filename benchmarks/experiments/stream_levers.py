"""The stream levers as hand rules: a parallelism cap (`srpt_cap`, `fair_cap`) and an admission hold (`srpt_admit`)
against `srpt_hold` and `fair`, paired stream by stream on held-out streams.

Each group is a cluster, an arrival process and a mix (`default`, or `stages`: stage-structured analytics jobs
alone); each stream of a group (seeds 401 and up by default: no suite, training run or other bench uses them) runs
every variant with the same simulator seed in the `shared` mode (the same noise, stragglers and failures). Per group
and variant it prints the mean over the streams of the ratio of steady-state mean completion to `srpt_hold`'s and
to `fair`'s [95 % bootstrap interval], the streams it is shorter on, and the ratios of p95 completion and cost and
the difference in SLA hit rate against `srpt_hold`. Prints; asserts nothing.

A variant is a registered name or `name@x` with a parameter: `srpt_cap@p` (heSRPT's speed-up exponent; `srpt_cap_hard@p`
makes its cap a hard limit, as `fair_cap`'s), `srpt_admit@u` (the busy share of cores that counts as saturated),
`fair_cap@f` (the cap factor), `fair_cap_local@t` or `fair_cap_local@t:f:a` (how workflows of equal key are ordered:
`position`, `work_left` or `response_ratio`, its own; then the cap factor and fair's alpha),
`fair_cap_gpu_first@first_only` (GPU tasks first, the size in cores alone) or `fair_cap_gpu_first@size_only`
(GPU-seconds in the size, no GPU tasks first). The learned dispatcher:
`drl_stream` (the default weights, which have no lever heads), `drl_stream@levers` (the weights with the cap and
admission heads, `stream-index-v1-levers.safetensors`), `drl_stream@imitation` (the default weights' imitation start),
`drl_stream@PATH` (other weights), each also as `drl_stream-nocap`, `drl_stream-noadmit` or `drl_stream-nolevers` (the
cap, the admission or both switched off), `drl_stream-onenode` (one candidate node, the node head unused) or
`drl_stream-allnodes` (every startable node a candidate, not the three earliest-finish), and `drl_stream-local` (the
node chosen by `srpt_local`'s rule instead of the node head, as `drl_stream_levers` does: `drl_stream-local@levers` is
it, `drl_stream@levers` the same weights with the node head); the registered `fair_cap_local` is the hand rule with the
cap and that node rule.
`--free-transfers` makes every transfer instant (the ablation that tells whether a rule's gain is the data's).
`fair_cap`'s factor was chosen this way on training streams (seeds 301-302, never judged):

    nice -n 19 .venv/bin/python benchmarks/experiments/stream_levers.py --seeds 301,302 \
        --groups hetero-16:poisson:default,homog-8:poisson:stages --workflows hetero-16=30,homog-8=30 \
        --variants fair_cap@1,fair_cap@2,fair_cap@4

and the figures of docs/shared-cluster.md come from

    nice -n 19 .venv/bin/python benchmarks/experiments/stream_levers.py \
        --seeds 401,402,403,404,405,406,407,408,409,410 --workflows hetero-16=30,homog-8=30

and those of the learned levers from the same command with `--variants srpt_cap,srpt_admit,fair_cap,
drl_stream@levers,drl_stream-nocap@levers,drl_stream-noadmit@levers,drl_stream` (docs/shared-cluster.md names each
group's command).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable

import numpy as np
from held_out_streams import group_arguments, workflows_by_cluster

from dagsched.bench.stats import bootstrap_ci
from dagsched.generate import cluster_preset
from dagsched.generate.streams import generate_stream
from dagsched.model import compile_problem
from dagsched.policy.stream_index import SHIPPED
from dagsched.schedulers import make_scheduler
from dagsched.schedulers.base import Scheduler
from dagsched.schedulers.drl_stream import DRLStream
from dagsched.schedulers.drl_stream_levers import DRLStreamLevers
from dagsched.schedulers.fair_cap import WeightedFairCap
from dagsched.schedulers.fair_cap_gpu_first import FairCapGPUFirst
from dagsched.schedulers.fair_cap_local import FairCapLocal
from dagsched.schedulers.srpt_admit import SRPTAdmit
from dagsched.schedulers.srpt_cap import SRPTCap
from dagsched.sim.config import SimConfig, mode_settings
from dagsched.sim.engine import Simulator
from dagsched.sim.metrics import stream_metrics

VARIANTS = "srpt_hold,fair,srpt_cap,srpt_admit,fair_cap"


IMITATION = SHIPPED.with_name(SHIPPED.stem + "-imitation.safetensors")
LEVERS = SHIPPED.with_name(SHIPPED.stem + "-levers.safetensors")
LEVERS_OFF = {"drl_stream": {}, "drl_stream-nocap": {"cap": False}, "drl_stream-noadmit": {"admit": False}}
LEVERS_OFF["drl_stream-nolevers"] = {"cap": False, "admit": False}
LEVERS_OFF["drl_stream-onenode"] = {"candidates": 1}  # the node head unused: the earliest-finish node, as srpt_hold
LEVERS_OFF["drl_stream-allnodes"] = {"candidates": 1_000_000}  # the node head scores every startable node


def make(variant: str) -> Scheduler:
    """A registered scheduler, one of the levers' rules at a parameter (`name@x`), or the learned dispatcher at some
    weights with a lever switched off."""
    name, _, x = variant.partition("@")
    weights = {"imitation": IMITATION, "levers": LEVERS, "": SHIPPED}.get(x, x)
    if name in LEVERS_OFF:
        return DRLStream(weights, **LEVERS_OFF[name])
    if name == "drl_stream-local":
        return DRLStreamLevers(weights)
    if not x:
        return make_scheduler(name)
    if name == "fair_cap_gpu_first":  # an ablation: `first_only` (the size in cores alone) or `size_only`
        sched = FairCapGPUFirst()
        sched.gpu_in_size, sched.gpu_first = {"first_only": (False, True), "size_only": (True, False)}[x]
        return sched
    if name == "fair_cap_local":  # the order of the workflows holding nothing (`fair.TIES`), the cap factor, alpha
        ties, *numbers = x.split(":")
        sched = FairCapLocal(*(float(v) for v in numbers[:1]))
        sched.ties = ties
        sched.alpha = float(numbers[1]) if len(numbers) > 1 else sched.alpha
        return sched
    rules: dict[str, Callable[[float], Scheduler]] = {
        "srpt_cap": lambda v: SRPTCap(p=v),
        "srpt_cap_hard": lambda v: SRPTCap(p=v, hard=True),
        "srpt_admit": lambda v: SRPTAdmit(saturated=v),
        "fair_cap": WeightedFairCap,
    }
    return rules[name](float(x))


def paired(values: list[float], base: list[float]) -> tuple[np.ndarray, float, float]:
    ratio = np.array([a / b for a, b in zip(values, base, strict=True)])
    low, high = bootstrap_ci(ratio)
    return ratio, low, high


def main() -> None:
    ap = group_arguments(__doc__)
    ap.add_argument("--variants", default=VARIANTS)
    ap.add_argument(
        "--free-transfers", action="store_true", help="every node at 1e18 bytes/s and no latency: data moves at once"
    )
    args = ap.parse_args()
    sizes = workflows_by_cluster(args)
    seeds = [int(s) for s in args.seeds.split(",")]
    names = [v for v in args.variants.split(",") if v]
    names = list(dict.fromkeys(["srpt_hold", "fair", *names]))
    config = SimConfig(**mode_settings("shared"))
    pooled: dict[str, list[float]] = defaultdict(list)
    for group in args.groups.split(","):
        cluster, arrival, mix = group.split(":")
        rows: dict[str, list[dict[str, float]]] = defaultdict(list)
        for seed in seeds:
            nodes = cluster_preset(cluster)
            if args.free_transfers:
                free = [n.model_copy(update={"bandwidth": 1e18}) for n in nodes.nodes]
                nodes = nodes.model_copy(update={"nodes": free, "latency": 0.0, "links": []})
            stream = generate_stream(nodes, sizes[cluster], args.load, arrival, seed=seed, mix=mix)
            cp = compile_problem(stream.problem())
            for v in names:
                sim = Simulator(cp, config, seed)
                sched = make(v)
                sched.reset(cp, sim.decision_point(), seed)
                t0 = time.perf_counter()
                trace = sim.run(sched)
                run_s = time.perf_counter() - t0
                m = stream_metrics(cp, trace, config)
                rows[v].append(
                    {"mean": m.completion_mean, "p95": m.completion_p95, "sla": m.sla_hit_rate, "cost": m.cost}
                )
                print(
                    f"{group} seed {seed} {v:14s} mean completion {m.completion_mean:8.1f} s  p95 "
                    f"{m.completion_p95:8.1f} s  SLA {m.sla_hit_rate:.3f}  cost {m.cost:7.2f}  {run_s:6.1f} s  "
                    f"({cp.n_tasks} tasks)",
                    flush=True,
                )
        print(
            f"\n{group}: {sizes[cluster]} workflows, load {args.load}, seeds {args.seeds}: mean [95 % CI] of the "
            "ratio per stream"
        )
        hold = [r["mean"] for r in rows["srpt_hold"]]
        fair = [r["mean"] for r in rows["fair"]]
        for v in names:
            means = [r["mean"] for r in rows[v]]
            vs_hold, lo_h, hi_h = paired(means, hold)
            vs_fair, lo_f, hi_f = paired(means, fair)
            pooled[v] += list(vs_fair)
            p95, lo_p, hi_p = paired([r["p95"] for r in rows[v]], [r["p95"] for r in rows["srpt_hold"]])
            cost, lo_c, hi_c = paired([r["cost"] for r in rows[v]], [r["cost"] for r in rows["srpt_hold"]])
            sla = np.array([a["sla"] - b["sla"] for a, b in zip(rows[v], rows["srpt_hold"], strict=True)])
            lo_s, hi_s = bootstrap_ci(sla)
            print(
                f"  {v:14s} / srpt_hold {vs_hold.mean():.3f} [{lo_h:.3f}, {hi_h:.3f}] shorter on "
                f"{int((vs_hold < 1).sum())}/{len(vs_hold)}; / fair {vs_fair.mean():.3f} [{lo_f:.3f}, {hi_f:.3f}] "
                f"shorter on {int((vs_fair < 1).sum())}/{len(vs_fair)}; p95 / srpt_hold {p95.mean():.3f} "
                f"[{lo_p:.3f}, {hi_p:.3f}]; SLA {sla.mean():+.3f} [{lo_s:+.3f}, {hi_s:+.3f}]; cost / srpt_hold "
                f"{cost.mean():.3f} [{lo_c:.3f}, {hi_c:.3f}]",
                flush=True,
            )
        print()
    if len(args.groups.split(",")) > 1:
        print("every group: mean ratio to fair over all streams")
        for v in names:
            r = np.array(pooled[v])
            lo, hi = bootstrap_ci(r)
            print(f"  {v:14s} {r.mean():.3f} [{lo:.3f}, {hi:.3f}] over {len(r)} streams")


if __name__ == "__main__":
    main()
