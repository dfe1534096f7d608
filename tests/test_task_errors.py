"""Task-side user errors: bad documents are per-document failures, broken tasks are one clear error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from files import write_tree as _write

import lmms_eval
from lmms_eval.api.instance import Instance
from lmms_eval.api.task import ConfigurableTask
from lmms_eval.caching import RequestCache
from lmms_eval.errors import ConfigError, DatasetError
from lmms_eval.tasks import TaskManager

ROWS = [{"question": f"q{i}", "answer": "a"} for i in range(5)]
ROWS[2] = {"prompt": "no question here", "answer": "a"}  # doc 2 lacks 'question'

BASE = """dataset_path: json
dataset_kwargs:
  data_files:
    test: data.jsonl
test_split: test
doc_to_target: answer
"""

UTILS = """
def doc_to_text(doc):
    if "question" not in doc or doc["question"] is None:
        raise KeyError("question")
    return doc["question"]


def doc_to_visual(doc):
    if doc.get("question") is None:
        raise ValueError("no image for this doc")
    return []


def doc_to_messages(doc):
    return [{"role": "user", "content": [{"type": "text", "text": doc_to_text(doc)}]}]


def always_raises(doc):
    raise KeyError("question")


def score(doc, results):
    if doc["question"] == "q3":
        raise ValueError("cannot parse the answer")
    return {"acc": 1.0}


def score_as_text(doc, results):
    return "1.0"


ANSWER_COUNT = 3
"""


@pytest.fixture
def tasks(tmp_path: Path) -> Path:
    data = "\n".join(json.dumps(r) for r in ROWS) + "\n"
    return _write(
        tmp_path / "tasks",
        {
            "t/data.jsonl": data,
            "t/utils.py": UTILS,
            "t/text.yaml": "task: bad_text\n" + BASE + "doc_to_text: !function utils.doc_to_text\n",
            "t/visual.yaml": "task: bad_visual\n"
            + BASE
            + "doc_to_text: answer\ndoc_to_visual: !function utils.doc_to_visual\n",
            "t/messages.yaml": "task: bad_messages\n"
            + BASE
            + "doc_to_text: answer\ndoc_to_messages: !function utils.doc_to_messages\n",
            "t/broken.yaml": "task: broken\n" + BASE + "doc_to_text: !function utils.always_raises\n",
            "t/score.yaml": "task: bad_score\n"
            + BASE
            + "doc_to_text: answer\nprocess_results: !function utils.score\nmetric_list:\n  - metric: acc\n",
            "t/text_score.yaml": "task: text_score\n"
            + BASE
            + "doc_to_text: answer\nprocess_results: !function utils.score_as_text\n",
        },
    )


def _task(root: Path, name: str) -> ConfigurableTask:
    task = TaskManager(include_path=str(root), include_defaults=False).load_task_or_group([name])[name]
    assert isinstance(task, ConfigurableTask)
    return task


def _failures(requests: list[Instance]) -> dict[int, list[str]]:
    return {r.doc_id: r.failures for r in requests if r.failures}


# -- doc_to_* raising on one document ------------------------------------------------------------


def test_doc_to_text_raising_on_one_doc_fails_only_that_doc(tasks: Path) -> None:
    requests = _task(tasks, "bad_text").build_all_requests(chat=False)
    assert [r.doc_id for r in requests] == [0, 1, 2, 3, 4]
    assert _failures(requests) == {
        2: ["input: task 'bad_text' doc 2: doc_to_text raised KeyError: 'question'"]
    }
    assert requests[0].args[0] == "q0" and not requests[0].failures


@pytest.mark.parametrize(
    ("name", "chat", "function"),
    [
        ("bad_visual", False, "doc_to_visual raised ValueError: no image for this doc"),
        ("bad_messages", True, "doc_to_messages raised KeyError: 'question'"),
        ("bad_text", True, "doc_to_text raised KeyError: 'question'"),  # chat without doc_to_messages
    ],
)
def test_visual_and_messages_are_checked_when_requests_are_built(
    tasks: Path, name: str, chat: bool, function: str
) -> None:
    requests = _task(tasks, name).build_all_requests(chat=chat)
    assert _failures(requests) == {2: [f"input: task '{name}' doc 2: {function}"]}


def test_a_run_scores_the_other_docs_and_records_the_failure(tasks: Path, tmp_path: Path) -> None:
    manager = TaskManager(include_path=str(tasks), include_defaults=False)
    results = lmms_eval.simple_evaluate(
        model="dummy",
        model_args="answer_field=answer",
        tasks=["bad_text"],
        task_manager=manager,
        output_path=str(tmp_path / "out"),
        log_samples=True,
        show_progress=False,
    )
    scores = results["results"]["bad_text"]
    assert scores["exact_match,none"] == 1.0 and scores["samples"] == 4 and scores["failed"] == 1
    assert results["failures"]["bad_text"]["by_kind"] == {"input": 1}
    lines = [json.loads(x) for x in next(tmp_path.rglob("*_samples_bad_text.jsonl")).read_text().splitlines()]
    failed = [x for x in lines if x.get("failed")]
    assert [x["doc_id"] for x in failed] == [2]
    assert failed[0]["errors"] == ["input: task 'bad_text' doc 2: doc_to_text raised KeyError: 'question'"]
    assert sorted(x["doc_id"] for x in lines if not x.get("failed")) == [0, 1, 3, 4]


def test_every_doc_failing_the_same_way_is_a_broken_task(tasks: Path) -> None:
    task = _task(tasks, "broken")
    with pytest.raises(ConfigError) as info:
        task.build_all_requests(chat=False)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("task 'broken': doc_to_text raised on every document (5)")
    assert "(doc 0): KeyError: 'question'" in message


def test_a_failed_doc_is_never_stored_in_the_request_cache(tasks: Path, tmp_path: Path) -> None:
    cache = RequestCache("true", tmp_path / "requests")
    requests = cache.build(_task(tasks, "bad_text"), chat=False)
    assert 2 in _failures(requests)
    assert cache.stored == [] and not list((tmp_path / "requests").glob("*.json"))


# -- process_results ---------------------------------------------------------------------------


def test_process_results_raising_on_one_doc_fails_only_that_doc(tasks: Path, tmp_path: Path) -> None:
    manager = TaskManager(include_path=str(tasks), include_defaults=False)
    results = lmms_eval.simple_evaluate(
        model="dummy",
        tasks=["bad_score"],
        task_manager=manager,
        output_path=str(tmp_path / "out"),
        log_samples=True,
        show_progress=False,
        limit=4,
        offset=0,
    )
    scores = results["results"]["bad_score"]
    assert scores["acc,none"] == 1.0 and scores["samples"] == 3 and scores["failed"] == 1
    lines = [
        json.loads(x) for x in next(tmp_path.rglob("*_samples_bad_score.jsonl")).read_text().splitlines()
    ]
    failed = [x for x in lines if x.get("failed")]
    assert [x["doc_id"] for x in failed] == [3]
    assert failed[0]["errors"] == [
        "input: task 'bad_score' doc 3: process_results raised ValueError: cannot parse the answer"
    ]
    assert failed[0]["resps"] and "acc" not in failed[0]  # the paid-for response is kept, not scored


def test_process_results_returning_a_non_dict_is_a_task_bug(tasks: Path) -> None:
    manager = TaskManager(include_path=str(tasks), include_defaults=False)
    with pytest.raises(ConfigError) as info:
        lmms_eval.simple_evaluate(model="dummy", tasks=["text_score"], task_manager=manager, limit=2)
    message = str(info.value)
    assert "task 'text_score'" in message and "utils.score_as_text" in message and "returned a str" in message


# -- groups --------------------------------------------------------------------------------------


def test_group_cycles_name_the_cycle_and_the_files(tmp_path: Path) -> None:
    root = _write(
        tmp_path / "g",
        {
            "a.yaml": "group: ga\ntask:\n  - gb\n",
            "b.yaml": "group: gb\ntask:\n  - task: ga\n",
            "self.yaml": "group: gself\ntask:\n  - gself\n",
        },
    )
    manager = TaskManager(include_path=str(root), include_defaults=False)
    with pytest.raises(ConfigError) as info:
        manager.load_task_or_group(["ga"])
    message = str(info.value)
    assert message.startswith("group cycle: ga -> gb -> ga (in ")
    assert str(root / "a.yaml") in message and str(root / "b.yaml") in message and "\n" not in message
    with pytest.raises(ConfigError, match=r"group cycle: gself -> gself \(in .*self\.yaml\)"):
        manager.load_task_or_group(["gself"])


# -- data files ----------------------------------------------------------------------------------


def _json_task(root: Path, data: bytes) -> Path:
    (root / "d").mkdir(parents=True)
    (root / "d" / "data.jsonl").write_bytes(data)
    (root / "d" / "d.yaml").write_text(
        "task: data_task\n" + BASE + "doc_to_text: question\n", encoding="utf-8"
    )
    return root


def test_a_data_file_that_is_not_utf8_names_file_line_and_byte(tmp_path: Path) -> None:
    root = _json_task(tmp_path, b'{"question": "q", "answer": "a"}\n{"question": "caf\xe9", "answer": "a"}\n')
    task = _task(root, "data_task")
    with pytest.raises(DatasetError) as info:
        _ = task.eval_docs
    message = str(info.value)
    assert "\n" not in message
    assert f"{root / 'd' / 'data.jsonl'}:2: byte 0xe9" in message and "must be UTF-8" in message


def test_line_and_paragraph_separators_inside_json_lines_strings_load(tmp_path: Path) -> None:
    rows = [{"question": "one\u2028two\u2029three", "answer": "a"}, {"question": "q", "answer": "b"}]
    data = "\n".join(json.dumps(r, ensure_ascii=False) for r in rows).encode("utf-8")
    task = _task(_json_task(tmp_path, data), "data_task")
    assert [d["question"] for d in task.eval_docs] == ["one\u2028two\u2029three", "q"]


# -- !function and utils.py ----------------------------------------------------------------------


def test_a_utils_import_error_is_one_line_naming_file_and_module(tmp_path: Path) -> None:
    root = _write(
        tmp_path / "u",
        {
            "u/utils.py": "import json\nimport not_an_installed_module_xyz\n\ndef doc_to_text(doc):\n    return 'x'\n",
            "u/u.yaml": "task: imports\n" + BASE + "doc_to_text: !function utils.doc_to_text\n",
        },
    )
    with pytest.raises(ConfigError) as info:
        _task(root, "imports")
    message = str(info.value)
    assert "\n" not in message and "Traceback" not in message
    assert str(root / "u" / "utils.py") in message and "line 2" in message
    assert "it imports 'not_an_installed_module_xyz', which is not installed" in message


def test_function_targets_suggest_callables_and_must_be_callable(tasks: Path) -> None:
    _write(
        tasks,
        {
            "t/typo.yaml": "task: typo\n" + BASE + "doc_to_text: !function utils.doc_to_txt\n",
            "t/const.yaml": "task: const\n" + BASE + "doc_to_text: !function utils.ANSWER_COUNT\n",
            "t/const2.yaml": "task: const2\n" + BASE + "doc_to_text: !function utils.ANSWER_COUNTS\n",
        },
    )
    with pytest.raises(ConfigError, match=r"no attribute 'doc_to_txt'\. Did you mean 'doc_to_text'"):
        _task(tasks, "typo")
    with pytest.raises(ConfigError) as info:  # only functions are suggested, not the constant
        _task(tasks, "const2")
    assert "no attribute 'ANSWER_COUNTS'" in str(info.value) and "ANSWER_COUNT'" not in str(info.value)
    with pytest.raises(ConfigError, match=r"!function 'utils\.ANSWER_COUNT' names a value of type int"):
        _task(tasks, "const")


# -- Jinja sandbox -------------------------------------------------------------------------------


def test_templates_are_sandboxed_and_keep_their_filters(tasks: Path) -> None:
    _write(
        tasks,
        {
            "t/escape.yaml": "task: escape\n" + BASE + "doc_to_text: \"{{ ''.__class__.__mro__ }}\"\n",
            "t/fine.yaml": "task: fine\n"
            + BASE
            + "doc_to_text: \"{{ answer | upper }} {{ question | regex_replace('q', 'Q') }}\"\n",
        },
    )
    assert _task(tasks, "fine").doc_to_text(ROWS[1]) == "A Q1"
    with pytest.raises(ConfigError) as info:
        _task(tasks, "escape").build_all_requests(chat=False)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("task 'escape': doc_to_text template") and "unsafe" in message
