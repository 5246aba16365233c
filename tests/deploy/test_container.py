"""The Dockerfile builds what the Makefile builds and runs the documented command, checked without a Docker engine.

A small parser here reads the Dockerfile's instructions; dockerfile-parse (in the deploy tools' venv `.venv-deploy`,
`make deploy-check` makes it) must read the same ones. Without `.venv-deploy` that comparison skips, except under
`make deploy-check` (DAGSCHED_DEPLOY_CHECK=1), where it fails.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shlex
import subprocess
import tomllib
from pathlib import Path

import pytest
import typer

from dagsched.cli import app

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
DEPLOY_PY = ROOT / ".venv-deploy" / "bin" / "python"
SERVE_PREFIX = ["dagsched", "serve"]


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order: comments dropped, backslash continuations joined as Docker joins them."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if pending and line.startswith("#"):
            continue  # a comment inside a continued instruction is dropped
        if line.endswith("\\"):
            pending += line[:-1]
            continue
        full = (pending + line).strip()
        pending = ""
        word, _, rest = full.partition(" ")
        out.append((word.upper(), rest.strip()))
    return out


def stages(ins: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """The instructions of each stage, FROM first."""
    out: list[list[tuple[str, str]]] = []
    for item in ins:
        if item[0] == "FROM":
            out.append([])
        if out:
            out[-1].append(item)
    return out


def exec_form(args: str) -> list[str]:
    """CMD/ENTRYPOINT/HEALTHCHECK CMD arguments in exec form (a JSON array); shell form fails the test."""
    value = json.loads(args)
    assert isinstance(value, list), f"not exec form: {args}"
    return [str(v) for v in value]


def env_of(stage: list[tuple[str, str]]) -> dict[str, str]:
    env: dict[str, str] = {}
    for word, rest in stage:
        if word == "ENV":
            for token in shlex.split(rest):
                key, _, value = token.partition("=")
                env[key] = value
    return env


def documented_command() -> list[str]:
    """The image's command as the README's Deploy section states it, or docs/deploy.md's until the README has one."""
    for doc in (ROOT / "README.md", ROOT / "docs" / "deploy.md"):
        text = doc.read_text()
        section = re.search(r"^## Deploy\n(.*?)(?=^## )", text + "\n## end", re.S | re.M)
        if section is None:
            continue
        found = re.search(r"the image runs `([^`]+)`", section.group(1))
        assert found, f"{doc.name}'s Deploy section does not say what the image runs"
        return shlex.split(found.group(1))
    raise AssertionError("neither README.md nor docs/deploy.md has a '## Deploy' section")


def serve_options() -> set[str]:
    serve = typer.main.get_command(app).commands["serve"]  # type: ignore[attr-defined]
    return {opt for param in serve.params for opt in param.opts}


def assert_serve_command(argv: list[str]) -> None:
    """`dagsched serve` with options `dagsched serve --help` lists, each with a value (no flags among them)."""
    assert argv[:2] == SERVE_PREFIX, argv
    known = serve_options()
    options = argv[2::2]
    assert all(o in known for o in options), f"unknown serve options {set(options) - known} in {argv}"
    assert len(argv[2:]) % 2 == 0, f"an option without a value in {argv}"


def dockerignore_allows(path: str) -> bool:
    """Docker's .dockerignore rule: the last pattern that matches the path (or a folder above it) decides."""
    allowed = True
    for raw in (ROOT / ".dockerignore").read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        pattern = line.lstrip("!").rstrip("/")
        parts = Path(path).parts
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        if pattern.startswith("**/"):
            hit = any(fnmatch.fnmatch(part, pattern[3:]) for part in parts)
        else:
            hit = any(fnmatch.fnmatch(p, pattern) for p in prefixes)
        if hit:
            allowed = negate
    return allowed


@pytest.fixture(scope="module")
def parsed() -> list[tuple[str, str]]:
    return instructions(DOCKERFILE.read_text())


def test_two_stages_on_python_311_slim_and_a_non_root_user(parsed: list[tuple[str, str]]) -> None:
    """A build stage and a runtime stage, both python:3.11-slim, pinned (no `latest`); the runtime stage's USER is
    a numeric non-root uid, set before the command, so the process never runs as root."""
    st = stages(parsed)
    assert len(st) == 2
    for stage in st:
        image = stage[0][1].split()[0]
        assert re.fullmatch(r"python:3\.11-slim(-[a-z]+)?", image), image
    users = [rest for word, rest in st[-1] if word == "USER"]
    assert users, "the runtime stage sets no USER"
    uid = users[-1].split(":")[0]
    assert uid.isdigit() and int(uid) >= 10000, users[-1]


def test_installs_as_the_makefile_does(parsed: list[tuple[str, str]]) -> None:
    """torch first, pinned to the lock's version, the CPU wheel from PyTorch's CPU index; then `-r requirements.lock`;
    then the package without dependencies: the Makefile's $(STAMP) order."""
    runs = [rest for word, rest in stages(parsed)[0] if word == "RUN"]
    lock = (ROOT / "requirements.lock").read_text().splitlines()
    torch_pin = next(line for line in lock if line.startswith("torch=="))
    torch_at = next(i for i, r in enumerate(runs) if torch_pin in r)
    assert "--index-url https://download.pytorch.org/whl/cpu" in runs[torch_at]
    lock_at = next(i for i, r in enumerate(runs) if "-r requirements.lock" in r)
    pkg_at = next(i for i, r in enumerate(runs) if re.search(r"pip install --no-deps \.(\s|$)", r))
    assert torch_at < lock_at < pkg_at
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert torch_pin in deps, "the image's torch pin is not pyproject's"


def test_every_copy_source_exists_and_is_in_the_build_context(parsed: list[tuple[str, str]]) -> None:
    """Each COPY from the context names a file or folder of the repository that .dockerignore lets in, and the
    shipped policy (package data) is among what they bring."""
    sources: list[str] = []
    for word, rest in parsed:
        if word != "COPY" or rest.startswith("--from"):
            continue
        *srcs, _dest = rest.split()
        sources += [s.rstrip("/") for s in srcs]
    assert sources
    for src in sources:
        assert (ROOT / src).exists(), f"COPY {src}: no such path"
        assert dockerignore_allows(src), f"COPY {src}: left out by .dockerignore"
    models = sorted((ROOT / "src" / "dagsched" / "data" / "models").glob("*.safetensors"))
    assert models, "no shipped policy under src/dagsched/data/models/"
    for model in models:
        rel = model.relative_to(ROOT).as_posix()
        assert any(rel.startswith(s + "/") for s in sources) and dockerignore_allows(rel)
        assert dockerignore_allows(rel[: -len(".safetensors")] + ".json")
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["dagsched"]
    assert "data/**/*" in data, "the policy files would not be installed with the package"
    assert not dockerignore_allows("src/dagsched/__pycache__/x.pyc")


def test_writable_paths_are_volumes(parsed: list[tuple[str, str]]) -> None:
    """numba's cache and the uploaded models go under declared VOLUMEs (writable with a read-only root), owned by the
    runtime user; so does the default SQLite store."""
    runtime = stages(parsed)[-1]
    env = env_of(runtime)
    volumes = [v for word, rest in runtime if word == "VOLUME" for v in json.loads(rest)]
    for key in ("NUMBA_CACHE_DIR", "DAGSCHED_MODEL_DIR"):
        assert any(env[key].startswith(v + "/") for v in volumes), f"{key}={env[key]} is not on a volume"
    sqlite_path = env["DAGSCHED_STORE_URL"].removeprefix("sqlite:///")
    assert any(sqlite_path.startswith(v + "/") for v in volumes)
    chown = next(rest for word, rest in runtime if word == "RUN" and "chown" in rest)
    assert all(v in chown for v in volumes)


def test_command_is_the_documented_one_and_healthcheck_calls_healthz(parsed: list[tuple[str, str]]) -> None:
    """CMD is, word for word, the command the Deploy section documents, made of real `dagsched serve` options, on
    the EXPOSEd port; HEALTHCHECK requests /healthz on that port."""
    runtime = stages(parsed)[-1]
    assert not [w for w, _ in runtime if w == "ENTRYPOINT"]
    cmd = exec_form(next(rest for word, rest in runtime if word == "CMD"))
    assert cmd == documented_command()
    assert_serve_command(cmd)
    port = cmd[cmd.index("--port") + 1]
    assert cmd[cmd.index("--host") + 1] == "0.0.0.0"
    assert [rest for word, rest in runtime if word == "EXPOSE"] == [port]
    health = next(rest for word, rest in runtime if word == "HEALTHCHECK")
    probe = " ".join(exec_form(health.split(" CMD ", 1)[1]))
    assert f"http://127.0.0.1:{port}/healthz" in probe


def _deploy_tool(code: str) -> str:
    if not DEPLOY_PY.exists():
        if os.environ.get("DAGSCHED_DEPLOY_CHECK"):
            pytest.fail(".venv-deploy is missing under make deploy-check")
        pytest.skip(".venv-deploy not found: `make deploy-check` creates it from deploy/requirements-deploy.lock")
    done = subprocess.run([str(DEPLOY_PY), "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_dockerfile_parse_reads_the_same_instructions(parsed: list[tuple[str, str]]) -> None:
    """dockerfile-parse (the deploy tools' venv) sees the same instructions in the same order, and the same base
    image of the runtime stage: the small parser above is not fooling the other tests."""
    out = _deploy_tool(
        "import json; from dockerfile_parse import DockerfileParser as P; p = P('Dockerfile');"
        "print(json.dumps({'ins': [[i['instruction'], i['value']] for i in p.structure], 'base': p.baseimage}))"
    )
    theirs = json.loads(out)
    assert [w for w, _ in theirs["ins"] if w != "COMMENT"] == [w for w, _ in parsed]
    assert theirs["base"] == stages(parsed)[-1][0][1].split()[0]
    theirs_cmd = next(v for w, v in theirs["ins"] if w == "CMD")
    assert json.loads(theirs_cmd) == exec_form(next(r for w, r in parsed if w == "CMD"))
