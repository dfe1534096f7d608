"""Command-line entry point: ``lmms-eval <subcommand>`` and the legacy flat ``lmms-eval --model ...``."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from lmms_eval.errors import LmmsEvalError, did_you_mean

SUBCOMMANDS = (
    "eval",
    "tasks",
    "models",
    "compare",
    "leaderboard",
    "power",
    "cache",
    "serve",
    "ui",
    "version",
)

BANNER = """lmms-eval: evaluate large multimodal models

usage: lmms-eval <command> [options]

commands:
  eval      run an evaluation (also: lmms-eval --model ... --tasks ...)
  tasks     list, inspect and validate tasks
  models    list models and their aliases
  compare   paired comparison of two runs (lmms-eval compare A B)
  leaderboard  runs by tasks, marked against a baseline (lmms-eval leaderboard LOGS_DIR)
  power     how many questions a comparison of two models needs
  cache     response cache of --use_cache: stats, prune, clear
  serve     run the HTTP eval server (jobs from training loops)
  ui        web UI: browse runs and samples, compare runs, launch evaluations
  version   print versions

Quick start:  lmms-eval eval --model dummy --tasks demo_qa --limit 8
Help:         lmms-eval <command> --help
"""


def configure_logging(verbosity: str | None = "INFO") -> None:
    """Install one stderr handler for lmms_eval loggers (entry points only)."""
    level_name = (verbosity or "INFO").upper()
    level = logging.getLevelName(level_name)
    if not isinstance(level, int):
        raise LmmsEvalError(f"--verbosity: unknown level '{verbosity}'; use DEBUG, INFO, WARNING or ERROR")
    from lmms_eval.secrets import RedactingFilter

    root = logging.getLogger("lmms_eval")
    root.setLevel(level)
    if not any(getattr(h, "_lmms_eval", False) for h in root.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(
            logging.Formatter("%(asctime)s %(levelname).1s %(name)s: %(message)s", "%H:%M:%S")
        )
        handler.addFilter(RedactingFilter())  # no secret reaches a log line
        handler._lmms_eval = True  # type: ignore[attr-defined]
        root.addHandler(handler)


class _Parser(argparse.ArgumentParser):
    """argparse with usage errors redacted (a mistyped flag may sit next to a key)."""

    command = "eval"  # the subcommand being parsed (main sets it), whose flags a typo is matched against

    def error(self, message: str) -> NoReturn:
        from lmms_eval.secrets import redact_text

        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {redact_text(message)}{self._flag_hint(message)}\n")

    def _flag_hint(self, message: str) -> str:
        """`` Did you mean '--limit'?`` for the first unknown flag, from the flags the subcommands
        define (the eval flags are those of the settings model)."""
        if not message.startswith("unrecognized arguments:"):
            return ""
        unknown = [a.split("=")[0] for a in message.split(":", 1)[1].split() if a.startswith("--")]
        flags = [f for action in self._actions for f in action.option_strings]
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction) and self.command in action.choices:
                flags += [f for a in action.choices[self.command]._actions for f in a.option_strings]
        return (
            did_you_mean(unknown[0], [f for f in dict.fromkeys(flags) if f.startswith("--")])
            if unknown
            else ""
        )


def _add_eval(subparsers: argparse._SubParsersAction[_Parser]) -> None:
    from lmms_eval.cli import eval as eval_cmd

    eval_parser = subparsers.add_parser(
        "eval", help="run an evaluation", description=eval_cmd.build_parser().description
    )
    eval_cmd.add_eval_arguments(eval_parser)
    eval_parser.set_defaults(handler=eval_cmd.run)


def _add_subcommand(subparsers: argparse._SubParsersAction[_Parser], name: str) -> None:
    if name == "eval":
        _add_eval(subparsers)
        return
    module = importlib.import_module(f"lmms_eval.cli.{name}")
    module.add_parser(subparsers)


def build_parser(only: str | None = None) -> _Parser:
    """The parser of every subcommand, or of ``only`` one (what ``main`` runs: a subcommand does not
    pay for importing the others, e.g. ``tasks list`` never loads the settings model or numpy)."""
    parser = _Parser(prog="lmms-eval", description="Evaluate large multimodal models.")
    subparsers = parser.add_subparsers(dest="command", metavar="<command>")
    for name in SUBCOMMANDS:
        if only is None or name == only:
            _add_subcommand(subparsers, name)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from lmms_eval.secrets import register_environment_secrets

    register_environment_secrets()
    args_list = list(sys.argv[1:] if argv is None else argv)
    if not args_list:
        print(BANNER)
        return 0
    if (
        args_list[0] not in SUBCOMMANDS
        and args_list[0].startswith("-")
        and args_list[0] not in ("-h", "--help")
    ):
        args_list = ["eval", *args_list]  # the legacy flat form
    bad_text = _undecodable_argument(args_list)
    if bad_text:
        print(f"lmms-eval: error: {bad_text}", file=sys.stderr)
        return 1
    parser = build_parser(args_list[0] if args_list[0] in SUBCOMMANDS else None)
    parser.command = args_list[0]
    args = parser.parse_args(args_list)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    return run_handler(args.handler, args)


def _undecodable_argument(args: list[str]) -> str | None:
    """The error line for the first argument that is not UTF-8 (file names in another encoding
    arrive as lone surrogates, which no output file or log can hold), naming its flag; else None."""
    if all(_plain_text(arg) for arg in args):
        return None  # the common case, without importing the settings' checks
    from lmms_eval.settings.checks import check_text

    for i, arg in enumerate(args):
        flag, sep, value = arg.partition("=") if arg.startswith("--") else ("", "", arg)
        if not sep and i > 0 and args[i - 1].startswith("-"):
            flag = args[i - 1]
        try:
            check_text(flag, f"argument {i + 1}")
            check_text(value, flag or f"argument {i + 1}")
        except LmmsEvalError as exc:
            return str(exc)
    return None


def _plain_text(arg: str) -> bool:
    """Valid UTF-8 (no lone surrogates from undecodable bytes) and no NUL byte."""
    try:
        arg.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return "\x00" not in arg


def run_handler(handler: Callable[[argparse.Namespace], int | None], args: argparse.Namespace) -> int:
    """Run a subcommand: user errors as one redacted line (exit 1), Ctrl-C as exit 130, crashes as a
    redacted traceback (exit 1)."""
    from lmms_eval.secrets import redact_text

    try:
        return int(handler(args) or 0)
    except LmmsEvalError as exc:
        print(f"lmms-eval: error: {redact_text(str(exc))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("lmms-eval: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `lmms-eval tasks list | head`: the reader left; not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except Exception:  # a bug or a backend crash: the traceback, with secrets redacted
        import traceback

        print(redact_text(traceback.format_exc()).rstrip(), file=sys.stderr)
        return 1
