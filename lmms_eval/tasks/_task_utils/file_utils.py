"""``generate_submission_file``: where a task writes a file for an evaluation server."""

from __future__ import annotations

import os
from typing import Any


def generate_submission_file(file_name: str, args: Any, subpath: str = "submissions") -> str:
    """``<args.output_path>/<subpath>/<file_name>``, creating the folder.

    ``args`` is the run's namespace (anything with ``output_path``); without one the current folder
    is used, so an aggregation called outside a run still has somewhere to write.
    """
    base = getattr(args, "output_path", None) or "."
    folder = os.path.join(os.path.expanduser(str(base)), subpath)
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, file_name)
