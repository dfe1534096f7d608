"""Relative media paths in local datasets resolve against the dataset's folder, not the working
directory: JSON Lines (read natively), Parquet (through ``datasets``) and ``--dataset_root`` copies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lmms_eval.data.load import load_dataset_splits
from lmms_eval.data.media_paths import resolve_path


def make_media(folder: Path) -> None:
    (folder / "clips").mkdir(parents=True)
    (folder / "clips" / "a.mp4").write_bytes(b"video")
    (folder / "img.png").write_bytes(b"png")


ROWS = [
    {"video": "clips/a.mp4", "image": "img.png", "frames": ["img.png", "img.png"], "q": "what.mp4 is text"},
    {"video": "clips/gone.mp4", "image": "https://x/y.png", "frames": [], "q": "b"},
]


def test_jsonl_rows_get_absolute_paths_of_files_beside_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "task" / "data"
    data.mkdir(parents=True)
    make_media(data)
    (data / "test.jsonl").write_text("\n".join(json.dumps(r) for r in ROWS), encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # anywhere but the data folder
    splits = load_dataset_splits(
        "json", None, {"data_files": {"test": "data/test.jsonl"}}, str(tmp_path / "task"), "t"
    )
    first, second = splits["test"][0], splits["test"][1]
    assert first["video"] == str(data / "clips" / "a.mp4") and first["image"] == str(data / "img.png")
    assert first["frames"] == [str(data / "img.png")] * 2
    assert first["q"] == "what.mp4 is text"  # not a file under the folder: unchanged
    assert second["video"] == "clips/gone.mp4" and second["image"] == "https://x/y.png"


def test_parquet_and_dataset_root_copies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("datasets")
    pd = pytest.importorskip("pandas")
    copy = tmp_path / "root" / "owner" / "videobench"
    (copy / "data").mkdir(parents=True)
    make_media(copy)
    pd.DataFrame([{"video": r["video"], "q": r["q"]} for r in ROWS]).to_parquet(
        copy / "data" / "test.parquet"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "cache"))
    splits = load_dataset_splits(
        "owner/videobench", None, {}, str(tmp_path), "t", dataset_root=str(tmp_path / "root")
    )
    rows = list(splits["test"])
    assert rows[0]["video"] == str(copy / "clips" / "a.mp4") and rows[1]["video"] == "clips/gone.mp4"


def test_resolve_path_rules(tmp_path: Path) -> None:
    make_media(tmp_path)
    folders = [str(tmp_path / "nothing"), str(tmp_path)]
    assert resolve_path("clips/a.mp4", folders) == str(tmp_path / "clips" / "a.mp4")
    assert resolve_path("CLIPS.TXT", folders) == "CLIPS.TXT"  # not a media suffix
    assert resolve_path("/abs/a.mp4", folders) == "/abs/a.mp4"
    assert resolve_path("data:video/mp4;base64,AAAA.mp4", folders) == "data:video/mp4;base64,AAAA.mp4"
    assert resolve_path(7, folders) == 7
