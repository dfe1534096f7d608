"""``lmms-eval version``: versions of lmms_eval, Python and the optional backends."""

from __future__ import annotations

import argparse
import platform
from importlib import metadata

from lmms_eval.utils import git_info


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("version", help="print versions of lmms_eval and its backends")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from lmms_eval import __version__

    git = git_info()
    print(
        f"lmms_eval {__version__}" + (f" (git {git['commit']} on {git['branch']})" if git["commit"] else "")
    )
    print(f"python {platform.python_version()} ({platform.system()} {platform.machine()})")
    for package in ("torch", "transformers", "accelerate", "datasets", "vllm", "sglang", "openai"):
        print(f"{package} {_version(package)}")
    return 0
