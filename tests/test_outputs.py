"""Result files: keys, sanitised names, redaction, crash safety, predict_only and from_log replay."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import lmms_eval
from lmms_eval.api.instance import Instance
from lmms_eval.models.chat.dummy import DummyChat
from lmms_eval.tasks import TaskManager

RESULT_KEYS = {
    "results", "groups", "group_subtasks", "configs", "versions", "n-shot", "higher_is_better", "n-samples",
    "config", "git_hash", "lmms_eval_version", "date", "task_hashes", "model_name", "model_name_sanitized",
    "system_instruction", "system_instruction_sha", "start_time", "end_time", "total_evaluation_time_seconds",
    "schema_version",
}  # fmt: skip
SAMPLE_KEYS = {"doc_id", "doc_hash", "target", "input", "resps", "filtered_resps", "filter", "token_counts"}


def _two_tasks(write_files, tmp_path: Path) -> Path:
    rows = "\n".join(json.dumps({"question": f"q{i}", "answer": str(i % 3)}) for i in range(12))
    task = (
        "task: {n}\ndataset_path: json\ndataset_kwargs:\n  data_files:\n    test: d.jsonl\ntest_split: test\n"
        "doc_to_text: question\ndoc_to_target: answer\n"
    )
    return write_files(
        {"o/d.jsonl": rows, "o/first.yaml": task.format(n="first"), "o/second.yaml": task.format(n="second")},
        tmp_path / "tasks",
    )


def test_results_and_samples_schema_and_redaction(write_files, tmp_path: Path) -> None:
    root = _two_tasks(write_files, tmp_path)
    results = lmms_eval.simple_evaluate(
        model="dummy",
        model_args="answer_field=answer,pretrained=org/sub/My-Model",
        gen_kwargs="max_new_tokens=4,api_key=sk-secretsecretsecret123",
        tasks=["first"],
        task_manager=TaskManager(include_path=str(root), include_defaults=False),
        output_path=str(tmp_path / "out"),
        log_samples=True,
        system_instruction="Be terse.",
    )
    assert set(results) >= RESULT_KEYS
    run_dir = tmp_path / "out" / "sub__My-Model"  # last two parts of pretrained=
    on_disk = json.loads(next(run_dir.glob("*_results.json")).read_text())
    assert on_disk["results"] == results["results"]
    text = next(run_dir.glob("*_results.json")).read_text()
    assert "sk-secretsecretsecret123" not in text and "[REDACTED]" in text
    assert on_disk["start_time"].endswith("Z") and on_disk["end_time"].endswith("Z")
    samples = [json.loads(x) for x in next(run_dir.glob("*_samples_first.jsonl")).read_text().splitlines()]
    assert len(samples) == 12 and set(samples[0]) >= SAMPLE_KEYS
    assert len({s["doc_hash"] for s in samples}) == 12  # a real per-document hash
    assert samples[0]["input"].startswith("Be terse.")  # chat messages rendered as text
    assert on_disk["system_instruction_sha"] and on_disk["task_hashes"]["first"]


class _CrashOnSecondTask(DummyChat):
    def generate_until(self, requests: list[Instance]) -> list:  # type: ignore[override]
        if any(r.task_name == "second" for r in requests):
            raise RuntimeError("GPU fell off the bus")
        return super().generate_until(requests)


def test_model_crash_in_a_later_task_keeps_earlier_results(write_files, tmp_path: Path) -> None:
    root = _two_tasks(write_files, tmp_path)
    manager = TaskManager(include_path=str(root), include_defaults=False)
    model = _CrashOnSecondTask(answer_field="answer")
    with pytest.raises(RuntimeError, match="bus"):
        lmms_eval.simple_evaluate(
            model=model,
            tasks=["first", "second"],
            task_manager=manager,
            output_path=str(tmp_path / "o"),
            log_samples=True,
        )
    partial = json.loads(next((tmp_path / "o").rglob("*_results.json")).read_text())
    assert partial["status"] == "running"
    assert list(partial["results"]) == ["first"] and partial["results"]["first"]["exact_match,none"] == 1.0
    assert len(next((tmp_path / "o").rglob("*_samples_first.jsonl")).read_text().splitlines()) == 12


def test_partial_results_are_on_disk_while_later_tasks_score(
    write_files, tmp_path: Path, monkeypatch
) -> None:
    root = _two_tasks(write_files, tmp_path)
    manager = TaskManager(include_path=str(root), include_defaults=False)
    from lmms_eval import postprocess

    real = postprocess.score_task

    def failing(task, *args, **kwargs):
        if task.task_name == "second":
            raise KeyboardInterrupt
        return real(task, *args, **kwargs)

    monkeypatch.setattr(postprocess, "score_task", failing)
    with pytest.raises(KeyboardInterrupt):
        lmms_eval.simple_evaluate(
            model="dummy", model_args="answer_field=answer", tasks=["first", "second"], task_manager=manager,
            output_path=str(tmp_path / "o"), log_samples=True,
        )  # fmt: skip
    results_file = next((tmp_path / "o").rglob("*_results.json"))
    partial = json.loads(results_file.read_text())
    assert partial["status"] == "interrupted" and partial["interrupted_task"] == "second"
    assert partial["results"]["first"]["exact_match,none"] == 1.0
    assert len(next((tmp_path / "o").rglob("*_samples_first.jsonl")).read_text().splitlines()) == 12


def test_predict_only_logs_outputs_without_scoring(tmp_path: Path) -> None:
    results = lmms_eval.simple_evaluate(
        model="dummy",
        tasks=["demo_qa"],
        limit=5,
        predict_only=True,
        output_path=str(tmp_path),
        log_samples=True,
    )
    assert results["results"]["demo_qa"].get("bypass,none") is None
    samples = next(tmp_path.rglob("*_samples_demo_qa.jsonl")).read_text().splitlines()
    assert len(samples) == 5 and json.loads(samples[0])["resps"] == [["A"]]


def test_from_log_replays_a_run_to_identical_scores(tmp_path: Path) -> None:
    first = lmms_eval.simple_evaluate(
        model="dummy", model_args="answer_field=answer,accuracy=0.6", tasks=["demo_qa"],
        output_path=str(tmp_path / "run1"), log_samples=True,
    )  # fmt: skip
    replay = lmms_eval.simple_evaluate(
        model="from_log", model_args=f"logs={tmp_path / 'run1'}", tasks=["demo_qa"],
        output_path=str(tmp_path / "run2"), log_samples=True,
    )  # fmt: skip
    assert replay["results"]["demo_qa"] == first["results"]["demo_qa"]
    assert replay["config"]["model_backend"].startswith("lmms_eval.models.simple.from_log.FromLog")


def test_runs_in_the_same_second_get_separate_files(tmp_path: Path) -> None:
    from lmms_eval.results.writer import OutputWriter

    first = OutputWriter(str(tmp_path), "m", timestamp="20260101_000000")
    second = OutputWriter(str(tmp_path), "m", timestamp="20260101_000000")
    assert first.results_path != second.results_path
    first.write_sample("t", {"doc_id": 0})
    second.write_sample("t", {"doc_id": 1})
    first.close()
    second.close()
    assert first.samples_path("t") != second.samples_path("t")
    assert len(Path(first.samples_path("t")).read_text().splitlines()) == 1
    path = first.write_results({"results": {}})
    import os
    import stat

    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o666 & ~mask
