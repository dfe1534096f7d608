"""``lmms-eval version``: versions of lmms_eval, Python and the optional backends."""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
from functools import lru_cache
from importlib import metadata


@lru_cache(maxsize=1)
def git_info() -> dict[str, str | None]:
    """Commit and branch of the source checkout, when lmms_eval runs from one."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if not os.path.exists(os.path.join(root, ".git")):
        return {"commit": None, "branch": None}

    def run(*args: str) -> str | None:
        try:
            out = subprocess.run(
                ["git", *args], cwd=root, capture_output=True, text=True, timeout=2, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() or None if out.returncode == 0 else None

    return {
        "commit": run("rev-parse", "--short=8", "HEAD"),
        "branch": run("rev-parse", "--abbrev-ref", "HEAD"),
    }


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
