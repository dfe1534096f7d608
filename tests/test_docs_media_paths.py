"""What relative media paths are relative to, as docs/task_guide.md section 14 and docs/media.md both
say: the local dataset's folder, then its data files' folders; the working directory only for a path
found in neither (left as written). The data files themselves: the task YAML's folder first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lmms_eval.data.load import load_dataset_splits

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_the_dataset_folder_wins_over_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task, cwd = tmp_path / "task", tmp_path / "cwd"
    (task / "data").mkdir(parents=True)
    cwd.mkdir()
    for folder in (task / "data", cwd):  # a.png in both places; b.png only in the working directory
        (folder / "a.png").write_bytes(b"png")
    (cwd / "b.png").write_bytes(b"png")
    (cwd / "data").mkdir()
    (cwd / "data" / "test.jsonl").write_text(json.dumps({"image": "nowhere.png"}), encoding="utf-8")
    rows = [{"image": "a.png"}, {"image": "b.png"}]
    (task / "data" / "test.jsonl").write_text("\n".join(map(json.dumps, rows)), encoding="utf-8")
    monkeypatch.chdir(cwd)
    splits = load_dataset_splits("json", None, {"data_files": {"test": "data/test.jsonl"}}, str(task), "t")
    first, second = splits["test"][0], splits["test"][1]
    assert first["image"] == str(
        task / "data" / "a.png"
    )  # the data file is the task folder's, and so is a.png
    assert second["image"] == "b.png"  # found in neither: left as written


def test_both_pages_state_the_same_rule() -> None:
    guide = (DOCS / "task_guide.md").read_text(encoding="utf-8").split("## 14.", 1)[1]
    media = (DOCS / "media.md").read_text(encoding="utf-8")
    for page in (" ".join(guide.split()), " ".join(media.split())):
        assert "`lmms_eval.data.media_paths`" in page
        assert "then each data file's folder" in page or "else under a data file's folder" in page
        assert "task YAML's folder, then the working directory" in page
