"""Pre-flight checks (lmms_eval.preflight) and ``lmms-eval tasks validate [--data]``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from files import write_tree as _write

from lmms_eval.api.task import ConfigurableTask
from lmms_eval.cli import main
from lmms_eval.errors import ConfigError
from lmms_eval.preflight import PreflightError, Problem, check_tasks, preflight
from lmms_eval.tasks import TaskManager

BASE = """dataset_path: json
dataset_kwargs:
  data_files:
    test: data.jsonl
test_split: test
doc_to_text: question
doc_to_target: answer
"""

UTILS = """
def visual(doc):
    return [doc["image"]]


def score(doc, results):
    return {"my_score": 1.0}


def text(doc):
    return doc["prompt"]
"""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    image = tmp_path / "present.png"
    image.write_bytes(b"not really a png")
    images = [str(image), "/no/such/dir/b.png", "https://example.com/c.png", "/no/such/dir/d.png"]
    rows = [{"question": f"q{i}", "answer": "a", "image": images[i]} for i in range(4)]
    return _write(
        tmp_path / "tasks",
        {
            "t/data.jsonl": "\n".join(json.dumps(r) for r in rows) + "\n",
            "t/utils.py": UTILS,
            "t/good.yaml": "task: good\n" + BASE + "metric_list:\n  - metric: exact_match\n",
            "t/metric.yaml": "task: metric_typo\n" + BASE + "metric_list:\n  - metric: exact_matc\n",
            "t/agg.yaml": "task: agg_typo\n"
            + BASE
            + "metric_list:\n  - metric: exact_match\n    aggregation: meen\n",
            "t/custom.yaml": "task: custom\n"
            + BASE
            + "process_results: !function utils.score\nmetric_list:\n  - metric: my_score\n",
            "t/filter.yaml": "task: filter_typo\n"
            + BASE
            + "filter_list:\n  - name: f\n    filter:\n      - function: lowercas\n",
            "t/split.yaml": "task: split_typo\n" + BASE.replace("test_split: test", "test_split: tset"),
            "t/nosplit.yaml": "task: no_split\n" + BASE.replace("test_split: test\n", ""),
            "t/template.yaml": "task: bad_template\n" + BASE.replace("question\n", "'{{ question '\n", 1),
            "t/media.yaml": "task: media\n" + BASE + "doc_to_visual: !function utils.visual\n",
            "t/prompt.yaml": "task: prompt_field\n" + BASE + "doc_to_text: !function utils.text\n",
        },
    )


def _tasks(root: Path, *names: str) -> list[ConfigurableTask]:
    manager = TaskManager(include_path=str(root), include_defaults=False)
    loaded = manager.load_task_or_group(list(names))
    tasks = [loaded[n] for n in names]
    assert all(isinstance(t, ConfigurableTask) for t in tasks)
    return tasks  # type: ignore[return-value]


def _strings(problems: list[Problem]) -> list[str]:
    return [str(p) for p in problems]


def test_a_good_task_has_no_problems(root: Path, tmp_path: Path) -> None:
    assert check_tasks(_tasks(root, "good", "custom"), output_path=str(tmp_path / "out"), chat=False) == []
    preflight(_tasks(root, "good"), output_path=str(tmp_path / "out"))  # does not raise


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "metric_typo",
            "task 'metric_typo': metric_list: unknown metric 'exact_matc'. Did you mean 'exact_match'?",
        ),
        (
            "agg_typo",
            "task 'agg_typo': metric_list: metric 'exact_match': unknown aggregation 'meen'. Did you mean",
        ),
        (
            "filter_typo",
            "task 'filter_typo': filter_list: filter 'f': unknown filter 'lowercas'. Did you mean 'lowercase'?",
        ),
        ("no_split", "task 'no_split': test_split: no test_split or validation_split is set"),
        ("bad_template", "task 'bad_template': doc_to_text: doc_to_text template '{{ question ' is invalid"),
    ],
)
def test_configuration_problems_need_no_data(root: Path, name: str, expected: str) -> None:
    (task,) = _tasks(root, name)
    problems = check_tasks([task], data=False)
    assert len(problems) == 1 and str(problems[0]).startswith(expected), problems
    assert task._dataset is None  # nothing was loaded


def test_missing_split_is_a_problem_naming_the_splits(root: Path) -> None:
    assert _strings(check_tasks(_tasks(root, "split_typo"))) == [
        "task 'split_typo': test_split: split 'tset' is not in dataset 'json'. Did you mean 'test'? Splits: test"
    ]


def test_media_paths_of_the_first_docs_must_exist(root: Path) -> None:
    (task,) = _tasks(root, "media")
    # doc 0 exists, doc 1 is missing, doc 2 is a URL (not checked), doc 3 is beyond media_docs
    assert _strings(check_tasks([task], media_docs=3)) == [
        "task 'media': doc 1: doc_to_visual gives the media file '/no/such/dir/b.png', which does not exist"
    ]
    assert len(check_tasks([task], media_docs=10)) == 2


def test_hub_dataset_that_cannot_be_reached_names_it_and_the_dataset_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("LMMS_EVAL_DATASET_ROOT", raising=False)
    root = _write(
        tmp_path / "hub", {"h.yaml": "task: hub_task\ndataset_path: someorg/nothere\ntest_split: test\n"}
    )
    (problem,) = check_tasks(_tasks(root, "hub_task"))
    text = str(problem)
    assert text.startswith(
        "task 'hub_task': dataset: dataset 'someorg/nothere' is not in the local datasets cache"
    )
    assert "--dataset_root DIR" in text and "LMMS_EVAL_DATASET_ROOT" in text and "\n" not in text


def test_output_folder_is_created_and_must_be_writable(root: Path, tmp_path: Path) -> None:
    folder = tmp_path / "new" / "out"
    assert check_tasks([], output_path=str(folder)) == []
    assert folder.is_dir() and list(folder.iterdir()) == []  # the probe file is gone
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    (problem,) = check_tasks([], output_path=str(blocker / "out"))
    assert problem.task is None and problem.where == f"--output_path {blocker / 'out'}"
    assert (
        str(problem)
        == f"--output_path {blocker / 'out'}: cannot write there: a part of the path is a file, not a folder"
    )


def test_every_sampled_doc_failing_its_prompt_is_a_problem_one_bad_doc_is_not(
    root: Path, tmp_path: Path
) -> None:
    (task,) = _tasks(root, "prompt_field")  # utils.text reads a 'prompt' field no doc has
    (problem,) = check_tasks([task], chat=False)
    assert str(problem) == (
        "task 'prompt_field': doc_to_text: raised on each of the first 3 documents; doc 0: KeyError: 'prompt'"
    )
    # without a model (tasks validate --data) every sampled document is checked and reported
    assert [str(p) for p in check_tasks([task], chat=None)] == [
        f"task 'prompt_field': doc {i}: doc_to_text raised KeyError: 'prompt'" for i in range(3)
    ]
    rows = [{"prompt": "fine", "answer": "a"}, {"answer": "a"}, {"prompt": "fine", "answer": "a"}]
    _write(root, {"t/data.jsonl": "\n".join(json.dumps(r) for r in rows) + "\n"})
    (task,) = _tasks(root, "prompt_field")
    assert check_tasks([task], chat=False) == []  # doc 1 alone is the run's per-document failure


def test_preflight_raises_one_error_listing_every_problem(root: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    tasks = _tasks(root, "metric_typo", "split_typo", "good")
    with pytest.raises(PreflightError) as info:
        preflight(tasks, output_path=str(blocker))
    assert isinstance(info.value, ConfigError) and len(info.value.problems) == 3
    lines = str(info.value).splitlines()
    assert lines[0].startswith(f"--output_path {blocker}: cannot write there") and lines[0].endswith(
        "(and 2 more:)"
    )
    assert lines[1].startswith("  task 'metric_typo': metric_list: unknown metric 'exact_matc'")
    assert lines[2].startswith("  task 'split_typo': test_split: split 'tset'")


def test_the_run_reuses_the_data_preflight_loaded(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lmms_eval.data import load as _data

    calls: list[str] = []
    real = _data.load_dataset_splits

    def counting(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(_data, "load_dataset_splits", counting)
    (task,) = _tasks(root, "good")
    assert check_tasks([task], chat=False) == []
    task.build_all_requests(chat=False)
    assert calls == ["json"]


# -- lmms-eval tasks validate ------------------------------------------------------------------


def test_validate_reports_config_problems_and_counts(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tasks", "validate", "--include_path", str(root)]) == 1
    out = capsys.readouterr().out
    errors = [line for line in out.splitlines() if line.startswith("error: ")]
    assert any("unknown metric 'exact_matc'. Did you mean 'exact_match'?" in e for e in errors)
    assert any("unknown filter 'lowercas'" in e for e in errors)
    assert any("task 'no_split': test_split" in e for e in errors)
    assert not any("task 'split_typo'" in e or "task 'media'" in e for e in errors)  # need --data
    n_files = len(list(root.rglob("*.yaml")))
    assert f"checked {n_files} tasks and groups in {n_files} YAML files: {len(errors)} problem(s)" in out


def test_validate_data_loads_datasets_and_checks_splits_and_media(
    root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["tasks", "validate", "--include_path", str(root), "--data"]) == 1
    out = capsys.readouterr().out
    assert "error: task 'split_typo': test_split: split 'tset' is not in dataset 'json'" in out
    assert "error: task 'media': doc 1: doc_to_visual gives the media file '/no/such/dir/b.png'" in out


def test_validate_passes_on_a_clean_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _write(
        tmp_path / "clean",
        {"c/data.jsonl": '{"question": "q", "answer": "a"}\n', "c/c.yaml": "task: clean\n" + BASE},
    )
    assert main(["tasks", "validate", "--include_path", str(root), "--data"]) == 0
    assert "0 problem(s)" in capsys.readouterr().out


def test_before_a_run_one_missing_media_file_is_that_documents_failure(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The run's pre-flight stops when every sampled document misses its media (the data is not
    where the task looks), and only logs a few missing files: those documents become failures."""
    present = tmp_path / "present.png"
    present.write_bytes(b"not really a png")

    def folder(name: str, images: list[str]) -> Path:
        rows = [{"question": f"q{i}", "answer": "a", "image": image} for i, image in enumerate(images)]
        return _write(
            tmp_path / name,
            {
                "t/data.jsonl": "\n".join(json.dumps(r) for r in rows) + "\n",
                "t/utils.py": UTILS,
                "t/media.yaml": "task: media\n" + BASE + "doc_to_visual: !function utils.visual\n",
            },
        )

    (some,) = _tasks(folder("some", [str(present), "/no/such/b.png", str(present)]), "media")
    preflight([some])
    assert (
        "'/no/such/b.png', which does not exist; that document will be recorded as a failure" in caplog.text
    )
    assert len(check_tasks([some])) == 1  # tasks validate --data still reports each missing file
    (none,) = _tasks(folder("none", ["/no/such/a.png", "/no/such/b.png", "/no/such/c.png"]), "media")
    with pytest.raises(PreflightError, match=r"doc 0: .*'/no/such/a.png', which does not exist \(and 2 more"):
        preflight([none])
