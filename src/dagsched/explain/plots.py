"""The explanation as pictures (matplotlib, off the hot path): the strongest attributions as bars, and the DAG
coloured by each task's attribution (or, for a plan without one, by the node each task runs on)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import numpy as np

from dagsched.model.compiled import CompiledProblem

TOP_FEATURES = 15

RAISES_RGB, LOWERS_RGB = (225, 87, 89), (78, 121, 167)
"""The dashboard's colours for attributions (`diverging` in ui/dom.js): red raises the attributed output (drl's
task score), blue lowers it, white is none; the pictures use the same, so a
reader sees one convention."""


def _hex(rgb: tuple[int, int, int]) -> str:
    return "#{:02x}{:02x}{:02x}".format(*rgb)


RAISES, LOWERS = _hex(RAISES_RGB), _hex(LOWERS_RGB)


def attribution_cmap() -> Any:
    """Blue (most negative) through white (0) to red (most positive), as the dashboard mixes them."""
    from matplotlib.colors import LinearSegmentedColormap

    return LinearSegmentedColormap.from_list("attribution", [LOWERS, "#ffffff", RAISES])


def write_attribution_bars(attributions: dict[str, Any], path: Path, title: str) -> None:
    """Horizontal bars of the features with the largest |attribution| (the cluster summary's summed over tasks)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = attributions["by_feature"][:TOP_FEATURES][::-1]
    labels = [f"{r['group']}.{r['feature']}" for r in rows]
    values = [r["value"] for r in rows]
    fig, ax = plt.subplots(figsize=(7, 0.35 * len(rows) + 1.2))
    ax.barh(labels, values, color=[RAISES if v >= 0 else LOWERS for v in values])
    ax.axvline(0, color="black", lw=0.8)
    what = f"attribution to {attributions.get('target', 'the output')} (Integrated Gradients, zero baseline)"
    ax.set_xlabel(textwrap.fill(what, 80) + "\nred raises it, blue lowers it")
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _layers(cp: CompiledProblem) -> np.ndarray:
    """Each task's depth (longest path from an entry, in edges): the DAG's columns."""
    depth = np.zeros(cp.n_tasks, dtype=np.int64)
    for t in cp.topo:
        p = cp.preds(int(t))
        if len(p):
            depth[t] = depth[p].max() + 1
    return depth


def write_dag(
    cp: CompiledProblem,
    path: Path,
    title: str,
    values: dict[str, float] | None,
    node_of: dict[str, str],
    focus: str | None,
) -> None:
    """The DAG left to right by depth; colour by attribution (blue lowers, white 0, red raises, as on the dashboard)
    when `values` is given, else by the node each task runs on; `focus` (the task explained) ringed in black."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import TwoSlopeNorm

    depth = _layers(cp)
    pos = np.zeros((cp.n_tasks, 2))
    for d in np.unique(depth):
        members = np.flatnonzero(depth == d)
        pos[members, 0] = d
        pos[members, 1] = np.linspace(-1, 1, len(members)) if len(members) > 1 else 0.0
    fig, ax = plt.subplots(figsize=(min(4 + 1.2 * (depth.max() + 1), 18), 6))
    for t in range(cp.n_tasks):
        for c in cp.succs(t):
            ax.plot([pos[t, 0], pos[c, 0]], [pos[t, 1], pos[c, 1]], color="#bbbbbb", lw=0.6, zorder=1)
    ids = list(cp.task_ids)
    if values is not None:
        v = np.array([values.get(t, 0.0) for t in ids])
        span = max(float(np.abs(v).max()), 1e-9)
        norm = TwoSlopeNorm(0.0, -span, span)
        sc = ax.scatter(pos[:, 0], pos[:, 1], c=v, cmap=attribution_cmap(), norm=norm, s=90, zorder=2)
        fig.colorbar(sc, ax=ax, label="attribution of the task's features: red raises")
    else:
        nodes = sorted(set(node_of.values()))
        cmap = plt.get_cmap("tab20")
        colours = [cmap(nodes.index(node_of[t]) % 20) if t in node_of else "#dddddd" for t in ids]
        ax.scatter(pos[:, 0], pos[:, 1], c=colours, s=90, zorder=2)
    if focus is not None:
        i = ids.index(focus)
        ax.scatter([pos[i, 0]], [pos[i, 1]], s=260, facecolors="none", edgecolors="black", lw=2, zorder=3)
    if cp.n_tasks <= 60:
        for i, t in enumerate(ids):
            ax.annotate(t, pos[i], fontsize=6, xytext=(0, 7), textcoords="offset points", ha="center")
    ax.set_axis_off()
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
