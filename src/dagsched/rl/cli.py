"""`dagsched train` and `dagsched evaluate`: call `register(app)` on the main Typer app."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Optional

import typer

from dagsched.console import comma_list


def _stages(spec: str) -> tuple[tuple[int, int], ...]:
    """'10-30,20-60' -> ((10, 30), (20, 60))."""
    out = []
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        out.append((int(lo), int(hi or lo)))
    return tuple(out)


def _names(spec: str) -> tuple[str, ...]:
    return tuple(comma_list(spec))


def _ccr_range(spec: str | None) -> tuple[float, float] | None:
    if spec is None:
        return None
    try:
        lo, hi = (float(x) for x in spec.split("-"))
    except ValueError:
        raise typer.BadParameter(f"--ccr must be LO-HI, e.g. 0.1-10, got {spec!r}") from None
    if not 0 < lo <= hi:
        raise typer.BadParameter(f"--ccr must have 0 < LO <= HI, got {spec!r}")
    return lo, hi


def _weights(spec: str) -> dict[str, float]:
    """`--rl-reward makespan=1,cost=0` as ObjectiveWeights fields (checked here, so a typo exits with status 2)."""
    from pydantic import ValidationError

    from dagsched.sim.objective import ObjectiveWeights

    out: dict[str, float] = {}
    for part in comma_list(spec):
        name, sep, value = part.partition("=")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            raise typer.BadParameter(f"--rl-reward: {part!r} is not NAME=NUMBER") from None
        if not sep:
            raise typer.BadParameter(f"--rl-reward: {part!r} is not NAME=NUMBER")
    try:
        ObjectiveWeights(**out)
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(x) for x in err["loc"])
        raise typer.BadParameter(f"--rl-reward: {field}: {err['msg']}") from None
    return out


def register(app: typer.Typer) -> None:
    """Add the `train` and `evaluate` commands to `app`."""

    @app.command()
    def train(
        name: Annotated[str, typer.Option(help="run name: logs and checkpoints under <out-dir>/<name>/")] = "drl",
        out_dir: Annotated[Path, typer.Option(help="root of TensorBoard logs and checkpoints")] = Path("runs"),
        model_out: Annotated[Optional[Path], typer.Option(help="stem of the final policy files")] = None,  # noqa: UP045
        seed: Annotated[int, typer.Option(help="seed of everything")] = 0,
        algo: Annotated[str, typer.Option(help="ppo or a2c (a2c: PPO with one epoch, no clipping)")] = "ppo",
        families: Annotated[str, typer.Option(help="synthetic families trained on")] = "layered,random,ml_pipeline",
        recipes: Annotated[
            str, typer.Option(help="WfCommons recipes trained on")
        ] = "blast,bwa,cycles,seismology,soykb",
        stages: Annotated[str, typer.Option(help="curriculum of task ranges, small to large")] = "10-30,20-60,40-100",
        imitation_rounds: Annotated[int, typer.Option(help="DAgger rounds")] = 12,
        teacher: Annotated[
            str,
            typer.Option(
                help="DAgger teacher: heft, rollout (better, slower) or expert (rollout with the learner as a base)"
            ),
        ] = "heft",
        ccr: Annotated[
            Optional[str],  # noqa: UP045
            typer.Option(help="CCR range of synthetic workflows, LO-HI, drawn log-uniformly (default: 0.5)"),
        ] = None,
        heterogeneity: Annotated[float, typer.Option(help="heterogeneity of random clusters, 0-1")] = 0.5,
        episodes_per_round: Annotated[int, typer.Option(help="episodes per DAgger round")] = 16,
        epochs: Annotated[int, typer.Option(help="passes over the DAgger buffer per round")] = 2,
        buffer_size: Annotated[int, typer.Option(help="DAgger buffer, oldest states dropped first")] = 40000,
        lr: Annotated[float, typer.Option(help="imitation learning rate (lower to fine-tune a trained policy)")] = 1e-3,
        imitation_budget_s: Annotated[float, typer.Option(help="time cap of imitation, seconds")] = math.inf,
        rl_iterations: Annotated[int, typer.Option(help="RLlib iterations (0: imitation only)")] = 0,
        rl_budget_s: Annotated[float, typer.Option(help="time cap of RL fine-tuning, seconds")] = math.inf,
        rl_batch: Annotated[int, typer.Option(help="env steps per RLlib iteration")] = 1000,
        rl_lr: Annotated[float, typer.Option(help="RL learning rate")] = 3e-5,
        rl_mode: Annotated[str, typer.Option(help="simulator mode of the RL env: classic or cloud")] = "cloud",
        rl_cluster: Annotated[
            str, typer.Option(help="cluster of the RL env: a preset, or random (2-16 nodes of --heterogeneity)")
        ] = "hetero-16",
        rl_reward: Annotated[
            Optional[str],  # noqa: UP045
            typer.Option(help="reward weights of the RL env, e.g. makespan=1,cost=0 (unnamed terms keep defaults)"),
        ] = None,
        init_policy: Annotated[
            Optional[Path],  # noqa: UP045
            typer.Option(help="start from this saved policy (stem) instead of a fresh network"),
        ] = None,
        hidden: Annotated[int, typer.Option(help="embedding width")] = 32,
        env_runners: Annotated[int, typer.Option(help="remote RLlib env runners (0: in the driver)")] = 0,
        envs_per_runner: Annotated[int, typer.Option(help="environments per env runner")] = 4,
        address: Annotated[Optional[str], typer.Option(help="Ray cluster address (default: local Ray)")] = None,  # noqa: UP045
        resume: Annotated[bool, typer.Option(help="continue from the run's checkpoint")] = False,
    ) -> None:
        """Train the DRL policy: DAgger imitation of a teacher (HEFT or rollout), then PPO/A2C on Ray RLlib."""
        from dagsched.rl.train import TrainConfig, main_command
        from dagsched.rl.train import train as run

        if algo not in ("ppo", "a2c"):
            raise typer.BadParameter(f"--algo must be ppo or a2c, got {algo!r}")
        from dagsched.rl.imitation import TEACHERS

        if teacher not in TEACHERS:
            raise typer.BadParameter(f"--teacher must be one of {', '.join(TEACHERS)}, got {teacher!r}")
        from dagsched.generate.clusters import PRESETS

        if rl_cluster != "random" and rl_cluster not in PRESETS:
            raise typer.BadParameter(f"--rl-cluster must be random or one of {', '.join(PRESETS)}, got {rl_cluster!r}")
        if init_policy is not None and not init_policy.with_suffix(".safetensors").exists():
            raise typer.BadParameter(f"--init-policy: no {init_policy.with_suffix('.safetensors')}")
        cfg = TrainConfig(
            name=name,
            out_dir=str(out_dir),
            model_out=str(model_out) if model_out else None,
            seed=seed,
            algo=algo,  # type: ignore[arg-type]
            families=_names(families),
            recipes=_names(recipes),
            stages=_stages(stages),
            imitation_rounds=imitation_rounds,
            teacher=teacher,  # type: ignore[arg-type]
            ccr_range=_ccr_range(ccr),
            heterogeneity=heterogeneity,
            episodes_per_round=episodes_per_round,
            epochs=epochs,
            buffer_size=buffer_size,
            lr=lr,
            imitation_budget_s=imitation_budget_s,
            rl_iterations=rl_iterations,
            rl_budget_s=rl_budget_s,
            rl_batch=rl_batch,
            rl_minibatch=min(250, rl_batch),
            rl_lr=rl_lr,
            rl_mode=rl_mode,
            rl_cluster=rl_cluster,
            init_policy=str(init_policy) if init_policy else None,
            rl_reward=_weights(rl_reward) if rl_reward else None,
            hidden=hidden,
            env_runners=env_runners,
            envs_per_runner=envs_per_runner,
            address=address,
            resume=resume,
        )
        record = run(cfg, command=main_command())
        typer.echo(
            f"policy written to {record['weights']} in {record['wall_time_s']} s; "
            f"validation makespan / HEFT {record['validation_makespan_over_heft']:.3f}"
        )

    @app.command()
    def evaluate(
        out: Annotated[Path, typer.Option(help="folder for results.json and report.md")] = Path("runs/evaluate"),
        policy: Annotated[Optional[Path], typer.Option(help="policy stem (default: shipped model)")] = None,  # noqa: UP045
        seeds: Annotated[int, typer.Option(help="seeds per problem")] = 10,
        scales: Annotated[str, typer.Option(help="etl_star task counts")] = "20,50,100",
        traces: Annotated[int, typer.Option(help="held-out real traces (smallest first)")] = 4,
        workers: Annotated[int, typer.Option(help="processes")] = 2,
    ) -> None:
        """DRL vs the heuristics on held-out workloads (etl_star, real traces), classic and cloud, 95 % CIs."""
        from dagsched.rl.evaluate import evaluate as run

        report = run(
            out,
            policy_path=str(policy) if policy else None,
            seeds=seeds,
            scales=tuple(int(x) for x in scales.split(",")),
            n_traces=traces,
            workers=workers,
        )
        typer.echo(report)
        typer.echo(json.dumps({"written": str(out)}))
