"""`dagsched serve`: the scheduling service under uvicorn.

The lead's `dagsched` command adds it with `register(app)`; `python -m dagsched.service.cli serve`
runs the same command on its own.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Annotated

import typer


def serve(
    config: Annotated[
        Path | None, typer.Option("--config", help="runtime config (YAML/JSON), re-read on SIGHUP")
    ] = None,
    host: Annotated[str, typer.Option("--host", help="interface to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="TCP port")] = 8080,
    store: Annotated[
        str | None, typer.Option("--store", help="decision store URL: sqlite:///file.sqlite or postgresql://...")
    ] = None,
    model: Annotated[Path | None, typer.Option("--model", help="policy path stem (.safetensors + .json)")] = None,
    log_level: Annotated[str, typer.Option("--log-level", help="uvicorn log level")] = "info",
) -> None:
    """Serve plans over HTTP (FastAPI + uvicorn): /v1/schedule, model hot swap, Kubernetes extender, metrics.

    Mutating routes need `Authorization: Bearer $DAGSCHED_API_TOKEN`. Other settings come from
    DAGSCHED_* environment variables (see dagsched.service.settings).
    """
    import uvicorn

    from dagsched.console import fail
    from dagsched.model.errors import InputError
    from dagsched.service.app import create_app
    from dagsched.service.settings import Settings

    overrides: dict[str, object] = {}
    if config is not None:
        if not config.exists():
            raise fail(InputError("--config", f"file not found: {config}"))
        overrides["config_file"] = config
    if store is not None:
        overrides["store_url"] = store
    if model is not None:
        overrides["model_path"] = model
    settings = Settings(**overrides)  # type: ignore[arg-type]
    if config is not None:
        from dagsched.service.config import read_config

        try:
            read_config(config)  # refuse a bad config before binding the port, naming the field
        except InputError as err:
            raise fail(err) from None
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if settings.api_token is None:
        logging.getLogger("dagsched.service").warning("DAGSCHED_API_TOKEN is not set: mutating routes are disabled")
    uvicorn.run(create_app(settings), host=host, port=port, log_level=log_level, access_log=False)


def register(app: typer.Typer) -> None:
    """Add `serve` and `finetune` to a Typer app (the `dagsched` command)."""
    from dagsched.service.finetune import finetune

    app.command("serve")(serve)
    app.command("finetune")(finetune)


if __name__ == "__main__":
    _app = typer.Typer(add_completion=False)
    register(_app)
    _app.command("version", hidden=True)(lambda: print(os.environ.get("DAGSCHED_VERSION", "dev")))
    _app()
