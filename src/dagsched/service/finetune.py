"""`dagsched finetune`: fine-tune the serving policy on what one environment really asked the service.

Why: the shipped policy was trained on synthetic DAGs and preset clusters; the workflows and node
states a deployment actually sends drift from them. The decision store already keeps every plan's
request (workflow and node states) with its environment label, so a short, seeded fine-tune on
those requests, judged on requests it never saw, is a safe way to follow the drift.

What runs, in order:

1. read: first plans (not re-plans) labelled `--env`, newer than `--since`, from the store; each
   request becomes a problem exactly as the planner built it (`problem.build_problem`: the nodes'
   free capacity is the capacity; the runtime config's rules are not logged, so none apply).
   Records of any other label (dev, test) never enter.
2. split: a plan is held out when sha256(plan id) falls under `--holdout`: the same logs give the
   same split, and a plan never moves between sides as logs grow.
3. fine-tune: DAgger (`rl.imitation`): each round plays every training problem mixing the
   HEFT-from-here teacher (probability `beta`) and the policy itself, labels every visited state
   with the teacher's action, and fits a few epochs of behaviour cloning at a small learning rate.
   Imitation rather than PPO because it takes seconds, needs no Ray, and cannot drift far from
   the policy it starts at.
4. evaluate: old and new policies, greedy, on the held-out problems in the one simulator
   (`sim.run.simulate` with the `drl` scheduler); the score is the mean of new/old makespan.
5. ship, only if new/old < 1 - `--margin`: `PUT /v1/model/weights` on `--service` (bearer token
   from `DAGSCHED_API_TOKEN`), or the policy files in `--out`. A loser is never shipped.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from dagsched.model.errors import InputError

if TYPE_CHECKING:
    from dagsched.model.compiled import CompiledProblem

_UNITS_S = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")


@dataclass(frozen=True)
class FinetuneConfig:
    """What to read, how to fine-tune, and when the result is good enough to ship."""

    store: str
    """decision store URL (sqlite:///file.sqlite or postgresql://...)"""
    environment: str = "prod"
    """only plans stored with this label are read"""
    since_s: float = 86400.0
    """only plans stored in the last `since_s` seconds are read"""
    model: Path | None = None
    """policy stem to start from (None: the shipped model)"""
    holdout: float = 0.25
    """share of plans held out for evaluation (by hash of the plan id)"""
    max_problems: int = 200
    """newest plans read at most (keeps the fine-tune brief)"""
    rounds: int = 2
    """DAgger rounds (each plays every training problem once)"""
    epochs: int = 2
    """passes over the DAgger buffer per round"""
    lr: float = 1e-4
    """Adam learning rate (small: stay near the serving policy)"""
    beta: float = 0.5
    """probability the teacher acts in a step (else the policy being tuned)"""
    batch_size: int = 64
    """states per minibatch"""
    margin: float = 0.01
    """ship only when mean new/old makespan < 1 - margin"""
    seed: int = 0
    """seed of the episodes and the minibatch order"""


@dataclass
class LoggedProblem:
    """One logged request, compiled as the planner compiled it."""

    plan_id: str
    workflow: str
    created_at: float
    cp: CompiledProblem


@dataclass
class HeldOutResult:
    """Old and new makespans of one held-out problem."""

    plan_id: str
    workflow: str
    n_tasks: int
    n_nodes: int
    old_makespan: float
    new_makespan: float

    @property
    def ratio(self) -> float:
        return self.new_makespan / max(self.old_makespan, 1e-12)


@dataclass
class Outcome:
    """What a run did: the data it used, the comparison, and whether (and where) it shipped."""

    train: list[LoggedProblem]
    held_out: list[LoggedProblem]
    skipped: list[str]
    results: list[HeldOutResult] = field(default_factory=list)
    train_stats: dict[str, float] = field(default_factory=dict)
    mean_ratio: float = math.nan
    shipped: bool = False
    version: str | None = None
    destination: str | None = None
    reason: str = ""
    upload_error: str | None = None


# ---- 1. reading the logs -------------------------------------------------------------------------


def parse_duration(text: str, flag: str = "--since") -> float:
    """'30m', '24h', '7d' (also s and w) -> seconds; anything else is an InputError naming the flag."""
    m = _DURATION.match(text or "")
    if m is None or float(m.group(1)) <= 0:
        raise InputError(flag, f"expected a positive duration like 30m, 24h or 7d (units s, m, h, d, w), got {text!r}")
    return float(m.group(1)) * _UNITS_S[m.group(2)]


def check_store_url(url: str) -> str:
    """The store URL as SQLAlchemy will open it; refuses unknown schemes and missing SQLite files."""
    from dagsched.service.store import normalise_url

    full = normalise_url(url)
    scheme = full.split("://", 1)[0]
    if scheme not in ("sqlite", "postgresql+psycopg"):
        raise InputError(
            "--store", f"unknown URL scheme '{scheme}'; use sqlite:///file.sqlite or postgresql://user:pw@host/db"
        )
    if scheme == "sqlite":
        path = full.split("://", 1)[1].removeprefix("/")
        if path in ("", ":memory:") or not Path(path).exists():
            raise InputError("--store", f"no SQLite store at '{path or ':memory:'}' (the file the service wrote)")
    return full


def read_logged_problems(
    url: str, environment: str, since_s: float, max_problems: int, now: float | None = None
) -> tuple[list[LoggedProblem], list[str]]:
    """First plans of `environment` newer than `since_s`, as compiled problems; also why some could not be rebuilt.

    Raises InputError when the store has no such plan, naming the labels it does have.
    """
    import sqlalchemy as sa

    from dagsched.io import workflow_from_dict
    from dagsched.service.problem import build_problem
    from dagsched.service.schemas import ScheduleRequest
    from dagsched.service.store import Store

    cutoff = (time.time() if now is None else now) - since_s
    try:
        store = Store(check_store_url(url), create=False)
    except sa.exc.SQLAlchemyError as err:
        raise InputError("--store", f"cannot open the store: {type(err).__name__}: {err}") from None
    try:
        rows = store.first_plans(environment, cutoff, max_problems)
        labels = [] if rows else store.plans_per_environment(cutoff)
    except sa.exc.SQLAlchemyError as err:
        raise InputError("--store", f"cannot read the plans table: {type(err).__name__}: {err}") from None
    finally:
        store.close()
    if not rows:
        present = ", ".join(f"{label} ({n})" for label, n in labels) or "none"
        raise InputError(
            "--env", f"no plans labelled '{environment}' in the store in that window; labels there: {present}"
        )
    problems: list[LoggedProblem] = []
    skipped: list[str] = []
    for row in sorted(rows, key=lambda r: (r["created_at"], r["id"])):
        try:
            req = ScheduleRequest.model_validate(row["request"])
            cp, _, _, _ = build_problem(workflow_from_dict(req.workflow), req.nodes, [], 10**9)
        except (InputError, ValueError) as err:  # an old or odd record is skipped, not fatal
            skipped.append(f"{row['id']}: {err}")
            continue
        problems.append(LoggedProblem(row["id"], row["workflow"], float(row["created_at"]), cp))
    return problems, skipped


# ---- 2. the deterministic split ------------------------------------------------------------------


def is_held_out(plan_id: str, fraction: float) -> bool:
    """Held out when the first 8 bytes of sha256(plan id), as a share of 2^64, fall under `fraction`."""
    h = int.from_bytes(hashlib.sha256(plan_id.encode()).digest()[:8], "big")
    return h / 2**64 < fraction


def split(problems: list[LoggedProblem], fraction: float) -> tuple[list[LoggedProblem], list[LoggedProblem]]:
    """(training, held out), each in the input's order."""
    held = [p for p in problems if is_held_out(p.plan_id, fraction)]
    return [p for p in problems if not is_held_out(p.plan_id, fraction)], held


# ---- 3. the fine-tune ----------------------------------------------------------------------------


def fine_tune(policy: Any, problems: list[LoggedProblem], cfg: FinetuneConfig) -> tuple[Any, dict[str, float]]:
    """A copy of `policy` after `cfg.rounds` DAgger rounds on `problems`; the mean losses of the last round."""
    import numpy as np
    import torch

    from dagsched.rl.env import EnvConfig, SchedulingEnv
    from dagsched.rl.imitation import Sample, dagger_round

    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    new = copy.deepcopy(policy)
    # one environment whose padded sizes hold every problem (episodes pass their problem in reset)
    env = SchedulingEnv(
        EnvConfig(
            max_tasks=max(128, *(p.cp.n_tasks for p in problems)),
            max_nodes=max(16, *(p.cp.n_nodes for p in problems)),
            max_edges=max(1024, *(len(p.cp.succ_idx) for p in problems)),
            history_len=policy.config.history_len,
        )
    )
    optimizer = torch.optim.Adam(new.parameters(), lr=cfg.lr)
    buffer: list[Sample] = []
    stats: dict[str, float] = {}

    def episodes() -> Iterator[tuple[Any, int, dict[str, Any]]]:
        for p in problems:
            seed = int(rng.integers(2**31))
            yield env, seed, {"problem": p.cp, "sim_seed": seed}

    for _ in range(cfg.rounds):
        new.eval()
        stats, _ = dagger_round(new, optimizer, episodes(), cfg.beta, rng, buffer, cfg.epochs, cfg.batch_size)
    new.eval()
    stats["states"] = float(len(buffer))
    return new, stats


# ---- 4. judging old against new ------------------------------------------------------------------


def evaluate(old: Any, new: Any, problems: list[LoggedProblem]) -> list[HeldOutResult]:
    """Greedy makespan of each policy on each problem, in the one simulator (as the service plans)."""
    from dagsched.schedulers import simulate
    from dagsched.schedulers.drl import DRLScheduler

    def makespan(policy: Any, cp: CompiledProblem) -> float:
        result = simulate(cp, DRLScheduler(policy=policy), validate=True)
        return result.metrics.makespan if result.valid else math.inf

    return [
        HeldOutResult(p.plan_id, p.workflow, p.cp.n_tasks, p.cp.n_nodes, makespan(old, p.cp), makespan(new, p.cp))
        for p in problems
    ]


def verdict(results: list[HeldOutResult], margin: float) -> tuple[float, bool]:
    """(mean new/old makespan, whether it is under 1 - margin); an empty or non-finite mean never wins."""
    if not results:
        return math.nan, False
    mean = sum(r.ratio for r in results) / len(results)
    return mean, math.isfinite(mean) and mean < 1.0 - margin


# ---- 5. shipping ---------------------------------------------------------------------------------


def policy_version(stem: Path) -> str:
    """The version in a policy's metadata, else `sha-<first 12 of sha256>` (as the service names it)."""
    meta = json.loads(Path(str(stem) + ".json").read_text())
    return str(meta.get("version") or f"sha-{str(meta.get('sha256', ''))[:12]}")


def save_finetuned(policy: Any, stem: Path, version: str, lineage: dict[str, Any]) -> Path:
    """`<stem>.safetensors` + `<stem>.json`, the metadata carrying the version and where it came from."""
    from dagsched.policy.files import save_policy

    _, meta_path = save_policy(policy, stem)
    meta = json.loads(meta_path.read_text())
    meta["version"] = version
    meta["finetune"] = lineage
    meta_path.write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return stem


def upload(http: Any, token: str, stem: Path) -> dict[str, Any]:
    """PUT the policy files to a running service (`http`: an httpx.Client on its base URL); its model info."""
    files = {
        "weights": ("policy.safetensors", Path(str(stem) + ".safetensors").read_bytes(), "application/octet-stream"),
        "metadata": ("policy.json", Path(str(stem) + ".json").read_bytes(), "application/json"),
    }
    r = http.put("/v1/model/weights", files=files, headers={"Authorization": f"Bearer {token}"})
    if r.status_code != 200:
        try:
            detail = r.json().get("detail", r.text)
        except ValueError:
            detail = r.text
        raise RuntimeError(f"the service refused the upload ({r.status_code}): {detail}")
    return dict(r.json())


# ---- the run, top to bottom ----------------------------------------------------------------------


def run(
    cfg: FinetuneConfig,
    out: Path,
    http: Any = None,
    token: str | None = None,
    judge: Callable[[Any, Any, list[LoggedProblem]], list[HeldOutResult]] = evaluate,
    now: float | None = None,
) -> Outcome:
    """Read, split, fine-tune, judge, ship (to `http` when given, else to `out`). `judge` is injectable for tests."""
    from dagsched.policy import shipped_model_path
    from dagsched.policy.files import PolicyFileError, load_policy

    problems, skipped = read_logged_problems(cfg.store, cfg.environment, cfg.since_s, cfg.max_problems, now)
    train, held = split(problems, cfg.holdout)
    outcome = Outcome(train, held, skipped)
    if not train or not held:
        outcome.reason = (
            f"too few plans to fine-tune and judge: {len(train)} to train on, {len(held)} held out "
            f"(--holdout {cfg.holdout:g}); kept the serving model"
        )
        return outcome
    stem = cfg.model if cfg.model is not None else shipped_model_path()
    try:
        old = load_policy(stem)
    except PolicyFileError as err:
        raise InputError("--model", str(err)) from None

    new, outcome.train_stats = fine_tune(old, train, cfg)
    outcome.results = judge(old, new, held)
    outcome.mean_ratio, wins = verdict(outcome.results, cfg.margin)
    if not wins:
        outcome.reason = (
            f"kept the serving model: mean new/old makespan {outcome.mean_ratio:.4f} "
            f"is not under {1.0 - cfg.margin:.4f} (margin {cfg.margin:g})"
        )
        return outcome

    parent = policy_version(stem)
    stamp = datetime.fromtimestamp(time.time() if now is None else now, UTC).strftime("%Y%m%dT%H%M%SZ")
    outcome.version = re.sub(r"[^A-Za-z0-9._-]", "_", f"{parent}-ft-{cfg.environment}-{stamp}")
    lineage = {
        "parent": parent,
        "environment": cfg.environment,
        "since_s": cfg.since_s,
        "train_plans": len(train),
        "held_out_plans": len(held),
        "mean_makespan_ratio": outcome.mean_ratio,
        "algorithm": f"DAgger from HEFT-from-here, {cfg.rounds} rounds x {cfg.epochs} epochs, lr {cfg.lr:g}",
        "seed": cfg.seed,
    }
    saved = save_finetuned(new, out / outcome.version, outcome.version, lineage)
    if http is not None:
        import httpx

        try:
            info = upload(http, token or "", saved)
        except (RuntimeError, OSError, httpx.HTTPError) as err:
            outcome.upload_error = str(err)
            outcome.reason = f"the fine-tuned policy won but was not shipped: {err}; its files are at {saved}"
            return outcome
        outcome.destination = f"the service, now serving {info.get('version')}"
    else:
        outcome.destination = str(saved)
    outcome.shipped = True
    outcome.reason = (
        f"shipped {outcome.version}: mean new/old makespan {outcome.mean_ratio:.4f} < {1.0 - cfg.margin:.4f}"
    )
    return outcome


def report(outcome: Outcome, cfg: FinetuneConfig) -> None:
    """The Rich table of old vs new on the held-out problems, then the decision."""
    from rich.table import Table

    from dagsched.console import console

    console.print(
        f"[bold]{cfg.environment}[/]: {len(outcome.train) + len(outcome.held_out)} plans "
        f"({len(outcome.train)} train, {len(outcome.held_out)} held out, {len(outcome.skipped)} skipped)"
        + (
            f"; fine-tune: {outcome.train_stats['states']:.0f} states, "
            f"bc loss {outcome.train_stats.get('bc_loss', math.nan):.4f}, "
            f"teacher agreement {outcome.train_stats.get('accuracy', math.nan):.3f}"
            if outcome.train_stats
            else ""
        )
    )
    if outcome.results:
        table = Table(title="held-out plans: makespan of the serving (old) and fine-tuned (new) policy")
        for col in ("plan", "workflow", "tasks", "nodes", "old s", "new s", "new/old"):
            table.add_column(col, justify="left" if col in ("plan", "workflow") else "right")
        for r in outcome.results:
            table.add_row(
                r.plan_id[:12],
                r.workflow,
                str(r.n_tasks),
                str(r.n_nodes),
                f"{r.old_makespan:.2f}",
                f"{r.new_makespan:.2f}",
                f"{r.ratio:.4f}",
            )
        table.add_section()
        table.add_row("mean", "", "", "", "", "", f"{outcome.mean_ratio:.4f}")
        console.print(table)
    for line in outcome.skipped[:3]:
        console.print(f"skipped plan {line}")
    console.print(("[bold green]" if outcome.shipped else "[bold yellow]") + outcome.reason + "[/]")
    if outcome.destination:
        console.print(f"written to {outcome.destination}")


# ---- the command ---------------------------------------------------------------------------------


def finetune(
    store: Annotated[str, typer.Option("--store", help="decision store URL: sqlite:///file.sqlite or postgresql://")],
    since: Annotated[str, typer.Option("--since", help="window of plans read: 30m, 24h, 7d")] = "24h",
    env: Annotated[str, typer.Option("--env", help="environment label of the plans read (others never enter)")] = (
        "prod"
    ),
    model: Annotated[
        Path | None, typer.Option("--model", help="policy stem to start from (default: the shipped model)")
    ] = None,
    service: Annotated[
        str | None, typer.Option("--service", help="service URL to upload a winner to (token: DAGSCHED_API_TOKEN)")
    ] = None,
    out: Annotated[Path, typer.Option("--out", help="folder for a winner's files (without --service)")] = Path(
        "dagsched-finetune"
    ),
    holdout: Annotated[float, typer.Option("--holdout", help="share of plans held out to judge on")] = 0.25,
    margin: Annotated[float, typer.Option("--margin", help="ship when mean new/old makespan < 1 - margin")] = 0.01,
    rounds: Annotated[int, typer.Option("--rounds", help="DAgger rounds")] = 2,
    epochs: Annotated[int, typer.Option("--epochs", help="passes over the buffer per round")] = 2,
    lr: Annotated[float, typer.Option("--lr", help="learning rate")] = 1e-4,
    max_problems: Annotated[int, typer.Option("--max-problems", help="newest plans read at most")] = 200,
    seed: Annotated[int, typer.Option("--seed", help="seed of the fine-tune")] = 0,
) -> None:
    """Fine-tune the serving policy on one environment's logged plans; ship it only if it wins on held-out ones.

    Exit 0 whether or not it ships; 2 on bad input (flags, store, no plans for --env); 1 if an upload fails.
    """
    import httpx

    from dagsched.console import fail

    try:
        if not env.strip():
            raise InputError("--env", "give an environment label, e.g. prod")
        if not 0.0 < holdout < 1.0:
            raise InputError("--holdout", f"must be between 0 and 1 (exclusive), got {holdout:g}")
        if not -1.0 < margin < 1.0:
            raise InputError("--margin", f"must be between -1 and 1, got {margin:g}")
        for flag, value in (("--rounds", rounds), ("--epochs", epochs), ("--max-problems", max_problems)):
            if value < 1:
                raise InputError(flag, f"must be at least 1, got {value}")
        if not lr >= 0.0:
            raise InputError("--lr", f"must be >= 0, got {lr:g}")
        token = os.environ.get("DAGSCHED_API_TOKEN") or None
        if service is not None and token is None:
            raise InputError("DAGSCHED_API_TOKEN", "set it to the service's bearer token to upload with --service")
        cfg = FinetuneConfig(
            store=store,
            environment=env,
            since_s=parse_duration(since),
            model=model,
            holdout=holdout,
            max_problems=max_problems,
            rounds=rounds,
            epochs=epochs,
            lr=lr,
            margin=margin,
            seed=seed,
        )
        check_store_url(store)
        if service is None:
            outcome = run(cfg, out)
        else:
            with httpx.Client(base_url=service.rstrip("/"), timeout=60.0) as http:
                outcome = run(cfg, out, http=http, token=token)
    except InputError as err:
        raise fail(err) from None
    report(outcome, cfg)
    if outcome.upload_error is not None:
        raise typer.Exit(1)
