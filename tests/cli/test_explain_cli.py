"""`dagsched explain`: the JSON and PNGs it writes, and exit status 2 naming the option on bad input."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from dagsched.cli import app

runner = CliRunner()

ETL = """name: nightly-etl
tasks:
  - {id: raw_ingest, runtime: 120, resources: {cpu: 2, mem: 4}}
  - {id: cleaning, runtime: 300, resources: {cpu: 4, mem: 8}, dependencies: [raw_ingest]}
  - {id: feature_engineering, runtime: 200, dependencies: [{task: cleaning, data: 2.0e9}]}
  - {id: model_training, runtime: 1800, resources: {cpu: 8, mem: 32, gpu: 1}, dependencies: [feature_engineering]}
"""


def _etl(tmp_path: Path) -> Path:
    path = tmp_path / "etl.yaml"
    path.write_text(ETL)
    return path


def _colours(png: Path) -> set[tuple[int, int, int]]:
    import matplotlib.image as mpimg
    import numpy as np

    rgb = (mpimg.imread(png)[..., :3] * 255).round().astype(int)
    return {tuple(int(c) for c in px) for px in np.unique(rgb.reshape(-1, 3), axis=0)}


def test_explain_drl_attributes_the_score_of_its_least_certain_decision(tmp_path: Path) -> None:
    from dagsched.explain.plots import LOWERS_RGB, RAISES_RGB

    out = tmp_path / "out"
    r = runner.invoke(app, ["explain", "-w", str(_etl(tmp_path)), "-c", "hetero-16", "-o", str(out)])
    assert r.exit_code == 0, r.output
    doc = json.loads((out / "explain.json").read_text())
    assert doc["policy"]["reproduced"] is True and doc["policy"]["model_version"] == "drl-v3"
    certain = {t["task"]: t["policy"]["probability"] for t in doc["tasks"]}
    assert certain[doc["task"]["task"]] == min(certain.values())
    gpu = next(t for t in doc["tasks"] if t["task"] == "model_training")
    assert gpu["node"].startswith("gpu-")  # the only nodes with a GPU; the others are rejected, with the reason
    assert all(x["constraint"].startswith("capacity: gpu 1 > free 0") for x in gpu["evidence"]["rejected"])
    at = doc["task"]["attributions"]
    assert at["target"].startswith("the task's score")
    assert abs(at["total"] - (at["output"] - at["baseline_output"])) <= 1e-2 * max(1.0, abs(at["total"]))
    # the console names the inputs that raised the score most and those that lowered it, with their values
    ups = sorted((f for f in at["by_feature"] if f["value"] > 0), key=lambda f: -f["value"])
    downs = sorted((f for f in at["by_feature"] if f["value"] < 0), key=lambda f: f["value"])
    assert ups and downs
    text = " ".join(r.output.split())
    assert f"raised by: {ups[0]['group']}.{ups[0]['feature']}" in text
    assert f"lowered by: {downs[0]['group']}.{downs[0]['feature']}" in text
    for png in ("attributions.png", "dag.png"):
        assert (out / png).read_bytes().startswith(b"\x89PNG")
    # the largest bar is drawn in the colour of its sign: red raises the score, blue lowers it
    largest = at["by_feature"][0]
    assert (RAISES_RGB if largest["value"] > 0 else LOWERS_RGB) in _colours(out / "attributions.png")


def test_explain_drl_with_a_model_file_and_a_refused_one(tmp_path: Path) -> None:
    """--model: the priority policy saved there explains the plan under its file's name; a file of another format
    (an old per-decision policy's) exits 2 naming --model and the format, writing nothing."""
    import torch

    from dagsched.policy.priority_net import PriorityConfig, PriorityPolicy, save_priority_policy

    torch.manual_seed(0)
    stem = tmp_path / "small-prio"
    save_priority_policy(PriorityPolicy(PriorityConfig(hidden=8, layers=1, head_init=1.0)), stem)
    out = tmp_path / "small"
    r = runner.invoke(app, ["explain", "-w", str(_etl(tmp_path)), "--model", str(stem), "-o", str(out)])
    assert r.exit_code == 0, r.output
    doc = json.loads((out / "explain.json").read_text())
    assert doc["policy"]["model_version"] == "small-prio" and doc["policy"]["reproduced"] is True
    assert doc["task"]["attributions"] is not None and "raised by:" in r.output
    old = tmp_path / "old"
    meta = json.loads(Path(f"{stem}.json").read_text())
    Path(f"{old}.json").write_text(json.dumps({**meta, "format": "dagsched-policy"}))
    Path(f"{old}.safetensors").write_bytes(Path(f"{stem}.safetensors").read_bytes())
    r = runner.invoke(app, ["explain", "-w", str(_etl(tmp_path)), "--model", str(old), "-o", str(tmp_path / "x")])
    text = " ".join(r.output.split())
    assert r.exit_code == 2 and "--model" in text and "format 'dagsched-policy'" in text, r.output
    assert not (tmp_path / "x").exists()


def test_explain_heft_gives_evidence_and_a_dag_coloured_by_node(tmp_path: Path) -> None:
    out = tmp_path / "heft"
    wf = str(_etl(tmp_path))
    r = runner.invoke(app, ["explain", "-w", wf, "-s", "heft", "-t", "cleaning", "-o", str(out)])
    assert r.exit_code == 0, r.output
    doc = json.loads((out / "explain.json").read_text())
    assert doc["policy"] is None and doc["task"]["task"] == "cleaning" and doc["task"]["attributions"] is None
    chosen = [a for a in doc["task"]["evidence"]["alternatives"] if a["chosen"]]
    assert chosen[0]["node"] == doc["task"]["node"]
    assert (out / "dag.png").exists() and not (out / "attributions.png").exists()


def test_explain_bad_input_exits_2_naming_the_option(tmp_path: Path) -> None:
    wf = str(_etl(tmp_path))
    r = runner.invoke(app, ["explain", "-w", wf, "-t", "nope", "-o", str(tmp_path / "x")])
    assert r.exit_code == 2 and "--task" in r.output and "nope" in r.output
    r = runner.invoke(app, ["explain", "-w", wf, "-s", "fastest", "-o", str(tmp_path / "x")])
    assert r.exit_code == 2 and "--scheduler" in r.output
    r = runner.invoke(app, ["explain", "-w", wf, "--model", str(tmp_path / "none"), "-o", str(tmp_path / "x")])
    assert r.exit_code == 2 and "--model" in r.output
    assert not (tmp_path / "x").exists()
