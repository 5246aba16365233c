"""Min-Min and Max-Min: the vectorised BatchMapper against its frozen reference, side by side.

For each problem and scheduler, runs the reference (tests/schedulers/batch_reference.py, the
BatchMapper before its re-search was vectorised) and the registered scheduler alternately,
prints the median wall time of each (simulation included, validation not), their ratio, and
whether the two traces are identical (they must be). HEFT's time is printed for scale.
Prints figures; asserts nothing about wall-clock time (the machine is shared).
Run: .venv/bin/python benchmarks/bench_heuristics.py [--repeats N] [--quick]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import time
from pathlib import Path
from types import ModuleType

from dagsched.bench.suites import CLASSIC, CLOUD, Mode, ProblemSpec, real_traces, trace_spec, wfinstances_root
from dagsched.model import CompiledProblem
from dagsched.schedulers import make_scheduler, simulate
from dagsched.schedulers.base import Scheduler
from dagsched.sim.trace import Trace

ROOT = Path(__file__).resolve().parents[1]


def load_reference() -> ModuleType:
    path = ROOT / "tests" / "schedulers" / "batch_reference.py"
    spec = importlib.util.spec_from_file_location("batch_reference", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def problems(quick: bool) -> list[tuple[str, ProblemSpec, Mode]]:
    n = 300 if quick else 1000
    out = [
        (f"layered-{n} @ large-100", ProblemSpec("synthetic", "layered", "large-100", n_tasks=n, gen_seed=1), CLASSIC),
        (f"layered-{n} @ large-100", ProblemSpec("synthetic", "layered", "large-100", n_tasks=n, gen_seed=1), CLOUD),
    ]
    name = "montage-chameleon-2mass-015d-001" if quick else "montage-chameleon-dss-15d-001"
    montage = [e for e in real_traces() if name in e.file]
    if montage:
        e = montage[0]
        out.append((f"{name} ({e.n_tasks}) @ hetero-16", trace_spec(e, wfinstances_root(), "hetero-16"), CLASSIC))
    return out


def timed(cp: CompiledProblem, scheduler: Scheduler, mode: Mode) -> tuple[float, Trace]:
    t0 = time.perf_counter()
    trace = simulate(cp, scheduler, mode.config(), seed=0, validate=False).trace
    return time.perf_counter() - t0, trace


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--quick", action="store_true", help="smaller problems (a 300-task layered DAG, a small Montage)"
    )
    args = parser.parse_args()
    reference = load_reference().REFERENCE
    print(f"median of {args.repeats} runs each, reference and new alternating; seconds\n")
    print(f"{'problem':<48} {'mode':<8} {'scheduler':<9} {'reference':>10} {'new':>8} {'ratio':>7}  same  heft")
    for label, spec, mode in problems(args.quick):
        cp = spec.build()
        heft_s, _ = timed(cp, make_scheduler("heft"), mode)
        for name in ("min_min", "max_min"):
            old_s, new_s, same = [], [], True
            for _ in range(args.repeats):
                dt, old = timed(cp, reference[name](), mode)
                old_s.append(dt)
                dt, new = timed(cp, make_scheduler(name), mode)
                new_s.append(dt)
                same = same and old.attempts == new.attempts
            old_m, new_m = statistics.median(old_s), statistics.median(new_s)
            print(
                f"{label:<48} {mode.name:<8} {name:<9} {old_m:>10.2f} {new_m:>8.2f} {old_m / new_m:>6.1f}x"
                f"  {'yes' if same else 'NO':<4}  {heft_s:.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
