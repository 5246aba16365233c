"""The lab stays apart from the product and in order: `benchmarks/` holds the performance kit with its one helper
module (`kit.py`), `benchmarks/experiments/` the one-question experiments with theirs (`held_out_streams.py`).

No script imports another script (only its folder's helper, the package and libraries); every name a script
imports from the package exists (a renamed function fails here, not in the middle of an hour's run); no
experiment defines a scheduler of its own (a variant worth measuring is registered under `schedulers/`);
the experiments' README lists every experiment and only pages that exist; every path to a script that README,
docs, the package, the tests or the scripts cite exists. Parsed from the source: nothing is run.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
KIT = ROOT / "benchmarks"
EXPERIMENTS = KIT / "experiments"
HELPERS = {KIT: "kit", EXPERIMENTS: "held_out_streams"}
"""Each folder's one shared helper module."""


def _scripts(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.py") if p.stem != HELPERS[folder])


SCRIPTS = [*_scripts(KIT), *_scripts(EXPERIMENTS)]
MODULES = {p.stem for p in SCRIPTS} | set(HELPERS.values())


def _imports(path: Path) -> list[ast.Import | ast.ImportFrom]:
    return [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Import | ast.ImportFrom)]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: str(p.relative_to(KIT)))
def test_a_script_imports_no_other_script_and_only_names_the_package_has(script: Path) -> None:
    for node in _imports(script):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
        for name in names:
            top = name.split(".")[0]
            if top in MODULES:
                assert top == HELPERS[script.parent], f"{script.name}:{node.lineno} imports the script {top}"
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dagsched"):
            module = importlib.import_module(node.module or "")
            for alias in node.names:
                has = hasattr(module, alias.name)
                if not has:  # a submodule not imported by its package
                    has = importlib.util.find_spec(f"{node.module}.{alias.name}") is not None
                assert has, f"{script.name}:{node.lineno}: {node.module} has no {alias.name}"


@pytest.mark.parametrize("script", _scripts(EXPERIMENTS), ids=lambda p: p.name)
def test_an_experiment_defines_no_scheduler_of_its_own(script: Path) -> None:
    tree = ast.parse(script.read_text())
    from_schedulers = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dagsched.schedulers")
        for alias in node.names
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            bases = {b.id for b in node.bases if isinstance(b, ast.Name)}
            assert not bases & from_schedulers, f"{script.name}:{node.lineno}: class {node.name} subclasses {bases}"


def test_the_experiments_readme_lists_every_experiment_and_pages_that_exist() -> None:
    rows = [line for line in (EXPERIMENTS / "README.md").read_text().splitlines() if line.startswith("| `")]
    listed = {re.match(r"\| `([^`]+)`", row).group(1) for row in rows}  # type: ignore[union-attr]
    assert listed == {p.name for p in _scripts(EXPERIMENTS)}
    for row in rows:
        cited_by = row.split("|")[3]
        for page in re.findall(r"(?:docs/[\w./-]+\.md|src/[\w./-]+\.py|README)", cited_by):
            assert (ROOT / (page + ".md" if page == "README" else page)).exists(), f"{row[:60]}: no {page}"


def _texts() -> list[Path]:
    out = [ROOT / "README.md", ROOT / "Makefile", *(ROOT / "docs").glob("*.md"), *SCRIPTS]
    out += [*(ROOT / "src").rglob("*.py"), *(ROOT / "tests").rglob("*.py"), EXPERIMENTS / "README.md"]
    return out


def test_every_cited_script_exists() -> None:
    missing = [
        f"{path.relative_to(ROOT)}: {cited}"
        for path in _texts()
        for cited in re.findall(r"benchmarks/[\w/]+\.py", path.read_text())
        if not (ROOT / cited).exists()
    ]
    assert not missing, missing
