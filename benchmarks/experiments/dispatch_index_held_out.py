"""The learned dispatch index (`drl_stream`) against srpt_hold on held-out streams: quality, ablations, decision cost.

Each stream (seeds 201 and up by default: no suite, training run or other bench uses them; training streams
are 10,000 and up) runs every variant with the same simulator seed (the same noise, stragglers and failures).
Per variant the bench prints, paired with `srpt_hold` stream by stream: the mean of the ratio of steady-state
mean completion times with a 95 % bootstrap interval and the streams it is shorter on, the ratio of p95
completion and of cost, the difference in SLA hit rate; then the decision cost: the whole run's seconds against
`fair`'s on the same stream (when `fair` is among the variants), and the median and p99 of one decision overall
and over the decisions with at least `--busy` ready tasks (wall time, and the median of the CPU time the
decision took, which waiting for a core on a shared machine does not inflate).

Variants: a registered scheduler's name; `drl_stream@imitation` (the weights at the end of the imitation stage,
before ES: is the RL stage worth it?); `drl_stream-nohold` (the shipped weights, the hold switched off); and
`drl_stream@PATH` for other weights. `--mix traces` is a mix where the real WfCommons traces dominate (70 % of
the workflows; the default mix has 10 %). Prints; asserts nothing.

    .venv/bin/python benchmarks/experiments/dispatch_index_held_out.py --workflows 150 --load 0.85 --arrival bursty \
        --seeds 201,202,203,204,205,206,207,208,209,210 \
        --variants drl_stream,drl_stream@imitation,drl_stream-nohold,fair
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

import numpy as np
from held_out_streams import generated_streams, stream_arguments

from dagsched.bench.stats import bootstrap_ci
from dagsched.generate.streams import MIXES, Source
from dagsched.model import compile_problem
from dagsched.policy.stream_index import SHIPPED
from dagsched.schedulers import make_scheduler
from dagsched.schedulers.base import Scheduler
from dagsched.schedulers.drl_stream import DRLStream
from dagsched.sim.config import SimConfig, mode_settings
from dagsched.sim.engine import Simulator
from dagsched.sim.metrics import stream_metrics

TRACES_MIX = (
    Source("science", "trace", (), (), 0.70),
    Source("etl", "synthetic", ("etl_star",), (10, 20, 50, 100), 0.10),
    Source("analytics", "synthetic", ("random",), (10, 20, 50, 100, 200), 0.10),
    Source("ml", "synthetic", ("ml_pipeline",), (10, 20, 50), 0.10),
)
"""A mix where the real WfCommons traces (up to 350 tasks) are 70 % of the workflows."""
IMITATION = SHIPPED.with_name(SHIPPED.stem + "-imitation.safetensors")


def make(variant: str) -> Scheduler:
    if variant == "drl_stream@imitation":
        return DRLStream(IMITATION)
    if variant == "drl_stream-nohold":
        return DRLStream(hold=False)
    if variant.startswith("drl_stream@"):
        return DRLStream(variant.split("@", 1)[1])
    return make_scheduler(variant)


def timed(scheduler: Scheduler, log: list[tuple[int, float, float]]) -> Scheduler:
    """The scheduler, with each decision's ready-task count, wall seconds and this thread's CPU seconds appended to
    `log` (on a shared machine the wall time includes waiting for a core; the CPU time does not)."""
    decide = scheduler.decide

    def timed_decide(dp: Any) -> Any:
        t0, c0 = time.perf_counter(), time.thread_time()
        out = decide(dp)
        log.append((len(dp.ready), time.perf_counter() - t0, time.thread_time() - c0))
        return out

    scheduler.decide = timed_decide  # type: ignore[method-assign]
    return scheduler


def main() -> None:
    ap = stream_arguments(__doc__)
    ap.set_defaults(seeds="201,202,203,204,205,206,207,208,209,210")
    ap.add_argument("--mix", default="default", choices=[*MIXES, "traces"])
    ap.add_argument("--variants", default="drl_stream,drl_stream@imitation,drl_stream-nohold,srpt_hold,fair")
    ap.add_argument("--busy", type=int, default=200, help="decisions with at least this many ready tasks")
    args = ap.parse_args()
    names = list(dict.fromkeys(["srpt_hold", *[v for v in args.variants.split(",") if v]]))
    config = SimConfig(**mode_settings("shared"))
    mix = TRACES_MIX if args.mix == "traces" else args.mix
    rows: dict[str, list[dict[str, float]]] = defaultdict(list)
    decisions: dict[str, list[tuple[int, float, float]]] = defaultdict(list)
    for seed, stream in generated_streams(args, mix=mix):
        cp = compile_problem(stream.problem())
        for v in names:
            sim, log = Simulator(cp, config, seed), decisions[v]
            sched = timed(make(v), log)
            sched.reset(cp, sim.decision_point(), seed)
            t0 = time.perf_counter()
            trace = sim.run(sched)
            run_s = time.perf_counter() - t0
            m = stream_metrics(cp, trace, config)
            rows[v].append(
                {"mean": m.completion_mean, "p95": m.completion_p95, "sla": m.sla_hit_rate, "cost": m.cost, "s": run_s}
            )
            print(
                f"seed {seed} {v:22s} mean completion {m.completion_mean:8.1f} s  p95 {m.completion_p95:8.1f} s  "
                f"SLA {m.sla_hit_rate:.3f}  cost {m.cost:7.2f}  {run_s:6.1f} s  ({cp.n_tasks} tasks)",
                flush=True,
            )
    print(
        f"\n{args.cluster}, {args.workflows} workflows of the {args.mix} mix, load {args.load}, {args.arrival}, "
        f"seeds {args.seeds}: paired with srpt_hold, mean [95 % CI]"
    )
    base = rows["srpt_hold"]
    for v in names:
        r = rows[v]
        ratio = np.array([a["mean"] / b["mean"] for a, b in zip(r, base, strict=True)])
        low, high = bootstrap_ci(ratio)
        p95 = np.array([a["p95"] / b["p95"] for a, b in zip(r, base, strict=True)])
        cost = np.array([a["cost"] / b["cost"] for a, b in zip(r, base, strict=True)])
        sla = np.array([a["sla"] - b["sla"] for a, b in zip(r, base, strict=True)])
        print(
            f"  {v:22s} mean completion {ratio.mean():.3f} [{low:.3f}, {high:.3f}] shorter on "
            f"{int((ratio < 1).sum())}/{len(ratio)}; p95 {p95.mean():.3f} [{bootstrap_ci(p95)[0]:.3f}, "
            f"{bootstrap_ci(p95)[1]:.3f}]; SLA {sla.mean():+.3f} [{bootstrap_ci(sla)[0]:+.3f}, "
            f"{bootstrap_ci(sla)[1]:+.3f}]; cost {cost.mean():.3f} [{bootstrap_ci(cost)[0]:.3f}, "
            f"{bootstrap_ci(cost)[1]:.3f}]"
        )
    print("decision cost (this machine, shared; medians of the streams' whole-run time, over fair's if it ran):")
    fair_s = np.array([a["s"] for a in rows["fair"]]) if "fair" in rows else None
    for v in names:
        run_s = np.array([a["s"] for a in rows[v]])
        versus = ""
        if fair_s is not None:
            versus = f" = {np.median(run_s / fair_s):.2f} x fair's (max {np.max(run_s / fair_s):.2f})"
        lat = np.array(decisions[v])
        busy = lat[lat[:, 0] >= args.busy] if len(lat) else np.zeros((0, 3))
        busy_txt = (
            f"median {np.median(busy[:, 1]) * 1e3:.3f} ms (CPU {np.median(busy[:, 2]) * 1e3:.3f} ms), p99 "
            f"{np.percentile(busy[:, 1], 99) * 1e3:.3f} ms over {len(busy)}"
            if len(busy)
            else "none"
        )
        print(
            f"  {v:22s} run {np.median(run_s):6.1f} s{versus}; decision median {np.median(lat[:, 1]) * 1e3:.3f} ms "
            f"(CPU {np.median(lat[:, 2]) * 1e3:.3f} ms), p99 {np.percentile(lat[:, 1], 99) * 1e3:.3f} ms over "
            f"{len(lat)}; with >= {args.busy} ready: {busy_txt}"
        )


if __name__ == "__main__":
    main()
