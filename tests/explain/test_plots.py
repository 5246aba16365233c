"""The explanation's pictures speak the dashboard's colours: red raises the chosen action, blue lowers it, white is
none (the same RGB as `diverging` in the dashboard's dom.js); a bar or task that raises is drawn red."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

import dagsched
from dagsched.explain.plots import LOWERS_RGB, RAISES_RGB, attribution_cmap, write_attribution_bars, write_dag
from dagsched.generate import cluster_preset, generate_workflow
from dagsched.model import Problem, compile_problem

DOM_JS = Path(dagsched.__file__).parent / "ui" / "dom.js"


def test_the_colours_are_the_dashboards() -> None:
    source = DOM_JS.read_text()
    match = re.search(r"x >= 0 \? \[(\d+), (\d+), (\d+)\] : \[(\d+), (\d+), (\d+)\]", source)
    assert match is not None, "dom.js's diverging colours moved: update this test and the plots together"
    numbers = tuple(int(g) for g in match.groups())
    assert numbers[:3] == RAISES_RGB and numbers[3:] == LOWERS_RGB
    cmap = attribution_cmap()
    assert np.allclose(np.array(cmap(1.0)[:3]) * 255, RAISES_RGB, atol=1)
    assert np.allclose(np.array(cmap(0.0)[:3]) * 255, LOWERS_RGB, atol=1)
    assert np.allclose(cmap(0.5)[:3], (1.0, 1.0, 1.0), atol=0.01)


def _pixels(path: Path) -> np.ndarray:
    import matplotlib.image

    return (np.asarray(matplotlib.image.imread(path))[:, :, :3] * 255).round().reshape(-1, 3)


def _share(pixels: np.ndarray, rgb: tuple[int, int, int]) -> float:
    return float(np.mean(np.all(np.abs(pixels - np.array(rgb)) <= 2, axis=1)))


def test_bars_that_raise_are_red_and_bars_that_lower_blue(tmp_path: Path) -> None:
    rows = [{"group": "task", "feature": "rank", "value": 2.0}]
    write_attribution_bars({"by_feature": rows}, tmp_path / "up.png", "raises")
    write_attribution_bars({"by_feature": [{**rows[0], "value": -2.0}]}, tmp_path / "down.png", "lowers")
    up, down = _pixels(tmp_path / "up.png"), _pixels(tmp_path / "down.png")
    assert _share(up, RAISES_RGB) > 0.05 and _share(up, LOWERS_RGB) == 0.0
    assert _share(down, LOWERS_RGB) > 0.05 and _share(down, RAISES_RGB) == 0.0


def test_a_dag_coloured_by_attribution_draws_the_strongest_raise_red(tmp_path: Path) -> None:
    cp = compile_problem(
        Problem(workflows=[generate_workflow("layered", 6, seed=1)], cluster=cluster_preset("small-3"))
    )
    values = {t: 0.0 for t in cp.task_ids}
    values[cp.task_ids[0]] = 1.0  # only raises: the most positive task is full red, no blue anywhere
    write_dag(cp, tmp_path / "dag.png", "raises", values, {}, None)
    pixels = _pixels(tmp_path / "dag.png")
    assert _share(pixels, RAISES_RGB) > 0.0005
    assert _share(pixels, LOWERS_RGB) < _share(pixels, RAISES_RGB)
