"""--dataset_root: Hub tasks run on local copies (Hub layout, flat files, save_to_disk, configs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lmms_eval.api.context import AggregationContext, bind_context, takes_context
from lmms_eval.data.load import load_dataset_splits
from lmms_eval.errors import DatasetError

TASK_YAML = """
task: hubbed
dataset_path: lmms-lab-encoder/Hubbed
dataset_name: {config}
test_split: test
output_type: generate_until
doc_to_visual: !function utils.doc_to_visual
doc_to_text: question
doc_to_target: answer
metric_list:
  - metric: exact_match
  - metric: submission
    aggregation: !function utils.write_submission
generation_kwargs:
  max_new_tokens: 4
"""

UTILS = """
def doc_to_visual(doc):
    return [doc["image"].convert("RGB")]


def process(doc, results):
    return {"exact_match": float(results[0] == doc["answer"]), "submission": {"q": doc["question"], "a": results[0]}}


def write_submission(items, context):
    context.write_json("hubbed_submission.json", {i["q"]: i["a"] for i in items})
    return len(items)
"""


def _rows(n: int) -> list[dict[str, Any]]:
    from bench_helpers import solid_image

    return [
        {"question": f"q{i}", "answer": "yes" if i % 2 else "no", "image": solid_image((i, 0, 0))}
        for i in range(n)
    ]


def _features() -> Any:
    import datasets

    return datasets.Features(
        {"question": datasets.Value("string"), "answer": datasets.Value("string"), "image": datasets.Image()}
    )


def _task_dir(write_files: Any, tmp_path: Path, config: str | None) -> Path:
    yaml = TASK_YAML.format(config=config or "null")
    yaml = yaml.replace(
        "doc_to_target: answer", "doc_to_target: answer\nprocess_results: !function utils.process"
    )
    return write_files({"tasks/hubbed.yaml": yaml, "tasks/utils.py": UTILS}, tmp_path) / "tasks"


def test_hub_layout_with_config_runs_and_writes_submission(
    hub_dataset: Any, run_benchmark: Any, write_files: Any, tmp_path: Path
) -> None:
    from lmms_eval.tasks import TaskManager

    hub_dataset("lmms-lab-encoder/Hubbed", "test", _rows(4), _features(), config="en")
    hub_dataset("lmms-lab-encoder/Hubbed", "test", _rows(2), _features(), config="cn")
    tasks = _task_dir(write_files, tmp_path, "en")
    results = run_benchmark(
        "hubbed",
        lambda task, doc: "yes",
        task_manager=TaskManager(include_path=str(tasks)),
        output_path=str(tmp_path / "out"),
    )
    scores = results["results"]["hubbed"]
    assert results["n-samples"]["hubbed"]["effective"] == 4
    assert scores["exact_match,none"] == 0.5
    assert scores["submission,none"] == 4
    [path] = results["output_files"]["submissions"]["hubbed"]
    assert Path(path).parent.name.endswith("_submissions")
    assert json.loads(Path(path).read_text()) == {"q0": "yes", "q1": "yes", "q2": "yes", "q3": "yes"}


def test_owner_alias_and_flat_files(tmp_path: Path) -> None:
    folder = tmp_path / "root" / "lmms-lab" / "Flat"
    folder.mkdir(parents=True)
    (folder / "test.jsonl").write_text('{"q": 1}\n{"q": 2}\n')
    (folder / "validation.jsonl").write_text('{"q": 3}\n')
    splits = load_dataset_splits(
        "lmms-lab-encoder/Flat",
        None,
        {"token": True},
        str(tmp_path),
        "flat",
        dataset_root=str(tmp_path / "root"),
    )
    assert [r["q"] for r in splits["test"]] == [1, 2]
    assert [r["q"] for r in splits["validation"]] == [3]


def test_save_to_disk_copy_and_env_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets

    datasets.DatasetDict({"val": datasets.Dataset.from_list([{"x": 1}, {"x": 2}])}).save_to_disk(
        str(tmp_path / "root" / "Lin-Chen" / "Saved")
    )
    monkeypatch.setenv("LMMS_EVAL_DATASET_ROOT", str(tmp_path / "root"))
    splits = load_dataset_splits("Lin-Chen/Saved", None, {}, str(tmp_path), "saved")
    assert [r["x"] for r in splits["val"]] == [1, 2]


def test_missing_config_names_the_available_ones(tmp_path: Path) -> None:
    for config in ("en", "cn"):
        folder = tmp_path / "root" / "o" / "D" / config
        folder.mkdir(parents=True)
        (folder / "dev.jsonl").write_text('{"q": 1}\n')
    with pytest.raises(DatasetError, match=r"config 'ru' is not in the local dataset .*configs: cn, en"):
        load_dataset_splits("o/D", "ru", {}, str(tmp_path), "d", dataset_root=str(tmp_path / "root"))


def test_root_that_is_not_a_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="is not a folder"):
        load_dataset_splits("o/D", None, {}, str(tmp_path), "d", dataset_root=str(tmp_path / "nope"))


def test_empty_copy_says_what_files_are_expected(tmp_path: Path) -> None:
    (tmp_path / "root" / "o" / "D").mkdir(parents=True)
    with pytest.raises(DatasetError, match=r"task 'd': .* has no data files: expected a save_to_disk folder"):
        load_dataset_splits("o/D", None, {}, str(tmp_path), "d", dataset_root=str(tmp_path / "root"))


def test_context_writes_nothing_without_output_or_when_dry(tmp_path: Path) -> None:
    assert AggregationContext("t").write_json("a.json", {}) is None
    assert AggregationContext("t", str(tmp_path), "stamp").as_dry().write_json("a.json", {}) is None
    context = AggregationContext("t", str(tmp_path), "stamp")
    path = context.write_jsonl("a.jsonl", [{"x": 1}])
    assert path == str(tmp_path / "stamp_submissions" / "a.jsonl")
    assert context.written == [path]
    with pytest.raises(ValueError, match="plain file name"):
        context.submission_path("../escape.json")


def test_bind_context_only_for_two_parameter_aggregations() -> None:
    def one(items: list[Any]) -> int:
        return len(items)

    def two(items: list[Any], args: Any) -> str:
        return args.task_name

    assert not takes_context(one) and takes_context(two)
    assert bind_context(one, AggregationContext("t")) is one
    assert bind_context(two, AggregationContext("t"))([1]) == "t"


def test_process_docs_can_join_another_config(
    hub_dataset: Any, run_benchmark: Any, write_files: Any, tmp_path: Path
) -> None:
    import datasets

    from lmms_eval.tasks import TaskManager

    questions = datasets.Features({"question": datasets.Value("string"), "imageId": datasets.Value("string")})
    hub_dataset(
        "lmms-lab/Joined",
        "testdev",
        [{"question": "q0", "imageId": "b"}, {"question": "q1", "imageId": "a"}],
        questions,
        config="qs",
    )
    images = datasets.Features({"id": datasets.Value("string"), "note": datasets.Value("string")})
    hub_dataset(
        "lmms-lab/Joined",
        "testdev",
        [{"id": "a", "note": "from a"}, {"id": "b", "note": "from b"}],
        images,
        config="imgs",
    )
    yaml = """
task: joined
dataset_path: lmms-lab/Joined
dataset_name: qs
test_split: testdev
output_type: generate_until
process_docs: !function utils.join
doc_to_text: question
doc_to_target: note
metric_list:
  - metric: exact_match
"""
    utils = """
def join(docs, load_config):
    notes = {row["id"]: row["note"] for row in load_config("imgs", "testdev")}
    return docs.map(lambda doc: {"note": notes[doc["imageId"]]})
"""
    tasks = write_files({"t/joined.yaml": yaml, "t/utils.py": utils}, tmp_path) / "t"
    results = run_benchmark(
        "joined", lambda task, doc: "from b", task_manager=TaskManager(include_path=str(tasks))
    )
    assert results["results"]["joined"]["exact_match,none"] == 0.5
