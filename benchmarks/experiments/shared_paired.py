"""Paired figures of one scheduler against others on the shared suite's streams, per load and stream family.

Reads a results folder written by `dagsched bench --suite shared` and prints, per (load, family: the arrival
process and the mix), or per (cluster, load, family) with `--by-cluster`, the mean over streams of A's
steady-state mean completion time over B's on the same stream, with a 95 % bootstrap interval and the streams A is
shorter on, and the same pairing for p95 completion and cost (ratios) and the SLA hit rate (difference); then each
scheduler's mean steady-state SLA hit rate (the report's), p95 completion and cost. Side-by-side intervals hide
how two schedulers differ stream by stream; this does not. Prints; asserts nothing.

    .venv/bin/python benchmarks/experiments/shared_paired.py results/shared --scheduler drl --against heft,fair
"""

from __future__ import annotations

import argparse
from collections import defaultdict

import numpy as np

from dagsched.bench.stats import bootstrap_ci, is_ok, is_stream
from dagsched.bench.store import load_results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", help="a results folder (results.sqlite inside)")
    ap.add_argument("--scheduler", default="drl")
    ap.add_argument("--against", default="heft,fair")
    ap.add_argument("--by-cluster", action="store_true", help="one group per cluster too")
    args = ap.parse_args()
    others = [s for s in args.against.split(",") if s]
    names = [args.scheduler, *others]
    per: dict[tuple[str, float, str], dict[tuple[str, int], dict[str, dict]]] = defaultdict(lambda: defaultdict(dict))
    for r in load_results(args.results, "shared"):
        if is_stream(r) and is_ok(r) and r["scheduler"] in names:
            # the family is the arrival process, prefixed by the mix when it is not the default one (`stages-poisson`):
            # a cluster's streams of one arrival process and seed differ by mix
            group = (str(r["cluster"]) if args.by_cluster else "", float(r["load"]), str(r["family"]))
            per[group][(str(r["cluster"]), int(r["seed"]))][str(r["scheduler"])] = r
    for (cluster, load, family), streams in sorted(per.items()):
        both = [s for s in streams.values() if all(n in s for n in names)]
        if not both:
            continue
        print(f"{cluster + ', ' if cluster else ''}load {load}, {family}: {len(both)} streams every scheduler finished")
        for other in others:
            ratio = np.array([s[args.scheduler]["completion_mean"] / s[other]["completion_mean"] for s in both])
            low, high = bootstrap_ci(ratio)
            print(
                f"  {args.scheduler}/{other}: {ratio.mean():.3f} [{low:.3f}, {high:.3f}], "
                f"shorter on {int((ratio < 1).sum())}/{len(ratio)}; {_paired(both, args.scheduler, other)}"
            )
        for n in names:
            sla = np.mean([s[n]["sla_steady"] for s in both])
            p95 = np.mean([s[n]["completion_p95"] for s in both])
            cost = np.mean([s[n]["cost"] for s in both])
            print(f"  {n:14s} SLA hit {sla:.3f}  p95 {p95:7.0f} s  cost {cost:7.2f}")


def _paired(streams: list[dict[str, dict]], a: str, b: str) -> str:
    """p95 and cost as ratios, SLA hit rate as a difference, each a mean with its 95 % bootstrap interval."""
    out = []
    for label, key, diff in (("p95", "completion_p95", False), ("cost", "cost", False), ("SLA", "sla_steady", True)):
        x = np.array([s[a][key] - s[b][key] if diff else s[a][key] / s[b][key] for s in streams])
        low, high = bootstrap_ci(x)
        fmt = "+.3f" if diff else ".3f"
        out.append(f"{label} {x.mean():{fmt}} [{low:{fmt}}, {high:{fmt}}]")
    return ", ".join(out)


if __name__ == "__main__":
    main()
