"""The lazy task index: header scan, cache, .yml, include-derived names, duplicates, broken files."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from lmms_eval.cli import main
from lmms_eval.errors import ConfigError, TaskNotFoundError
from lmms_eval.tasks import TaskManager
from lmms_eval.tasks import _index as index_module

DATA = '{"question": "q0", "answer": "a"}\n{"question": "q1", "answer": "b"}\n'
TASK = """task: {name}
dataset_path: json
dataset_kwargs:
  data_files:
    test: data.jsonl
test_split: test
doc_to_text: question
doc_to_target: answer
"""


def _tree(write_files, root: Path) -> Path:
    return write_files(
        {
            "a/data.jsonl": DATA,
            "a/alpha.yaml": TASK.format(name="alpha") + "tag: [letters, first]\n",
            "a/beta.yml": TASK.format(name="beta") + "tag: letters\n",
            "a/_template_yaml": "task: from_template\ndataset_path: json\noutput_type: multiple_choice\n",
            "a/gamma.yaml": "include: _template_yaml\ntask: gamma\n",
            "a/delta.yaml": "include: _template_yaml\n",  # takes its name from the template
            "a/grp.yaml": "group: grp\ntask:\n  - alpha\n  - beta\n",
            "a/notes.yaml": "just: a mapping without task or group\n",
        },
        root,
    )


def test_index_finds_tasks_groups_tags_and_yml(write_files, tmp_path: Path) -> None:
    root = _tree(write_files, tmp_path / "tasks")
    manager = TaskManager(include_path=str(root), include_defaults=False)
    assert manager.all_subtasks == ["alpha", "beta", "from_template", "gamma"]
    assert manager.all_groups == ["grp"]
    assert manager.all_tags == ["first", "letters"]
    assert manager.index.entries["letters"].tasks == ["alpha", "beta"]
    assert manager.index.entries["gamma"].output_type == "multiple_choice"  # from the included template
    assert "notes" not in manager.all_tasks


def test_warm_index_reuses_cached_headers_and_notices_changes(
    write_files, tmp_path: Path, monkeypatch
) -> None:
    root = _tree(write_files, tmp_path / "tasks")
    TaskManager(include_path=str(root), include_defaults=False)
    calls: list[str] = []
    real = index_module.scan_header

    def counting(path: str) -> dict:
        calls.append(path)
        return real(path)

    monkeypatch.setattr(index_module, "scan_header", counting)
    TaskManager(include_path=str(root), include_defaults=False)
    assert calls == []  # everything came from the cache
    beta = root / "a" / "beta.yml"
    beta.write_text(TASK.format(name="beta_renamed"))
    stamp = time.time() + 5
    os.utime(beta, (stamp, stamp))
    manager = TaskManager(include_path=str(root), include_defaults=False)
    assert calls == [str(beta)]
    assert "beta_renamed" in manager.all_subtasks and "beta" not in manager.all_subtasks


def test_duplicate_names_error_names_both_files(write_files, tmp_path: Path) -> None:
    root = write_files(
        {"x/data.jsonl": DATA, "x/one.yaml": TASK.format(name="dup"), "y/two.yaml": TASK.format(name="dup")},
        tmp_path / "tasks",
    )
    manager = TaskManager(include_path=str(root), include_defaults=False)
    with pytest.raises(ConfigError) as info:
        manager.load_task_or_group(["dup"])
    assert "one.yaml" in str(info.value) and "two.yaml" in str(info.value)


def test_broken_yaml_fails_only_when_selected_and_validate_reports_all(
    write_files, tmp_path: Path, capsys
) -> None:
    root = write_files(
        {
            "ok/data.jsonl": DATA,
            "ok/good.yaml": TASK.format(name="good"),
            "bad/broken.yaml": "task: broken\ndoc_to_text: [unclosed\n",
            "bad/typo.yaml": TASK.format(name="typo").replace("doc_to_text", "doc_to_txt"),
        },
        tmp_path / "tasks",
    )
    manager = TaskManager(include_path=str(root), include_defaults=False)
    assert "good" in manager.load_task_or_group(["good"])  # a broken neighbour does not matter
    with pytest.raises(ConfigError, match=r"broken\.yaml: invalid YAML"):
        manager.load_task_or_group(["broken"])
    with pytest.raises(
        ConfigError, match=r"typo\.yaml: task 'typo': unknown key 'doc_to_txt'\. Did you mean 'doc_to_text'"
    ):
        manager.load_task_or_group(["typo"])
    code = main(["tasks", "validate", "--include_path", str(root)])
    out = capsys.readouterr().out
    assert code == 1
    assert "broken.yaml" in out and "doc_to_txt" in out and "2 problem(s)" in out


def test_unknown_task_suggests_close_names(write_files, tmp_path: Path) -> None:
    root = _tree(write_files, tmp_path / "tasks")
    manager = TaskManager(include_path=str(root), include_defaults=False)
    with pytest.raises(TaskNotFoundError, match="Did you mean 'alpha'"):
        manager.load_task_or_group(["alpah"])


def test_patterns_and_tags_expand(write_files, tmp_path: Path) -> None:
    root = _tree(write_files, tmp_path / "tasks")
    manager = TaskManager(include_path=str(root), include_defaults=False)
    assert list(manager.load_task_or_group(["letters"])) == ["alpha", "beta"]
    assert manager.match_tasks(["g*"]) == ["gamma", "grp"]
