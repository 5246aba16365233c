"""The product speaks of itself: what it does and its current figures, never how the work on it was organised.

- No numbered stop, issue, session, work item or round in README, the pages under docs/, the package's source,
  the benchmark scripts or the tests' docstrings, nor in the name of any file or folder there (the word and a
  number after it, in a sentence or in a folder name such as "shared-drl-stop" and a number). Addresses of
  other projects' issue trackers (URLs) are not numbered work of this project and are left out; a command-line
  flag such as `--rounds 5` or `--imitation-rounds 30` is a flag, not a round of work.
- docs/results holds the current report of each suite and each experiment a page cites: at most 1.5 MB, and
  every file in it cited by a page (README.md or docs/*.md). A page cites a file by its path
  (`docs/results/shared/report.md`, a glob such as `docs/results/planner/selection-*.txt`, or a relative link
  `results/shared/report.md` from a page under docs/); a folder (`docs/results/node-rule/`, or the folder of a
  file the page cites) covers the files in it whose names the same page gives (`classic-10-seeds.txt`), so the
  page says what each holds; and a cited report covers what it links to (its figures).
"""

from __future__ import annotations

import ast
import fnmatch
import re
import subprocess
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parents[1]

NUMBERED = re.compile(
    r"(?<![\w-])(?:stop|issue|session|work[ _-]?item|round)s?(?:[ _-]?#?|\s+no\.?\s*)\d+",
    re.IGNORECASE,
)
"""A numbered piece of work: the word, then a number (after a space, a hyphen, an underscore, a hash or nothing)."""

NUMBERED_NAME = re.compile(r"(?:stop|issue|session|workitem|work-item|round)[-_]?\d+", re.IGNORECASE)
"""The same inside a file or folder name: "shared-drl-stop30", "ppo-rank-node-stop32.png"."""

URL = re.compile(r"https?://\S+")

RESULTS = "docs/results"
RESULTS_MAX_BYTES = 1_572_864
"""1.5 MiB: docs/results is the current report of each suite and experiment, not an archive of runs."""


def _tracked() -> list[str]:
    """Files in git's index (the product as a clone receives it), or on disk where git is absent."""
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, text=True).stdout
        return [p for p in out.split("\0") if p and (ROOT / p).exists()]
    except (OSError, subprocess.CalledProcessError):
        return [str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file() and ".venv" not in p.parts]


def _is_text(path: Path) -> bool:
    return path.suffix in {
        ".md",
        ".py",
        ".pyi",
        ".js",
        ".html",
        ".css",
        ".json",
        ".yaml",
        ".yml",
        ".txt",
        ".proto",
        ".toml",
    }


def _numbered(text: str) -> list[str]:
    return [m.group(0) for m in NUMBERED.finditer(URL.sub("", text))]


def _docstrings(source: str) -> list[tuple[int, str]]:
    """The module's, classes' and functions' docstrings, with their line numbers."""
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                found.append((node.body[0].lineno, doc))
    return found


def _product_files() -> list[str]:
    """README, docs, the package and the benchmarks: every line of them is the product's text."""
    return [p for p in _tracked() if p == "README.md" or p.startswith(("docs/", "src/", "benchmarks/"))]


def test_no_numbered_work_in_the_product_text() -> None:
    """README, docs, src and benchmarks name no numbered stop, issue, session, work item or round."""
    faults = []
    for rel in _product_files():
        path = ROOT / rel
        if not _is_text(path):
            continue
        for lineno, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            for hit in _numbered(line):
                faults.append(f"{rel}:{lineno}: {hit!r}")
    assert not faults, "numbered work in the product's text:\n" + "\n".join(faults)


def test_no_numbered_work_in_the_tests_docstrings() -> None:
    """The tests' docstrings say the rule they check, not the piece of work that asked for it."""
    faults = []
    for rel in _tracked():
        if not (rel.startswith("tests/") and rel.endswith(".py")):
            continue
        source = (ROOT / rel).read_text(encoding="utf-8")
        for lineno, doc in _docstrings(source):
            for hit in _numbered(doc):
                faults.append(f"{rel}:{lineno}: {hit!r}")
    assert not faults, "numbered work in the tests' docstrings:\n" + "\n".join(faults)


def test_no_numbered_work_in_file_or_folder_names() -> None:
    """No file or folder of the product or its tests is named after a numbered piece of work."""
    faults = sorted(
        {
            "/".join(PurePosixPath(rel).parts[: i + 1])
            for rel in _tracked()
            if rel == "README.md" or rel.startswith(("docs/", "src/", "benchmarks/", "tests/"))
            for i, part in enumerate(PurePosixPath(rel).parts)
            if NUMBERED_NAME.search(part)
        }
    )
    assert not faults, "named after numbered work:\n" + "\n".join(faults)


def test_the_pattern_finds_numbered_work_and_nothing_else() -> None:
    """The rule's own examples: what it must find, and flags, maths and other projects' trackers it must not."""
    for text in [
        "since stop 30",
        "Issue 16's goal",
        "session 4",
        "(stop 29;",
        "work item 3",
        "round 2 of the lab",
        "issue #36",
    ]:
        assert _numbered(text), text
    for text in [
        "--imitation-rounds 30 --rounds 6",
        "the teacher acts in the first round",
        "Adam (step 0.03)",
        "three rounds of 100 problems",
        "see https://github.com/numba/numba/issues/1234",
        "round_robin",
        "for r in range(cfg.rounds - 1)",
    ]:
        assert not _numbered(text), text
    assert NUMBERED_NAME.search("shared-drl-stop30-top2") and NUMBERED_NAME.search("ppo-rank-node-stop32.png")
    assert not NUMBERED_NAME.search("round_robin.py")


# ---- docs/results: small, current, every file cited ---------------------------------------------------------

CITED_PATH = re.compile(r"(?<![\w/.-])(?:docs/)?results/[\w.*{},/-]+|\]\((?:\./)?results/[^)\s#]+")
"""A path under docs/results in a page, or a relative link to one from a page under docs/."""


def _pages() -> list[str]:
    return [
        p for p in _tracked() if p == "README.md" or (p.startswith("docs/") and p.endswith(".md") and "/" not in p[5:])
    ]


def _expand_braces(pattern: str) -> list[str]:
    m = re.search(r"\{([^{}]*)\}", pattern)
    if not m:
        return [pattern]
    return [
        expanded
        for choice in m.group(1).split(",")
        for expanded in _expand_braces(pattern[: m.start()] + choice + pattern[m.end() :])
    ]


def _citations(page: str, text: str) -> tuple[list[str], list[str]]:
    """The page's citations under docs/results: (file patterns, folders), as paths from the repository root."""
    files: list[str] = []
    folders: list[str] = []
    for match in CITED_PATH.finditer(text):
        raw = match.group(0)
        if raw.startswith("]("):
            raw = raw[2:].removeprefix("./")
            if not page.startswith("docs/"):
                continue  # a README link to results/ is not under docs/results
            raw = "docs/" + raw
        elif raw.startswith("results/"):
            # "results/shared" in a page is where a command writes its run, not docs/results
            continue
        raw = raw.rstrip(".,;:`'\")")
        for path in _expand_braces(raw):
            if path.endswith("/") or (ROOT / path).is_dir():
                folders.append(path.rstrip("/") + "/")
            else:
                files.append(path)
    return files, folders


def _linked_from(report: str) -> list[str]:
    """What a cited report under docs/results links to (its figures), as paths from the repository root."""
    path = ROOT / report
    if path.suffix not in {".md", ".html"} or not path.is_file():
        return []
    text = path.read_text(encoding="utf-8", errors="replace")
    links = re.findall(r"(?:\]\(|src=\"|href=\")([^)\"#:]+)", text)
    base = PurePosixPath(report).parent
    return [str(PurePosixPath(base, link.removeprefix("./"))) for link in links]


def _uncited(results_files: list[str], pages: dict[str, str]) -> list[str]:
    covered: set[str] = set()
    for page, text in pages.items():
        files, folders = _citations(page, text)
        folders += [str(PurePosixPath(f).parent) + "/" for f in files if "*" not in f]
        for rel in results_files:
            named = re.search(rf"(?<![\w-]){re.escape(PurePosixPath(rel).name)}(?![\w-])", text)
            in_folder = any(rel.startswith(folder) for folder in folders)
            if any(fnmatch.fnmatchcase(rel, pattern) for pattern in files) or (in_folder and named):
                covered.add(rel)
    frontier = list(covered)
    while frontier:
        for linked in _linked_from(frontier.pop()):
            if linked in results_files and linked not in covered:
                covered.add(linked)
                frontier.append(linked)
    return sorted(set(results_files) - covered)


def test_every_result_file_is_cited_by_a_page() -> None:
    """A file under docs/results that no page cites is a superseded run or an orphan: it goes (git keeps it)."""
    results_files = [p for p in _tracked() if p.startswith(RESULTS + "/")]
    pages = {p: (ROOT / p).read_text(encoding="utf-8") for p in _pages()}
    uncited = _uncited(results_files, pages)
    assert not uncited, "files under docs/results that no page cites:\n" + "\n".join(uncited)


def test_the_results_are_small() -> None:
    """docs/results stays under 1.5 MB: the current report of each suite and experiment, not every run."""
    size = sum((ROOT / p).stat().st_size for p in _tracked() if p.startswith(RESULTS + "/"))
    assert size <= RESULTS_MAX_BYTES, f"docs/results holds {size:,} bytes, more than {RESULTS_MAX_BYTES:,}"


def test_the_citation_rule_is_strict() -> None:
    """A folder citation covers only the files the page names; a report covers what it links; nothing else."""
    results = [
        "docs/results/a/report.md",
        "docs/results/a/figures/x.png",
        "docs/results/b/one.txt",
        "docs/results/b/two.txt",
        "docs/results/c/sel-1.txt",
        "docs/results/d/e.txt",
    ]
    pages = {
        "README.md": "full report: [a](docs/results/a/report.md)",
        "docs/x.md": "in `docs/results/b/`: `one.txt` holds it; `docs/results/c/sel-*.txt`; run to results/d/",
    }
    assert _uncited(results, pages) == [
        "docs/results/a/figures/x.png",
        "docs/results/b/two.txt",
        "docs/results/d/e.txt",
    ]
