"""``lmms-eval ui`` and ``lmms-eval-ui``: the web UI (browse runs and samples, compare, launch)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

DESCRIPTION = (
    "Serve the web UI: the runs under --logs (scores, samples with their images, comparisons) and a "
    "launch page that submits evaluations to an eval server: --server URL (token from --token or "
    "$LMMS_EVAL_SERVER_TOKEN), or one run in this process. Binds 127.0.0.1; beyond loopback the UI "
    "requires a token (--ui_token or $LMMS_EVAL_UI_TOKEN, else one is generated and printed)."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from lmms_eval.entrypoints.server_args import ServerArgs

    parser.add_argument(
        "--port",
        type=int,
        default=None,
        help="port (default: $LMMS_SERVER_PORT, else 8765; 0: any free port)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    parser.add_argument(
        "--allowed_hosts",
        default=None,
        metavar="NAMES",
        help=f"{ServerArgs.model_fields['allowed_hosts'].description} (default: none)",
    )
    parser.add_argument(
        "--logs",
        default="logs",
        metavar="DIR",
        help="folder of results to browse; launched runs write here (default: ./logs)",
    )
    parser.add_argument(
        "--server",
        default=None,
        metavar="URL",
        help="eval server for launches (default: one in this process)",
    )
    parser.add_argument(
        "--token", default=None, help="the eval server's token (default: $LMMS_EVAL_SERVER_TOKEN)"
    )
    parser.add_argument(
        "--ui_token",
        default=None,
        help="the UI's own token, required beyond loopback (default: $LMMS_EVAL_UI_TOKEN)",
    )
    parser.add_argument("--no-browser", dest="no_browser", action="store_true", help="do not open a browser")
    parser.add_argument("--verbosity", default="INFO", help="log level (default: INFO)")


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "ui", help="web UI: browse runs and samples, compare, launch", description=DESCRIPTION
    )
    add_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from lmms_eval.cli import configure_logging
    from lmms_eval.errors import ConfigError
    from lmms_eval.http_guard import parse_hosts
    from lmms_eval.ui.runner import default_port, serve_ui

    configure_logging(args.verbosity)
    if args.port is not None and not 0 <= args.port <= 65535:
        raise ConfigError(f"--port must be between 0 and 65535, got {args.port}")
    if args.server is not None and not args.server.startswith(("http://", "https://")):
        raise ConfigError(f"--server must be an http:// or https:// URL, got '{args.server}'")
    try:
        port = default_port() if args.port is None else args.port
        allowed = parse_hosts(args.allowed_hosts)
    except ValueError as exc:
        raise ConfigError(str(exc).replace("allowed_hosts:", "--allowed_hosts:")) from None
    logs = Path(args.logs).expanduser()
    if logs.exists() and not logs.is_dir():
        raise ConfigError(f"--logs must be a folder, got the file '{logs}'")
    serve_ui(
        logs,
        args.host,
        port,
        args.server,
        args.token,
        args.ui_token,
        open_browser=not args.no_browser,
        allowed_hosts=allowed,
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """The ``lmms-eval-ui`` script (the same flags as ``lmms-eval ui``)."""
    from lmms_eval.cli import _Parser, run_handler
    from lmms_eval.secrets import register_environment_secrets

    register_environment_secrets()
    parser = _Parser(prog="lmms-eval-ui", description=DESCRIPTION)
    add_arguments(parser)
    args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
    return run_handler(run, args)


if __name__ == "__main__":
    raise SystemExit(main())
