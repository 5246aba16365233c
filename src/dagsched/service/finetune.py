"""`dagsched finetune`: fine-tune the serving model on what one environment really asked the service, and really ran,
shipped only when it wins on logged requests it never saw (docs/service.md, "Fine-tuning on the logs").
"""

from __future__ import annotations

import hashlib
import math
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dagsched.model.errors import InputError
from dagsched.rl.finetune import FinetuneConfig, HeldOutResult, LoggedProblem, algorithm, evaluate, verdict


class LogRefused(InputError):
    """The event log failed its audit; `faults` has the counts by kind and `examples` a few of them."""

    def __init__(self, faults: dict[str, int], examples: list[str]) -> None:
        listed = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in faults.items() if n)
        super().__init__(
            "events",
            f"the event log has faults ({listed}): refused; --allow-faults trains without the faulty runs. "
            + "; ".join(examples[:3]),
        )
        self.faults = faults
        self.examples = examples


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
    reality: dict[str, Any] = field(default_factory=dict)
    """with --runtimes executed: runs read, faults by kind, runs left out, the calibration the problems got"""


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


@contextmanager
def reading(url: str, what: str) -> Iterator[Any]:
    """The store at `url` opened to read `what` (`--store` errors when it cannot be opened or read), closed after."""
    import sqlalchemy as sa

    from dagsched.service.store import Store

    try:
        store = Store(check_store_url(url), create=False)
    except sa.exc.SQLAlchemyError as err:
        raise InputError("--store", f"cannot open the store: {type(err).__name__}: {err}") from None
    try:
        yield store
    except sa.exc.SQLAlchemyError as err:
        raise InputError("--store", f"cannot read {what}: {type(err).__name__}: {err}") from None
    finally:
        store.close()


def read_logged_problems(
    url: str,
    environment: str,
    since_s: float,
    max_problems: int,
    now: float | None = None,
    runtimes: str = "requested",
    allow_faults: bool = False,
    outlier_bound: float = 10.0,
    reality: dict[str, Any] | None = None,
) -> tuple[list[LoggedProblem], list[str]]:
    """First plans of `environment` newer than `since_s` as problems, and why some could not be rebuilt."""
    from dagsched.io import workflow_from_dict
    from dagsched.service.calibration import Factors, calibrate
    from dagsched.service.problem import build_problem
    from dagsched.service.schemas import ScheduleRequest

    now = time.time() if now is None else now
    cutoff = now - since_s
    factors = Factors()
    with reading(url, "the plans table") as store:
        rows = store.plans.first_plans(environment, cutoff, max_problems)
        labels = {} if rows else store.plans.per_environment(cutoff)
        if rows and runtimes == "executed":  # calibrated by the executed runs in the window, after their audit
            factors = _executed_factors(store, environment, cutoff, now, allow_faults, outlier_bound, reality)
    if not rows:
        present = ", ".join(f"{label} ({n})" for label, n in labels.items()) or "none"
        raise InputError(
            "--env", f"no plans labelled '{environment}' in the store in that window; labels there: {present}"
        )
    problems: list[LoggedProblem] = []
    skipped: list[str] = []
    for row in sorted(rows, key=lambda r: (r["created_at"], r["id"])):
        try:
            req = ScheduleRequest.model_validate(row["request"])
            wf, nodes, _ = calibrate(workflow_from_dict(req.workflow), req.nodes, factors)
            cp, _, _, _ = build_problem(wf, nodes, [], 10**9)
        except (InputError, ValueError) as err:  # an old or odd record is skipped, not fatal
            skipped.append(f"{row['id']}: {err}")
            continue
        problems.append(LoggedProblem(row["id"], row["workflow"], float(row["created_at"]), cp))
    return problems, skipped


def _executed_factors(
    store: Any,
    environment: str,
    cutoff: float,
    now: float,
    allow_faults: bool,
    outlier_bound: float,
    reality: dict[str, Any] | None,
) -> Any:
    """The calibration factors of the environment's executed runs since `cutoff`, after their audit (LogRefused
    when it finds faults, unless `allow_faults`); what was read goes into `reality`."""
    from dagsched.service.config import Calibration
    from dagsched.service.reality import read_runs

    log = read_runs(store, cutoff, environment, 100_000, outlier_bound)
    counts = log.fault_counts()
    examples = [
        f"{f.kind} in plan {f.root_id[:12]}" + (f", task {f.task}" if f.task else "") + f": {f.detail}"
        for f in log.faults
    ]
    settings = Calibration()
    factors = log.factors(settings, now)
    if reality is not None:
        reality.update(
            {
                "runs": len(log.runs),
                "clean_runs": factors.runs,
                "observations": factors.observations,
                "faults": counts,
                "examples": examples[:20],
                "other_environments": log.other_environments,
                "calibration": factors.to_json(),
            }
        )
    if not log.runs:
        raise InputError(
            "--runtimes",
            f"no executed runs of '{environment}' in that window: report events to /v1/events first",
        )
    if any(counts.values()) and not allow_faults:
        raise LogRefused(counts, examples)
    if not factors.active:
        raise InputError(
            "--runtimes",
            f"{factors.runs} clean executed runs in that window, under the calibration floor of {settings.min_runs}",
        )
    return factors


def in_fraction(key: str, fraction: float) -> bool:
    """Whether the first 8 bytes of sha256(`key`), as a share of 2^64, fall under `fraction`: a sticky pick of that
    share of keys (a held-out plan by its id; a canary candidate's workflow by its name), growing with it."""
    h = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big")
    return h / 2**64 < fraction


def split(problems: list[LoggedProblem], fraction: float) -> tuple[list[LoggedProblem], list[LoggedProblem]]:
    """(training, held out), each in the input's order."""
    held = [p for p in problems if in_fraction(p.plan_id, fraction)]
    return [p for p in problems if not in_fraction(p.plan_id, fraction)], held


def upload(http: Any, token: str, stem: Path) -> str:
    """PUT the policy files to a running service (`http`: an httpx.Client on its base URL); where they went."""
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
    return f"the service, now serving {r.json().get('version')}"


def run(
    cfg: FinetuneConfig,
    out: Path | None = None,
    judge: Callable[[Any, Any, list[LoggedProblem]], list[HeldOutResult]] = evaluate,
    now: float | None = None,
    current: Any = None,
    ship: Callable[[Path], str] | None = None,
) -> Outcome:
    """Read, split, fine-tune, judge and ship (to `ship`, else `out`) from `current` or `cfg.model`."""
    from dagsched.policy.files import PolicyFileError
    from dagsched.policy.priority_net import load_priority_policy, save_priority_policy
    from dagsched.rl.priority_train import finetune
    from dagsched.service.models import version_of
    from dagsched.service.settings import DEFAULT_MODEL

    out = Path(cfg.out) if out is None else out
    reality: dict[str, Any] = {}
    problems, skipped = read_logged_problems(
        cfg.store, cfg.env, cfg.since_s, cfg.max_problems, now, cfg.runtimes, cfg.allow_faults, cfg.outlier_bound,
        reality,
    )  # fmt: skip
    train, held = split(problems, cfg.holdout)
    outcome = Outcome(train, held, skipped, reality=reality)
    if not train or not held:
        outcome.reason = (
            f"too few plans to fine-tune and judge: {len(train)} to train on, {len(held)} held out "
            f"(--holdout {cfg.holdout:g}); kept the serving model"
        )
        return outcome
    if current is not None:
        old, parent = current.policy, current.version
    else:
        stem = Path(cfg.model) if cfg.model is not None else DEFAULT_MODEL
        try:
            old = load_priority_policy(stem)
        except PolicyFileError as err:
            raise InputError("--model", str(err)) from None
        parent = version_of(old.meta)  # the metadata the loader read

    new, outcome.train_stats = finetune(old, [p.cp for p in train], cfg.rounds * cfg.epochs, cfg.lr, cfg.seed)
    outcome.results = judge(old, new, held)
    outcome.mean_ratio, wins = verdict(outcome.results, cfg.margin)
    if not wins:
        outcome.reason = (
            f"kept the serving model: mean new/old makespan {outcome.mean_ratio:.4f} "
            f"is not under {1.0 - cfg.margin:.4f} (margin {cfg.margin:g})"
        )
        return outcome

    stamp = datetime.fromtimestamp(time.time() if now is None else now, UTC).strftime("%Y%m%dT%H%M%SZ")
    outcome.version = re.sub(r"[^A-Za-z0-9._-]", "_", f"{parent}-ft-{cfg.env}-{stamp}")
    lineage = {
        "parent": parent,
        "environment": cfg.env,
        "since_s": cfg.since_s,
        "runtimes": cfg.runtimes,
        "train_plans": len(train),
        "held_out_plans": len(held),
        "mean_makespan_ratio": outcome.mean_ratio,
        "algorithm": algorithm(cfg),
        "seed": cfg.seed,
    }
    saved = out / outcome.version  # <saved>.safetensors + <saved>.json, the metadata with the version and lineage
    save_priority_policy(new, saved, {"version": outcome.version, "finetune": lineage})
    if ship is None:
        outcome.destination = str(saved)
    else:
        import httpx

        try:
            outcome.destination = ship(saved)
        except (RuntimeError, OSError, InputError, httpx.HTTPError) as err:
            outcome.upload_error = str(err)
            outcome.reason = f"the fine-tuned policy won but was not shipped: {err}; its files are at {saved}"
            return outcome
    outcome.shipped = True
    outcome.reason = (
        f"shipped {outcome.version}: mean new/old makespan {outcome.mean_ratio:.4f} < {1.0 - cfg.margin:.4f}"
    )
    return outcome
