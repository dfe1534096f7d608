"""File names and finding runs: lmms_eval.results.layout, and the writer that uses it."""

from __future__ import annotations

import json
import os
from pathlib import Path

from lmms_eval.results import ResultsFile, SampleRecord
from lmms_eval.results.layout import (
    OutputName,
    file_safe,
    find_runs,
    latest_samples,
    parse_name,
    results_file_name,
    run_of,
    samples_file_name,
    samples_files_under,
    sibling_results,
    stamp_order,
    task_name,
)
from lmms_eval.results.writer import OutputWriter


def _touch(path: Path, text: str = "{}", mtime: float | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def test_names_round_trip_and_slashes_become_double_underscores() -> None:
    assert results_file_name("20260101_000000") == "20260101_000000_results.json"
    name = samples_file_name("20260101_000000_2", "mmbench/en_dev")
    assert name == "20260101_000000_2_samples_mmbench__en_dev.jsonl"
    assert parse_name(name) == OutputName("samples", "20260101_000000_2", "mmbench__en_dev")
    assert parse_name("20260101_000000_results.json") == OutputName("results", "20260101_000000")
    assert parse_name("x_samples_t_samples_u.jsonl") == OutputName("samples", "x", "t_samples_u")
    assert parse_name("notes.json") is None and parse_name("20260101_000000_samples_t.json") is None
    assert file_safe("a/b/c") == "a__b__c"
    assert task_name("mmbench__en_dev", ["other", "mmbench/en_dev"]) == "mmbench/en_dev"
    assert task_name("unknown", ["other"]) == "unknown"


def test_stamps_sort_by_time_then_suffix() -> None:
    stamps = ["20260101_000001", "20260101_000000_2", "20260101_000000", "20260101_000000_10", "junk"]
    assert sorted(stamps, key=stamp_order) == [
        "junk",
        "20260101_000000",
        "20260101_000000_2",
        "20260101_000000_10",
        "20260101_000001",
    ]
    assert stamp_order("20250101_120000.123456") == ("20250101_120000.123456", 1)  # published fractions


def test_find_runs_groups_files_by_folder_and_stamp_newest_first(tmp_path: Path) -> None:
    old = _touch(tmp_path / "m1" / "20260101_000000_results.json")
    _touch(tmp_path / "m1" / "20260101_000000_samples_a.jsonl")
    _touch(tmp_path / "m1" / "20260101_000000_samples_b__c.jsonl")
    same_second = _touch(tmp_path / "m1" / "20260101_000000_2_results.json")
    orphan = _touch(tmp_path / "m2" / "deep" / "20260102_000000_samples_a.jsonl")
    _touch(tmp_path / "m1" / "notes.txt")
    runs = find_runs(tmp_path)
    assert [(r.stamp, r.results) for r in runs] == [
        ("20260102_000000", None),  # samples without a results file still form a run
        ("20260101_000000_2", same_second),
        ("20260101_000000", old),
    ]
    assert runs[0].samples == {"a": orphan}
    assert sorted(runs[2].samples) == ["a", "b__c"]
    assert runs[2].samples_for("b/c") == tmp_path / "m1" / "20260101_000000_samples_b__c.jsonl"
    assert find_runs(tmp_path / "m1", recursive=False)[0].stamp == "20260101_000000_2"
    assert run_of(old).sample_files() == runs[2].sample_files()
    assert sibling_results(runs[2].samples["a"]) == old and sibling_results(orphan) is None


def test_latest_samples_per_task(tmp_path: Path) -> None:
    first = _touch(tmp_path / "a" / "20260101_000000_samples_t.jsonl")
    second = _touch(tmp_path / "b" / "20260101_000000_2_samples_t.jsonl")
    other = _touch(tmp_path / "a" / "20251231_235959_samples_u.jsonl")
    _touch(tmp_path / "a" / "20260101_000000_results.json")
    files = samples_files_under(tmp_path)
    assert sorted(files) == sorted([first, second, other])
    assert latest_samples(files) == {"t": second, "u": other}


def test_writer_names_files_through_the_layout(tmp_path: Path) -> None:
    writer = OutputWriter(str(tmp_path), "m", timestamp="20260101_000000")
    starting = ResultsFile.load(writer.results_path)  # the placeholder is a valid results file
    assert starting.status == "starting" and starting.results == {}
    writer.write_sample("org/task", SampleRecord.build(doc_id=0, metrics={"acc": 1.0}))
    writer.write_sample("org/task", {"doc_id": 1, "acc": 0.0})  # a mapping in the line layout
    writer.close()
    path = Path(writer.samples_path("org/task"))
    assert path.name == "20260101_000000_samples_org__task.jsonl"
    assert [json.loads(line) for line in path.read_text().splitlines()] == [
        {"doc_id": 0, "acc": 1.0},
        {"doc_id": 1, "acc": 0.0},
    ]
    again = OutputWriter(str(tmp_path), "m", timestamp="20260101_000000")
    assert Path(again.results_path).name == "20260101_000000_2_results.json"
    assert [run.stamp for run in find_runs(tmp_path)] == ["20260101_000000_2", "20260101_000000"]
