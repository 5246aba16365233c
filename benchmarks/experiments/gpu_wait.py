"""Where the GPU work of a shared stream waits: what holds a ready GPU task back, and what the GPU workflows weigh.

On hetero-16 and large-100 the default mix's GPU work binds. Each stream (hetero-16 by default, 150 workflows at load
0.85, the `shared` mode) runs each scheduler with the same simulator seed. Per run it prints, over the steady state's
workflows, how many have a task that needs a GPU, their mean completion against the others' and their share of the
sum, and, over every GPU task, the time from its last parent's end (its submission for an entry task) to its first
start, split by what the GPU nodes held meanwhile (from the trace's attempts):

- `no GPU`: no GPU node had the task's GPUs free;
- `room`: some node had the GPUs free, none with the cores and memory too (tasks beside them held those);
- `other`: some GPU node had all of it free: the task's inputs were still on their way there, the node was down, or
  the scheduler served other tasks first.

Prints; asserts nothing.

    nice -n 19 .venv/bin/python benchmarks/experiments/gpu_wait.py --seeds 301,302,303,304 \
        --schedulers srpt_hold,fair_cap_local,fair_cap_gpu_first
"""

from __future__ import annotations

import argparse

import numpy as np

from dagsched.generate import cluster_preset
from dagsched.generate.streams import generate_stream
from dagsched.model import compile_problem
from dagsched.model.compiled import CompiledProblem
from dagsched.schedulers import simulate
from dagsched.sim.config import SimConfig, mode_settings
from dagsched.sim.metrics import steady_state, workflow_outcomes
from dagsched.sim.trace import Trace


def gpu_task_waits(cp: CompiledProblem, trace: Trace) -> dict[str, float]:
    """Seconds GPU tasks waited between ready and first start, by what the GPU nodes held meanwhile."""
    gpu_nodes = np.flatnonzero(cp.cap[:, 2] > 0)
    events: list[tuple[float, int, int, np.ndarray]] = []  # (time, 0 = end before 1 = start, node, change of free)
    done_s = np.full(cp.n_tasks, np.nan)
    first_start_s = np.full(cp.n_tasks, np.inf)
    for a in trace.attempts:
        first_start_s[a.task] = min(first_start_s[a.task], a.start)
        if a.outcome == "done":
            done_s[a.task] = a.end
        if cp.cap[a.node, 2] > 0:
            events += [(a.start, 1, a.node, -cp.req[a.task]), (a.end, 0, a.node, cp.req[a.task])]
    events.sort(key=lambda e: (e[0], e[1]))
    free = cp.cap[gpu_nodes].copy()  # rows: the GPU nodes, in order
    row = {int(n): i for i, n in enumerate(gpu_nodes)}
    times, states = [0.0], [free.copy()]
    for t, _, node, change in events:
        free[row[node]] += change
        times.append(t)
        states.append(free.copy())
    at = np.array(times)
    waits = dict.fromkeys(("no GPU", "room", "other"), 0.0)
    for t in np.flatnonzero(cp.req[:, 2] > 0).tolist():
        parents = cp.preds(t)
        ready = float(done_s[parents].max()) if len(parents) else float(cp.wf_submit_s[cp.task_wf[t]])
        start = float(first_start_s[t])
        if not np.isfinite(start) or start <= ready:
            continue
        for i in range(int(np.searchsorted(at, ready, side="right")) - 1, int(np.searchsorted(at, start))):
            lo, hi = max(at[i], ready), min(at[i + 1] if i + 1 < len(at) else start, start)
            if hi <= lo:
                continue
            gpus = states[i][:, 2] >= cp.req[t, 2]
            if not gpus.any():
                waits["no GPU"] += hi - lo
            elif not (gpus & np.all(states[i] >= cp.req[t] - 1e-9, axis=1)).any():
                waits["room"] += hi - lo
            else:
                waits["other"] += hi - lo
    return waits


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cluster", default="hetero-16")
    ap.add_argument("--workflows", type=int, default=150)
    ap.add_argument("--load", type=float, default=0.85)
    ap.add_argument("--arrival", default="poisson")
    ap.add_argument("--seeds", default="301,302,303,304")
    ap.add_argument("--schedulers", default="srpt_hold,fair_cap_local,fair_cap_gpu_first")
    args = ap.parse_args()
    config = SimConfig(**mode_settings("shared"))
    for seed in (int(s) for s in args.seeds.split(",")):
        stream = generate_stream(cluster_preset(args.cluster), args.workflows, args.load, args.arrival, seed=seed)
        cp = compile_problem(stream.problem())
        counted = steady_state(cp.wf_submit_s)
        gpu_wf = (np.bincount(cp.task_wf, cp.req[:, 2] > 0, minlength=cp.n_workflows) > 0)[counted]
        for name in args.schedulers.split(","):
            result = simulate(cp, name, config, seed=seed)
            completion = workflow_outcomes(cp, result.trace).completion_s[counted]
            waits = gpu_task_waits(cp, result.trace)
            print(
                f"{args.cluster} {args.arrival} seed {seed} {name:18s} "
                f"GPU workflows {int(gpu_wf.sum())}/{len(counted)}: "
                f"mean completion {completion[gpu_wf].mean():7.0f} s, others {completion[~gpu_wf].mean():6.0f} s, "
                f"share of the sum {completion[gpu_wf].sum() / completion.sum():.2f}; GPU tasks waited "
                f"{sum(waits.values()):7.0f} s: " + ", ".join(f"{k} {v:6.0f}" for k, v in waits.items()),
                flush=True,
            )


if __name__ == "__main__":
    main()
