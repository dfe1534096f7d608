"""Shared fixtures: every test gets its own task-index cache and LMMS_EVAL_HOME."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from files import write_tree


@pytest.fixture(autouse=True)
def _isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    home = tmp_path_factory.mktemp("lmms_home")
    monkeypatch.setenv("LMMS_EVAL_HOME", str(home))
    monkeypatch.setenv("HF_HUB_OFFLINE", os.environ.get("HF_HUB_OFFLINE", "1"))
    monkeypatch.delenv("LMMS_EVAL_PLUGINS", raising=False)
    yield


@pytest.fixture(autouse=True)
def _fresh_log_handler() -> Iterator[None]:
    """CLI runs in a test install their stderr log handler anew, bound to that test's captured
    stderr (a handler left from an earlier test would write to its closed stream)."""
    root = logging.getLogger("lmms_eval")
    saved = [h for h in root.handlers if getattr(h, "_lmms_eval", False)]
    for handler in saved:
        root.removeHandler(handler)
    yield
    for handler in [h for h in root.handlers if getattr(h, "_lmms_eval", False)]:
        root.removeHandler(handler)
    for handler in saved:
        root.addHandler(handler)


@pytest.fixture
def write_files(tmp_path: Path):
    """Write ``{relative path: text}`` under tmp_path and return the root."""

    def write(files: dict[str, str], root: Path | None = None) -> Path:
        return write_tree(root or tmp_path, files)

    return write
