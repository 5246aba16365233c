"""Simulator scaling on workflow streams: task events per second from 1,000 to 100,000+ tasks on large-100.

For each size a stream of the default mix (load 0.85, Poisson, `shared` mode: noise CV 0.3, failures,
stragglers) is planned once by FIFO; the engine then replays that run's placements (`StreamReplay`,
which does no scheduling work beyond a lookup), so the time outside `decide()` is the engine's own.
A task event is a start or an end (two per task, more for failed or migrated attempts). Also printed:
FIFO's whole run (engine + scheduler), the stream metrics and the validator. Prints; asserts nothing.

Run: .venv/bin/python benchmarks/bench_streams.py [--workflows 13,130,1350] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from dagsched.bench.suites import SHARED
from dagsched.generate import cluster_preset
from dagsched.generate.streams import generate_stream
from dagsched.model import compile_problem
from dagsched.schedulers import make_scheduler
from dagsched.schedulers.base import Scheduler
from dagsched.sim.engine import Decision, Simulator
from dagsched.sim.metrics import stream_metrics
from dagsched.sim.validate import validate_trace


class StreamReplay(Scheduler):
    """Starts each task on its recorded node once its recorded start has come and it fits: no policy work.

    The replayed run has the same seed, so its hidden noise, failures and stragglers are the recorded
    run's; a task whose node failed under it is started again at its next recorded attempt.
    """

    name = "stream_replay"

    def __init__(self, attempts: list[tuple[int, int, float]]) -> None:
        super().__init__()
        self.todo: dict[int, list[tuple[float, int]]] = {}
        for t, nd, start in attempts:
            self.todo.setdefault(t, []).append((start, nd))

    def decide(self, sim: Simulator) -> Decision:
        free = sim.free.copy()
        out, wake = [], np.inf
        for t in sim.ready_tasks():
            plan = self.todo.get(t)
            if not plan:
                continue
            start, nd = plan[0]
            if start > sim.now + 1e-9:
                wake = min(wake, start)
                continue
            req = sim.request(t)
            if sim.can_start(t, nd) and all(free[nd, r] + 1e-9 >= req[r] for r in range(3)):
                free[nd] -= req
                out.append((t, nd))
                plan.pop(0)
        return Decision(out, wake if np.isfinite(wake) else None)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workflows", default="13,130,1350", help="stream lengths (about 75 tasks each)")
    parser.add_argument("--cluster", default="large-100")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    config = SHARED.config()
    print(f"cluster {args.cluster}, default mix, load 0.85, Poisson, shared mode; engine = run minus decide()\n")
    header = f"{'workflows':>9}{'tasks':>9}{'events':>9}{'engine s':>10}{'events/s':>12}{'fifo run s':>12}"
    header += f"{'metrics s':>11}{'validate s':>12}{'util cpu':>10}"
    print(header)
    for n in (int(x) for x in args.workflows.split(",")):
        stream = generate_stream(cluster_preset(args.cluster), n, 0.85, "poisson", seed=1)
        cp = compile_problem(stream.problem())
        sim = Simulator(cp, config, 1)
        fifo = make_scheduler("fifo")
        fifo.reset(cp, sim.decision_point(), 1)
        t0 = time.perf_counter()
        trace = sim.run(fifo)
        fifo_s = time.perf_counter() - t0
        recorded = [(a.task, a.node, a.start) for a in sorted(trace.attempts, key=lambda a: a.start)]
        engine_s = []
        for _ in range(args.repeats):
            replay_sim = Simulator(cp, config, 1)
            replay = StreamReplay(recorded)
            replay.reset(cp, replay_sim.decision_point(), 1)
            t0 = time.perf_counter()
            replayed = replay_sim.run(replay)
            engine_s.append(time.perf_counter() - t0 - sum(replayed.decision_latency_s))
        events = 2 * len(replayed.attempts)
        t0 = time.perf_counter()
        sm = stream_metrics(cp, trace, config)
        metrics_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        report = validate_trace(cp, trace)
        validate_s = time.perf_counter() - t0
        assert report.ok, report.violations[:3]
        engine = statistics.median(engine_s)
        print(
            f"{n:>9}{cp.n_tasks:>9}{events:>9}{engine:>10.2f}{events / engine:>12,.0f}{fifo_s:>12.2f}"
            f"{metrics_s:>11.2f}{validate_s:>12.2f}{sm.utilisation['cpu']:>10.3f}"
        )


if __name__ == "__main__":
    main()
