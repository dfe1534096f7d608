"""``python -m lmms_eval`` runs the command-line interface.

Scripts written for the published package call :func:`parse_eval_args` and :func:`cli_evaluate`::

    from lmms_eval.__main__ import cli_evaluate, parse_eval_args

    args = parse_eval_args(["--model", "dummy", "--tasks", "demo_qa", "--limit", "8"])
    args.limit = 4
    exit_code = cli_evaluate(args)
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Sequence
from typing import Any

from lmms_eval.cli import main


class EvalArgs(argparse.Namespace):
    """Parsed ``eval`` flags that also unpack as the published ``parser, args`` pair."""

    def __iter__(self) -> Iterator[Any]:
        from lmms_eval.cli.eval import build_parser

        return iter((build_parser(prog="lmms-eval"), self))


def parse_eval_args(argv: Sequence[str] | None = None) -> EvalArgs:
    """The ``eval`` flags of ``argv`` (default: ``sys.argv[1:]``), every option set (defaults filled in).

    ``parser, args = parse_eval_args()`` (the published form) works too.
    """
    from lmms_eval.cli.eval import build_parser, defaults

    parser = build_parser(prog="lmms-eval")
    args = parser.parse_args(argv, namespace=EvalArgs())
    for name, default in defaults().items():
        if not hasattr(args, name):
            setattr(args, name, default)
    return args


def cli_evaluate(args: argparse.Namespace | None = None) -> int:
    """Run the evaluation ``args`` describe (:func:`parse_eval_args`; default: ``sys.argv``); the exit code.

    Options left at their default do not override a ``--config`` file; changed ones do.
    """
    from lmms_eval.cli import eval as eval_cmd
    from lmms_eval.cli import run_handler

    parsed = parse_eval_args() if args is None else args
    default = eval_cmd.defaults()
    explicit = {
        name: value
        for name, value in vars(parsed).items()
        if name not in default or value != default[name] or name == "config"
    }
    return run_handler(eval_cmd.run, argparse.Namespace(**explicit))


if __name__ == "__main__":
    raise SystemExit(main())
