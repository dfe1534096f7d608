"""``lmms-eval serve``: run the HTTP eval server (flags mirror ``ServerArgs``)."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from lmms_eval.entrypoints.server_args import ServerArgs

    parser = subparsers.add_parser(
        "serve",
        help="run the HTTP eval server",
        description="Run the HTTP eval server (API docs at /docs). Jobs persist in --state_dir.",
    )
    for name, info in ServerArgs.model_fields.items():
        kind = info.annotation
        convert: Any = int if kind is int else str
        default = info.default
        shown = (",".join(default) or "none") if isinstance(default, list) else default
        parser.add_argument(
            f"--{name}",
            type=convert,
            default=None,
            metavar=name.upper(),
            help=f"{info.description or ''} (default: {shown})",
        )
    parser.add_argument("--verbosity", default="INFO", help="log level (default: INFO)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from lmms_eval.cli import configure_logging
    from lmms_eval.entrypoints.server import launch_server
    from lmms_eval.entrypoints.server_args import ServerArgs
    from lmms_eval.errors import ConfigError
    from lmms_eval.secrets import redact_loggers

    configure_logging(args.verbosity)
    redact_loggers("uvicorn", "uvicorn.error", "uvicorn.access", "uvicorn.asgi")  # its tracebacks too
    given = {k: v for k, v in vars(args).items() if k in ServerArgs.model_fields and v is not None}
    try:
        server_args = ServerArgs(**given)
    except ValidationError as exc:
        error = exc.errors()[0]
        raise ConfigError(f"--{'.'.join(map(str, error['loc']))}: {error['msg']}") from None
    launch_server(server_args)
    return 0
