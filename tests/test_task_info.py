"""``lmms-eval tasks info`` and ``tasks validate [NAME ...] --data``: what a local copy needs, and
validation that resolves media and calls the task's functions as a run does."""

from __future__ import annotations

import contextlib
import json
import logging
from collections import defaultdict
from pathlib import Path
from typing import Any

import jinja2
import pytest
from jinja2 import meta
from PIL import Image

from lmms_eval.api.task import ConfigurableTask
from lmms_eval.cli import main
from lmms_eval.tasks import TaskManager
from lmms_eval.tasks._task_utils.columns import columns_of

_PLACEHOLDERS: list[Any] = [
    "0",
    0,
    ["a", "b", "c", "d"],
    Image.new("RGB", (8, 8)),
    {"array": [0.0] * 16, "sampling_rate": 16000, "path": "x.wav"},
    "['a', 'b', 'c', 'd']",
    "A",
]


class ReadRecorder(dict):  # type: ignore[type-arg]
    """A document that answers every column with one placeholder value and records the names asked for."""

    def __init__(self, value: Any, reads: set[str]) -> None:
        super().__init__()
        self.value, self.reads = value, reads

    def __getitem__(self, key: Any) -> Any:
        self.reads.add(str(key))
        return self.value

    def get(self, key: Any, default: Any = None) -> Any:
        return self[key]

    def __contains__(self, key: object) -> bool:
        self.reads.add(str(key))
        return True


def columns_read(task: ConfigurableTask) -> set[str]:
    """The columns the task's ``doc_to_*`` and ``process_results`` functions ask for, with each
    placeholder value in turn (a function that raises on one value reads further with another)."""
    cfg = task.config
    reads: set[str] = set()
    calls = ("doc_to_text", "doc_to_target", "doc_to_visual", "doc_to_audio", "doc_to_choice")
    for value in _PLACEHOLDERS:
        doc = ReadRecorder(value, reads)
        for name in calls:
            if getattr(cfg, name) is not None:
                with contextlib.suppress(Exception):
                    getattr(task, name)(doc)
        if cfg.doc_to_messages is not None:
            with contextlib.suppress(Exception):
                task.build_messages(doc, 0)
        if cfg.process_results is not None:
            with contextlib.suppress(Exception):
                task.process_results(doc, ["A"])
        if callable(cfg.process_results_batch):
            with contextlib.suppress(Exception):
                cfg.process_results_batch([doc], [["A"]])
    templates = [v for v in (cfg.doc_to_text, cfg.doc_to_target) if isinstance(v, str) and "{{" in v]
    for template in templates:  # a Jinja template reads the fields it names
        reads.discard(template)  # (it is first looked up as a column name)
        reads |= meta.find_undeclared_variables(jinja2.Environment().parse(template))
    return reads


@pytest.fixture(scope="module")
def bundled() -> list[ConfigurableTask]:
    logging.disable(logging.CRITICAL)  # helpers warn about placeholder values
    try:
        manager = TaskManager()
        tasks = [manager._loader.load(name) for name in manager.all_subtasks]
    finally:
        logging.disable(logging.NOTSET)
    return [t for t in tasks if isinstance(t, ConfigurableTask)]


def test_every_bundled_task_declares_the_columns_it_reads(
    bundled: list[ConfigurableTask], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("API_TYPE", "dummy")  # the judge tasks' scoring asks the offline dummy judge
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    undeclared = [
        t.task_name
        for t in bundled
        if columns_of(t.task_name, t.config.dataset_path, t.config.dataset_name) is None
    ]
    assert not undeclared, f"no column declaration in lmms_eval/tasks/_task_utils/columns.py: {undeclared}"
    read_by_dataset: dict[int, set[str]] = defaultdict(set)
    declared_by_dataset: dict[int, set[str]] = {}
    for task in bundled:
        columns = columns_of(task.task_name, task.config.dataset_path, task.config.dataset_name)
        assert columns is not None
        read = columns_read(task)
        extra = read - set(columns.all_types())
        assert not extra, f"task {task.task_name} reads undeclared columns {sorted(extra)}"
        read_by_dataset[id(columns)] |= read
        declared_by_dataset[id(columns)] = set(columns.all_types())
    for key, declared in declared_by_dataset.items():
        stale = declared - read_by_dataset[key]
        assert not stale, f"declared columns no task reads: {sorted(stale)}"


def test_info_prints_dataset_columns_layout_answer_and_metric(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tasks", "info", "nextqa_mc_test"]) == 0
    out = capsys.readouterr().out
    assert "dataset: lmms-eval/NExTQA (config MC)" in out and "split: test" in out
    assert "  video: video  [media]" in out and "  answer: int  [answer]" in out
    assert "files of video: DIR/lmms-eval/NExTQA/MC/NExTVideo/{video}.mp4" in out  # from doc_to_visual itself
    assert "metric: exact_match (higher is better)" in out
    assert main(["tasks", "info", "librispeech_test_clean", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["dataset"] == "lmms-lab-audio/librispeech" and info["answer"] == "gt"
    assert {"name": "audio", "type": "audio", "media": True} in info["columns"]
    assert info["metrics"] == [{"name": "wer", "higher_is_better": False}]


def test_info_and_validate_name_unknown_tasks(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tasks", "info", "mmee"]) == 2
    assert "unknown task or group 'mmee'. Did you mean 'mme'" in capsys.readouterr().err
    assert main(["tasks", "validate", "mmee"]) == 1
    assert "unknown task or group 'mmee'" in capsys.readouterr().out
    assert main(["tasks", "validate", "mme", "nextqa"]) == 0
    assert "checked 2 tasks and groups in 2 YAML files: 0 problem(s)" in capsys.readouterr().out


def _nextqa_copy(root: Path, video: bool = True) -> Path:
    copy = root / "lmms-eval" / "NExTQA" / "MC"
    copy.mkdir(parents=True)
    doc = {"video": "1001", "question": "why?", "answer": 0, "type": "CW"}
    doc.update({f"a{i}": f"option {i}" for i in range(5)})
    (copy / "test.jsonl").write_text(json.dumps(doc) + "\n", encoding="utf-8")
    if video:
        (copy / "NExTVideo").mkdir()
        (copy / "NExTVideo" / "1001.mp4").write_bytes(b"not decoded by validate")
    return copy


def test_validate_data_resolves_video_under_dataset_root_as_the_run_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("LMMS_EVAL_DATASET_ROOT", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))  # an empty cache: nothing found there
    _nextqa_copy(tmp_path / "root")
    argv = ["tasks", "validate", "nextqa_mc_test", "--data", "--dataset_root", str(tmp_path / "root")]
    assert main(argv) == 0, capsys.readouterr().out
    assert "1 tasks and groups in 1 YAML files: 0 problem(s)" in capsys.readouterr().out
    (tmp_path / "root" / "lmms-eval" / "NExTQA" / "MC" / "NExTVideo" / "1001.mp4").unlink()
    assert main(argv) == 1
    out = capsys.readouterr().out
    expected = tmp_path / "root" / "lmms-eval" / "NExTQA" / "MC" / "NExTVideo" / "1001.mp4"
    assert f"doc_to_visual gives the media file '{expected}', which does not exist" in out


def test_validate_data_calls_doc_to_visual_and_reports_what_it_raises(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "docs.jsonl").write_text(
        '{"image": "missing.png", "q": "what?", "a": "x"}\n', encoding="utf-8"
    )
    (tmp_path / "utils.py").write_text(
        "from PIL import Image\n\ndef doc_to_visual(doc):\n    return [Image.open(doc['image'])]\n",
        encoding="utf-8",
    )
    (tmp_path / "opens.yaml").write_text(
        "task: opens_images\ndataset_path: json\ndataset_kwargs:\n  data_files:\n    test: docs.jsonl\n"
        "test_split: test\noutput_type: generate_until\ndoc_to_visual: !function utils.doc_to_visual\n"
        "doc_to_text: q\ndoc_to_target: a\nmetric_list:\n  - metric: exact_match\n",
        encoding="utf-8",
    )
    assert main(["tasks", "validate", "--include_path", str(tmp_path)]) == 0  # configuration only
    capsys.readouterr()
    assert main(["tasks", "validate", "--include_path", str(tmp_path), "--data"]) == 1
    out = capsys.readouterr().out
    assert "task 'opens_images': doc 0: doc_to_visual raised FileNotFoundError" in out
    assert "1 problem(s)" in out


def test_benchmarks_page_shows_what_info_prints(capsys: pytest.CaptureFixture[str]) -> None:
    page = (Path(__file__).parents[1] / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    shown = page.split("$ lmms-eval tasks info nextqa_mc_test\n", 1)[1].split("```", 1)[0]
    assert main(["tasks", "info", "nextqa_mc_test"]) == 0
    assert capsys.readouterr().out == shown
