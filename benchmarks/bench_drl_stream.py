"""What a decision of `drl` costs on a loaded shared cluster: the incremental embedding and the wait rule.

One stream (hetero-16, the `shared` mode, bursty arrivals by default: bursts keep long queues, so a decision
walks many windows of 16 ready tasks), run with `drl` under each setting, alternated `--rounds` times:

- `full`: every window walked and every pick re-embeds every open task (what `PolicyInference` did before
  its row updates: `INCREMENTAL_MAX_SHARE` set below 0 turns the row updates off);
- `incremental`: within one instant only the task rows a pick or a wait changed, and what they reach through
  the message-passing rounds, are recomputed (the default);
- with `--waits policy,idle` each of those under both wait rules (`drl.WAITS`; the stream default is idle).

Prints per run the wall time, decisions, median and p99 decision latency and the steady-state mean completion
time, then the medians per setting and their ratio. The two embeddings are the same network within float32
rounding, so their plans can part at a near-tie and the decision counts differ a little. Prints; asserts nothing.

    .venv/bin/python benchmarks/bench_drl_stream.py --workflows 40 --load 0.85 --arrival bursty --seed 4
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import dagsched.policy.inference as inference
from dagsched.generate import cluster_preset
from dagsched.generate.streams import generate_stream
from dagsched.model import compile_problem
from dagsched.schedulers.drl import DRLScheduler
from dagsched.sim.config import SimConfig, mode_settings
from dagsched.sim.engine import Simulator
from dagsched.sim.metrics import stream_metrics

INCREMENTAL = inference.INCREMENTAL_MAX_SHARE


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workflows", type=int, default=40)
    ap.add_argument("--load", type=float, default=0.85)
    ap.add_argument("--arrival", default="bursty")
    ap.add_argument("--seed", type=int, default=4)
    ap.add_argument("--waits", default="idle", help="drl.WAITS values to run, comma-separated")
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    stream = generate_stream(cluster_preset("hetero-16"), args.workflows, args.load, args.arrival, seed=args.seed)
    cp = compile_problem(stream.problem())
    config = SimConfig(**mode_settings("shared"))
    print(f"{cp.n_tasks} tasks, {args.workflows} workflows, load {args.load}, {args.arrival}, seed {args.seed}")
    walls: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        for waits in args.waits.split(","):
            for embedding in ("full", "incremental"):
                inference.INCREMENTAL_MAX_SHARE = INCREMENTAL if embedding == "incremental" else -1.0
                sim, drl = Simulator(cp, config, args.seed), DRLScheduler(waits=waits)
                drl.reset(cp, sim.decision_point(), args.seed)
                t0 = time.perf_counter()
                trace = sim.run(drl)
                wall = time.perf_counter() - t0
                lat = np.array(trace.decision_latency_s) * 1e3
                mean = stream_metrics(cp, trace, config).completion_mean
                key = f"waits={waits} {embedding}"
                walls.setdefault(key, []).append(wall)
                print(
                    f"  {key:28s} {wall:7.1f} s  {len(lat):6d} decisions  median {np.median(lat):6.2f} ms  "
                    f"p99 {np.percentile(lat, 99):7.2f} ms  mean completion {mean:8.1f} s",
                    flush=True,
                )
    inference.INCREMENTAL_MAX_SHARE = INCREMENTAL
    print("median wall time per setting:")
    for waits in args.waits.split(","):
        full = statistics.median(walls[f"waits={waits} full"])
        inc = statistics.median(walls[f"waits={waits} incremental"])
        print(f"  waits={waits}: full {full:.1f} s, incremental {inc:.1f} s, speed-up {full / inc:.2f}x")


if __name__ == "__main__":
    main()
