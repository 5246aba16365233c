"""WfCommons recipes: offline, reproducible per seed, converted with their edges and data, clear minimums."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from dagsched.generate.recipes import RECIPES, min_tasks, recipe_workflow
from dagsched.model import InputError

OFFLINE_SCRIPT = textwrap.dedent(
    """
    import socket

    def refuse(*args, **kwargs):
        raise RuntimeError("network access attempted")

    socket.socket.connect = refuse
    socket.socket.connect_ex = refuse
    socket.create_connection = refuse
    socket.getaddrinfo = refuse

    from dagsched.generate.recipes import recipe_workflow

    wf = recipe_workflow("montage", 100, 1)
    print(len(wf.tasks), len(wf.edges))
    """
)


def test_montage_generates_with_the_network_blocked(tmp_path: Path) -> None:
    """Importing wfcommons and building montage-100 in a fresh process needs no socket and no cache."""
    env = os.environ | {"HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-c", OFFLINE_SCRIPT], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["96", "190"]


def test_montage_100_is_reproducible_and_has_data_edges() -> None:
    """montage-100 seed 1: 96 tasks, 190 edges all carrying bytes, equal on a second call, other seeds differ."""
    wf = recipe_workflow("montage", 100, 1)
    assert (len(wf.tasks), len(wf.edges)) == (96, 190)
    assert all(e.data > 0 for e in wf.edges)
    assert wf.tasks[0].id == "mProject_00000001" and wf.tasks[0].labels["kind"] == "mProject"
    assert wf.name == "montage-100-s1"
    assert recipe_workflow("montage", 100, 1) == wf
    assert recipe_workflow("montage", 100, 2) != wf
    assert any(t.critical for t in wf.tasks)
    g = nx.DiGraph((e.src, e.dst) for e in wf.edges)
    assert nx.is_directed_acyclic_graph(g)


def test_global_random_state_is_restored() -> None:
    """After a recipe call, random and numpy.random continue as if it had not run."""
    random.seed(123)
    np.random.seed(123)
    recipe_workflow("srasearch", 30, 5)
    got = (random.random(), np.random.random())
    random.seed(123)
    np.random.seed(123)
    assert got == (random.random(), np.random.random())


@pytest.mark.parametrize("recipe", list(RECIPES))
def test_every_recipe_builds_at_its_minimum(recipe: str) -> None:
    """Each recipe at its minimum size gives at most that many tasks, a DAG with edges."""
    n = min_tasks(recipe)
    wf = recipe_workflow(recipe, n, 0)
    assert 0 < len(wf.tasks) <= n
    assert len(wf.edges) > 0
    assert nx.is_directed_acyclic_graph(nx.DiGraph((e.src, e.dst) for e in wf.edges))


def test_below_minimum_names_n_tasks_and_the_minimum() -> None:
    """montage needs n_tasks >= 60: asking for 59 raises InputError saying so."""
    assert min_tasks("montage") == 60
    with pytest.raises(InputError, match=r"^n_tasks: recipe 'montage' needs n_tasks >= 60, got 59$"):
        recipe_workflow("montage", 59, 0)


def test_unknown_recipe_lists_the_choices() -> None:
    """rnaseq is excluded (no edges in wfcommons 1.6), so it is an unknown recipe."""
    assert "rnaseq" not in RECIPES and len(RECIPES) == 9
    with pytest.raises(InputError, match="recipe: unknown recipe 'rnaseq'; choose one of montage"):
        recipe_workflow("rnaseq", 100, 0)
