"""Paired ratios between any two variants of `stream_levers.py`'s raw outputs, read back from its files.

`stream_levers.py` pairs every variant with `srpt_hold` and `fair`; this reads the per-stream lines of its outputs
(`docs/results/stream-levers/*.txt`) and prints, per group and variant, the mean over the streams of the ratio of
steady-state mean completion (and of p95 completion) to each variant named in `--against`, with a 95 % bootstrap
interval and the streams it is shorter on: the learned levers against the best hand rule with the same levers
(`fair_cap`), against the imitation start, against the dispatcher without levers. Runs nothing; asserts nothing.

    .venv/bin/python benchmarks/experiments/stream_levers_paired.py docs/results/stream-levers/held-out-*.txt \
        --against fair_cap,drl_stream@imitation
"""

from __future__ import annotations

import argparse
import re
from collections import defaultdict
from pathlib import Path

import numpy as np

from dagsched.bench.stats import bootstrap_ci

LINE = re.compile(
    r"^(?P<group>\S+) seed (?P<seed>\d+) (?P<variant>\S+)\s+mean completion\s+(?P<mean>[\d.]+) s\s+p95\s+"
    r"(?P<p95>[\d.]+) s"
)


def read(paths: list[str]) -> dict[str, dict[str, dict[int, tuple[float, float]]]]:
    """group -> variant -> seed -> (mean completion, p95 completion)."""
    out: dict[str, dict[str, dict[int, tuple[float, float]]]] = defaultdict(lambda: defaultdict(dict))
    for path in paths:
        for line in Path(path).read_text().splitlines():
            m = LINE.match(line)
            if m:
                out[m["group"]][m["variant"]][int(m["seed"])] = (float(m["mean"]), float(m["p95"]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+")
    ap.add_argument("--against", default="fair_cap", help="variants to pair with, comma-separated")
    args = ap.parse_args()
    for group, runs in read(args.files).items():
        print(f"{group}: mean [95 % CI] of the ratio per stream")
        for base in args.against.split(","):
            if base not in runs:
                continue
            for v, by_seed in runs.items():
                if v == base:
                    continue
                seeds = sorted(set(by_seed) & set(runs[base]))
                for k, name in ((0, "mean completion"), (1, "p95")):
                    r = np.array([by_seed[s][k] / runs[base][s][k] for s in seeds])
                    lo, hi = bootstrap_ci(r)
                    print(
                        f"  {v} / {base} {name}: {r.mean():.3f} [{lo:.3f}, {hi:.3f}], shorter on "
                        f"{int((r < 1).sum())}/{len(r)}"
                    )
        print()


if __name__ == "__main__":
    main()
