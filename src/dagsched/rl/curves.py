"""Training curves of a policy as a PNG, from the history its JSON keeps (`train`'s record).

The same scalars go to TensorBoard during training (`runs/<name>/tb`); this reads the copy saved beside the
weights, so a shipped model's curves can be redrawn without its run folder:
`python -m dagsched.rl.curves src/dagsched/data/models/drl-v2.json docs/img/drl-v2-training.png`; with several
priority-policy records, their validation curves side by side (`plot_runs`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

CURVES = (
    ("eval_ratio", "validation makespan / HEFT"),
    ("accuracy", "agreement with the teacher"),
    ("teacher_share_learner", "labels from the learner's own rollout"),
    ("bc_loss", "imitation loss"),
)
PRIORITY_CURVES = (
    ("val_sampled_vs_heft", "validation, best of K samples / HEFT"),
    ("val_sampled_vs_untrained", "validation, learned / untrained sampling"),
    ("val_greedy_vs_heft", "validation, greedy plan / HEFT"),
    ("best_sample_vs_heft", "training problems, best sample / HEFT"),
    ("entropy", "mean entropy of a choice"),
)
NODE_RULE_CURVES = (
    ("validation_vs_heft", "validation makespan / HEFT (drl_plan)"),
    ("validation_looked_share", "share of choices completed"),
)


def plot_training(meta_path: str | Path, out_png: str | Path) -> list[str]:
    """Draw the curves of `CURVES` the history has, one panel each, against the training step; returns their keys."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    meta: dict[str, Any] = json.loads(Path(meta_path).read_text())
    curves, title = CURVES, meta.get("training", {}).get("algorithm", "")
    history = meta.get("training", {}).get("history", [])
    if meta.get("kind") == "node_rule":  # dagsched train-node-rule's record
        curves, title = NODE_RULE_CURVES, "node rule, DAgger on heft_lookahead's labels"
        history = [dict(h, phase="DAgger") for h in meta.get("history", [])]
    if meta.get("format") == "dagsched-priority-policy":  # dagsched train-priority's record
        curves = PRIORITY_CURVES
        history = [dict(h, phase=meta["training"].get("config", {}).get("method", "train")) for h in history]
    if not history:
        raise ValueError(f"{meta_path}: no training history (was it written by dagsched train?)")
    drawn = [(key, label) for key, label in curves if any(key in h for h in history)]
    fig, axes = plt.subplots(1, len(drawn), figsize=(4 * len(drawn), 3.2), squeeze=False)
    for ax, (key, label) in zip(axes[0], drawn, strict=True):
        for phase in dict.fromkeys(h["phase"] for h in history):
            points = [(i + 1, h[key]) for i, h in enumerate(history) if h["phase"] == phase and key in h]
            if points:
                xs, ys = zip(*points, strict=True)
                ax.plot(xs, ys, marker=".", label=phase)
        if key in ("eval_ratio", "validation_vs_heft", "val_sampled_vs_untrained", "val_greedy_vs_heft"):
            ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_title(label, fontsize=9)
        ax.set_xlabel("round / iteration")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.suptitle(f"{Path(meta_path).stem}: {title}", fontsize=9)
    fig.tight_layout()
    fig.savefig(out_png, dpi=110)
    plt.close(fig)
    return [key for key, _ in drawn]


def plot_runs(meta_paths: list[str | Path], out_png: str | Path) -> None:
    """The validation curves of several priority-policy runs side by side (one line per run, labelled by its
    method), e.g. the POMO and SLIM runs of one release."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = PRIORITY_CURVES[:4]
    fig, axes = plt.subplots(1, len(keys), figsize=(4 * len(keys), 3.2), squeeze=False)
    for path in meta_paths:
        meta = json.loads(Path(path).read_text())
        training = meta["training"]
        label = f"{training['config']['method']} ({meta.get('version', Path(path).stem)})"
        for ax, (key, title) in zip(axes[0], keys, strict=True):
            points = [(h["iteration"], h[key]) for h in training["history"] if key in h]
            if key == "best_sample_vs_heft":  # noisy per iteration: a running mean over 50
                ys = [y for _, y in points]
                points = [
                    (x, sum(ys[max(0, i - 49) : i + 1]) / len(ys[max(0, i - 49) : i + 1]))
                    for i, (x, _) in enumerate(points)
                ]
            if points:
                xs, ys = zip(*points, strict=True)
                ax.plot(xs, ys, label=label)
            ax.set_title(title, fontsize=9)
            ax.set_xlabel("iteration")
            ax.axhline(1.0, color="grey", lw=0.8, ls="--")
            ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out_png, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    if len(sys.argv) > 3:  # several runs: python -m dagsched.rl.curves A.json B.json OUT.png
        plot_runs(sys.argv[1:-1], sys.argv[-1])
    elif len(sys.argv) == 3:
        print(plot_training(sys.argv[1], sys.argv[2]))
    else:
        sys.exit("usage: python -m dagsched.rl.curves POLICY.json [POLICY2.json ...] OUT.png")
