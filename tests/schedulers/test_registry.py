"""Schedulers are found from their package: a scheduler added in one new file under `dagsched/schedulers/` is
listed by `dagsched schedulers` and runs by name with no other edit; two schedulers cannot share a name."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import dagsched
from dagsched.schedulers import register, registered_names
from dagsched.schedulers.base import _REGISTRY
from dagsched.schedulers.fcfs import FCFS

NEWCOMER = '''"""Newcomer: starts the lowest-numbered ready task on the first node it can start on."""

from dagsched.schedulers.base import register
from dagsched.sim.decision import Decision, DecisionPoint, Scheduler


@register
class Newcomer(Scheduler):
    name = "newcomer"
    uses_seed = False

    def decide(self, dp: DecisionPoint) -> Decision:
        free = dp.free.copy()
        out = []
        for t in dp.ready_tasks():
            for nd in range(dp.cp.n_nodes):
                if dp.can_start(t, nd, free):
                    free[nd] -= dp.request(t)
                    out.append((t, nd))
                    break
        return Decision(out)
'''

RUN = (
    "from dagsched.generate import cluster_preset, generate_workflow\n"
    "from dagsched.model import Problem, compile_problem\n"
    "from dagsched.schedulers import simulate\n"
    "cp = compile_problem(Problem(workflows=[generate_workflow('layered', 20, seed=1)], "
    "cluster=cluster_preset('small-3')))\n"
    "r = simulate(cp, 'newcomer')\n"
    "print(r.valid, len(r.trace.attempts))\n"
)


def _run(root: Path, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, *args], env=env, cwd=root, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_scheduler_in_one_new_file_is_listed_and_runs(tmp_path: Path) -> None:
    """A copy of the package with one file added, and nothing else edited, lists and runs the new scheduler."""
    package = Path(dagsched.__file__).parent
    copy = tmp_path / "dagsched"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    cli = ("-c", "from dagsched.cli import app; app()", "schedulers")
    before = [line.split()[0] for line in _run(tmp_path, *cli).splitlines()]
    assert "newcomer" not in before and "heft" in before
    (copy / "schedulers" / "newcomer.py").write_text(NEWCOMER)
    listed = _run(tmp_path, *cli).splitlines()
    assert sorted(line.split()[0] for line in listed) == sorted([*before, "newcomer"])
    mine = next(line.split(None, 1)[1] for line in listed if line.split()[0] == "newcomer")
    assert mine == "Newcomer: starts the lowest-numbered ready task on the first node it can start on."
    assert _run(tmp_path, "-c", RUN).split() == ["True", "20"]


def test_every_module_of_the_package_is_imported() -> None:
    """No list to keep: every module under schedulers/ is imported by the package, registering or not."""
    package = Path(dagsched.__file__).parent / "schedulers"
    for path in package.glob("*.py"):
        if path.stem != "__init__":
            assert f"dagsched.schedulers.{path.stem}" in sys.modules, path.name
    assert {"heft", "fcfs", "srpt_hold", "mcts_uct", "drl", "drl_stream"} <= set(registered_names())


def test_two_schedulers_cannot_share_a_name() -> None:
    class Impostor(FCFS):
        name = "fcfs"

    with pytest.raises(ValueError, match="two schedulers named 'fcfs'"):
        register(Impostor)
    assert _REGISTRY["fcfs"] is FCFS


def test_the_factory_hands_a_scheduler_only_what_it_declares_it_needs() -> None:
    """`make_scheduler(name, **provided)`: drl declares `policy` and plans with the one handed to it (with
    `service=True`, at its service budget); a scheduler that declares no need is built alike, ignoring it."""
    from dagsched.policy.priority_net import load_cached_priority_policy
    from dagsched.schedulers import make_scheduler, scheduler_class
    from dagsched.schedulers.priority_sampling import SERVICE_SAMPLING

    policy = load_cached_priority_policy(None)
    assert scheduler_class("drl").needs == {"policy"} and scheduler_class("heft").needs == frozenset()
    served = make_scheduler("drl", service=True, policy=policy)
    assert served.policy is policy  # type: ignore[attr-defined]
    assert served.budget_s == SERVICE_SAMPLING["budget_s"] != make_scheduler("drl").budget_s  # type: ignore[attr-defined]
    assert type(make_scheduler("heft", service=True, policy=policy)).__name__ == "HEFT"


def test_the_list_says_what_each_is_and_where_it_is_best() -> None:
    """`dagsched schedulers`: one line per scheduler, its name, the first sentence of its docstring and where it is
    best (`best_for`, which every built-in scheduler declares)."""
    from typer.testing import CliRunner

    from dagsched.cli import app

    result = CliRunner().invoke(app, ["schedulers"])
    assert result.exit_code == 0, result.output
    lines = {line.split()[0]: line for line in result.output.splitlines()}
    assert sorted(lines) == registered_names()
    assert lines["heft"].split(None, 1)[1] == (
        "HEFT: Heterogeneous Earliest Finish Time (Topcuoglu, Hariri and Wu, IEEE TPDS 2002). Best for: a "
        "reference: every single-workflow figure is a ratio to it, and the service falls back to it."
    )
    assert "Best for: a little shorter than srpt_hold" in lines["drl_stream"]
    assert lines["heft_keep"].split(None, 1)[1].startswith("HEFT on a shared cluster that plans each arriving")
    for name in registered_names():
        assert _REGISTRY[name].best_for, f"{name} says nowhere where it is best"
        assert " Best for: " in lines[name] and len(lines[name].split(" Best for: ")[0].split()) > 2, lines[name]
