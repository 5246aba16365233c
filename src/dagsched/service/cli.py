"""`dagsched serve` (the scheduling service under uvicorn) and `dagsched gap`, added to `dagsched` by `register`."""

from __future__ import annotations

import logging
import os
import signal
from pathlib import Path
from typing import Annotated, Any

import typer


def serve(
    config: Annotated[Path | None, typer.Option(help="runtime config (YAML/JSON), re-read on SIGHUP")] = None,
    host: Annotated[str, typer.Option(help="interface to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port")] = 8080,
    store: Annotated[
        str | None, typer.Option(help="decision store URL: sqlite:///file.sqlite or postgresql://...")
    ] = None,
    model: Annotated[Path | None, typer.Option(help="policy path stem (.safetensors + .json)")] = None,
    log_level: Annotated[str, typer.Option(help="uvicorn log level")] = "info",
    workers: Annotated[int, typer.Option(min=1, help="worker processes on the one port (each loads the policy)")] = 1,
    report_dir: Annotated[
        Path | None, typer.Option(help="a benchmark report folder whose figures the dashboard shows")
    ] = None,
    grpc_port: Annotated[
        int | None,
        typer.Option(min=0, max=65535, help="also serve the gRPC API (dagsched.proto) on this port"),
    ] = None,
) -> None:
    """Serve plans over HTTP (FastAPI + uvicorn), and over gRPC with --grpc-port: /v1/schedule, model hot swap,
    Kubernetes extender, metrics.

    Mutating routes need `Authorization: Bearer $DAGSCHED_API_TOKEN`. Other settings come from
    DAGSCHED_* environment variables (see dagsched.service.settings).

    `--workers N` runs N processes on one port (the service keeps nothing per request that another
    worker needs: plans and decisions are in the store); SIGHUP to the parent makes every worker
    re-read the config. A weights upload or config change on one worker reaches the others through the store
    (docs/service.md, "Replicas").
    uvloop and httptools are used when installed (`uvicorn[standard]`).
    """
    import uvicorn

    from dagsched.console import fail
    from dagsched.model.errors import InputError
    from dagsched.service.app import create_app
    from dagsched.service.settings import Settings

    if config is not None and not config.exists():
        raise fail(InputError("--config", f"file not found: {config}"))
    if report_dir is not None and not report_dir.is_dir():
        raise fail(InputError("--report-dir", f"not a folder: {report_dir}"))
    given = {"config_file": config, "store_url": store, "model_path": model, "report_dir": report_dir}
    overrides: dict[str, object] = {k: v for k, v in given.items() if v is not None}
    if grpc_port is not None:
        overrides |= {"grpc_port": grpc_port, "grpc_host": host}
    settings = Settings(**overrides)  # type: ignore[arg-type]
    if config is not None:
        from dagsched.service.config import read_config

        try:
            read_config(config)  # refuse a bad config before binding the port, naming the field
        except InputError as err:
            raise fail(err) from None
    logging.basicConfig(level=log_level.upper(), format=_LOG_FORMAT)
    if settings.api_token is None:
        logging.getLogger("dagsched.service").warning("DAGSCHED_API_TOKEN is not set: mutating routes are disabled")
    if workers == 1:
        _one_torch_thread()
        uvicorn.run(create_app(settings), host=host, port=port, log_level=log_level, access_log=False)
        return
    # Each worker is a fresh process that builds its app from the environment: hand the flags on there.
    for name, value in overrides.items():
        os.environ[f"DAGSCHED_{name.upper()}"] = str(value)
    os.environ[_LOG_LEVEL_ENV] = log_level
    config = uvicorn.Config(
        "dagsched.service.cli:worker_app",
        factory=True,
        host=host,
        port=port,
        log_level=log_level,
        access_log=False,
        workers=workers,
    )
    _run_workers(config)


_LOG_LEVEL_ENV = "DAGSCHED_SERVE_LOG_LEVEL"
_LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def worker_app() -> Any:
    """The app of one `serve --workers N` process (settings from the environment the parent set)."""
    logging.basicConfig(level=os.environ.get(_LOG_LEVEL_ENV, "info").upper(), format=_LOG_FORMAT)
    _one_torch_thread()
    from dagsched.service.app import create_app

    return create_app()


def _one_torch_thread() -> None:
    """One intra-op thread per process: a plan's network is a batch of one small graph, a second thread only
    contends (on 2 busy cores a 20-task `drl` plan took 44 ms with two, 12 ms with one)."""
    try:
        import torch
    except ImportError:
        return
    torch.set_num_threads(1)


def _run_workers(config: Any) -> None:
    """uvicorn's supervisor, except that SIGHUP reaches every worker (each re-reads its config in place)."""
    from uvicorn.supervisors import Multiprocess

    class Workers(Multiprocess):
        def handle_hup(self) -> None:
            for process in self.processes:
                if process.pid is not None:
                    os.kill(process.pid, signal.SIGHUP)

    Workers(config, sockets=[config.bind_socket()]).run()


def gap(
    store: Annotated[str, typer.Option(help="decision store URL: sqlite:///file.sqlite or postgresql://")],
    since: Annotated[str, typer.Option(help="window of plans read: 30m, 24h, 7d")] = "7d",
    env: Annotated[str | None, typer.Option(help="environment label of the runs read (default: every one)")] = None,
    limit: Annotated[int, typer.Option(min=1, help="newest executed runs read at most")] = 2000,
    as_json: Annotated[bool, typer.Option("--json", help="print the report as JSON")] = False,
) -> None:
    """The gap between plan and reality in a decision store: actual/declared runtime per task name, workflow, node
    and node class, transfer delays, failure and overrun rates, makespan planned against achieved, and the
    calibration factors those runs give (default settings). Exit 2 on bad input; the store is only read."""
    import time

    from dagsched.console import console, fail, parse_duration
    from dagsched.model.errors import InputError
    from dagsched.service.config import Calibration
    from dagsched.service.finetune import reading
    from dagsched.service.gap import gap_report, print_report
    from dagsched.service.reality import read_runs

    try:
        window_s = parse_duration(since)
        now, settings = time.time(), Calibration()
        with reading(store, "plans and events") as db:
            log = read_runs(db, now - window_s, env, limit, settings.outlier_bound)
    except InputError as err:
        raise fail(err) from None
    report = gap_report(log, log.factors(settings, now))
    if as_json:
        console.print_json(data=report)
    else:
        print_report(report)


def register(app: typer.Typer) -> None:
    """Add `serve`, `gap` and `finetune` to a Typer app (the `dagsched` command)."""
    from dagsched.rl.config_cli import command_from_config
    from dagsched.rl.finetune import FinetuneConfig
    from dagsched.service.finetune_cli import run_command

    app.command("serve")(serve)
    app.command("gap")(gap)
    app.command("finetune")(command_from_config(FinetuneConfig, run_command))  # its options: FinetuneConfig's fields


if __name__ == "__main__":
    _app = typer.Typer(add_completion=False)
    register(_app)
    _app.command("version", hidden=True)(lambda: print(os.environ.get("DAGSCHED_VERSION", "dev")))
    _app()
