"""``load_default_template_yaml``: a task folder's ``_default_template_yaml`` as a plain mapping."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def load_default_template_yaml(task_file: str) -> dict[str, Any]:
    """The ``_default_template_yaml`` next to ``task_file`` (a task's ``__file__``).

    Lines holding a ``!function`` tag are left out, as the published helper does: tasks read
    settings such as ``metadata`` or ``dataset_kwargs`` from it, never functions.
    """
    path = Path(task_file).parent / "_default_template_yaml"
    with open(path, encoding="utf-8-sig") as handle:
        lines = [line for line in handle if "!function" not in line]
    data = yaml.safe_load("".join(lines))
    return data if isinstance(data, dict) else {}
