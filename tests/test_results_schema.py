"""The typed contract of the output files: real runs written, read back and validated; older files
(our schema 1.0, the published package's layout) loading into the same models; unknown keys kept;
the metric values flat on disk; the JSON Schema file current."""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import logging
import runpy
from pathlib import Path
from typing import Any

import pytest

import lmms_eval
from lmms_eval.compare import load_doc_scores
from lmms_eval.errors import LmmsEvalError
from lmms_eval.loggers.table import make_table
from lmms_eval.results import (
    SCHEMA_VERSION,
    ResultsFile,
    SampleRecord,
    doc_hash,
    find_runs,
    read_samples,
)
from lmms_eval.results.writer import OutputWriter
from lmms_eval.tasks import TaskManager

ROOT = Path(__file__).resolve().parents[1]


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def _dummy_run(out: Path, **kwargs: Any) -> dict[str, Any]:
    return lmms_eval.simple_evaluate(
        model="dummy",
        model_args="answer_field=answer,accuracy=0.6",
        tasks=["demo_qa"],
        limit=8,
        output_path=str(out),
        log_samples=True,
        bootstrap_iters=0,
        show_progress=False,
        **kwargs,
    )


# -- real runs ------------------------------------------------------------------------------------


def test_dummy_run_writes_files_that_load_validate_and_round_trip(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="lmms_eval.results.writer"):
        returned = _dummy_run(tmp_path)
    assert not caplog.records  # every write (running, then completed) matched the schema
    [run] = find_runs(tmp_path)
    assert run.results is not None and list(run.samples) == ["demo_qa"]
    text = run.results.read_text(encoding="utf-8")
    results = ResultsFile.load(run.results)
    assert results.schema_version == SCHEMA_VERSION == results.loaded_version == "2.2"
    assert results.status == "completed" and results.n_samples["demo_qa"].effective == 8
    assert json.loads(results.dump()) == json.loads(text)  # nothing lost, nothing added
    [row] = results.results["demo_qa"].metrics()
    assert (row.metric, row.filter) == ("exact_match", "none")
    assert row.value == returned["results"]["demo_qa"]["exact_match,none"]
    assert row.ci_lower is not None and "_stderr" not in row.related
    assert make_table(results) == make_table(returned)
    assert results.output_files is not None
    assert results.output_files.samples == {"demo_qa": str(run.samples["demo_qa"])}

    lines = _lines(run.samples["demo_qa"])
    assert len(lines) == 8
    for line in lines:
        on_disk = json.loads(line)
        record = SampleRecord.from_line(line)
        assert json.dumps(json.loads(record.to_line())) == json.dumps(on_disk)  # same keys, same order
        assert "metrics" not in on_disk and on_disk["exact_match"] == record.metrics["exact_match"]
        assert set(record.metrics) == {"exact_match"}
        assert record.doc is not None and doc_hash(record.doc) == record.doc_hash
        assert record.doc["question"] in record.input and record.target == record.doc["answer"]
        assert list(on_disk)[-1] == "doc"


def test_multiple_choice_and_failed_records_round_trip(tmp_path: Path, write_files: Any) -> None:
    rows = "\n".join(json.dumps({"q": f"q{i}", "choices": ["a", "b"], "label": i % 2}) for i in range(4))
    write_files(
        {
            "t/d.jsonl": rows,
            "t/mc.yaml": "task: mc\ndataset_path: json\ndataset_kwargs:\n  data_files:\n    test: d.jsonl\n"
            "test_split: test\noutput_type: multiple_choice\ndoc_to_text: q\ndoc_to_choice: choices\n"
            "doc_to_target: label\nmetric_list:\n  - metric: acc\n",
        }
    )
    lmms_eval.simple_evaluate(
        model="dummy",
        tasks=["mc"],
        task_manager=TaskManager(include_path=str(tmp_path / "t"), include_defaults=False),
        output_path=str(tmp_path / "o"),
        log_samples=True,
        bootstrap_iters=0,
        show_progress=False,
    )
    [run] = find_runs(tmp_path / "o")
    for line in _lines(run.samples["mc"]):
        record = SampleRecord.from_line(line)
        assert record.arguments is not None and len(record.arguments) == 2
        assert json.dumps(json.loads(record.to_line())) == json.dumps(json.loads(line))
    failed = SampleRecord.build(doc_id=3, doc_hash="h", failed=True, errors=["boom"], filter=None)
    assert json.loads(failed.to_line()) == {
        "doc_id": 3,
        "doc_hash": "h",
        "filter": None,
        "failed": True,
        "errors": ["boom"],
    }
    assert SampleRecord.from_line(failed.to_line()).to_line() == failed.to_line()
    assert SampleRecord.from_line(failed.to_line()) == failed  # build() makes what validation makes
    assert failed.metrics == {} and failed.metrics is not SampleRecord.build(doc_id=4).metrics


@pytest.mark.skipif(
    importlib.util.find_spec("lmms_eval.models.chat.huggingface") is None
    or importlib.util.find_spec("torch") is None,
    reason="needs the huggingface backend",
)
def test_demo_model_runs_log_image_references_with_the_stored_bytes(tmp_path: Path, write_files: Any) -> None:
    datasets = pytest.importorskip("datasets")
    from lmms_eval.demo import TINY_VLM_DIR
    from lmms_eval.demo.shapes import read_jsonl, render

    specs = read_jsonl()[:6]
    pngs: list[bytes] = []
    for spec in specs:
        buffer = io.BytesIO()
        render(spec).save(buffer, format="PNG")
        pngs.append(buffer.getvalue())
    features = datasets.Features(
        {"question": datasets.Value("string"), "answer": datasets.Value("string"), "image": datasets.Image()}
    )
    rows = [
        {"question": s["question"], "answer": s["answer"], "image": {"bytes": png, "path": None}}
        for s, png in zip(specs, pngs)
    ]
    (tmp_path / "t").mkdir()
    datasets.Dataset.from_list(rows, features=features).to_parquet(str(tmp_path / "t" / "shapes.parquet"))
    write_files(
        {
            "t/utils.py": "def visual(doc):\n    return [doc['image'].convert('RGB')]\n",
            "t/shape_files.yaml": "task: shape_files\ndataset_path: parquet\ndataset_kwargs:\n  data_files:\n"
            "    test: shapes.parquet\ntest_split: test\ndoc_to_visual: !function utils.visual\n"
            "doc_to_text: question\ndoc_to_target: answer\ngeneration_kwargs:\n  max_new_tokens: 8\n"
            "metric_list:\n  - metric: exact_match\n",
        }
    )
    manager = TaskManager(include_path=str(tmp_path / "t"))
    lmms_eval.simple_evaluate(
        model="huggingface",
        model_args=f"pretrained={TINY_VLM_DIR}",
        tasks=["shape_files", "demo_shapes"],
        limit=6,
        batch_size=8,
        task_manager=manager,
        output_path=str(tmp_path / "o"),
        log_samples=True,
        bootstrap_iters=0,
        show_progress=False,
    )
    [run] = find_runs(tmp_path / "o")
    assert ResultsFile.load(run.results or "").status == "completed"
    records = sorted(read_samples(run.samples["shape_files"]), key=lambda r: r.doc_id)
    assert [r.doc_id for r in records] == list(range(6))
    for record, png, spec in zip(records, pngs, specs):
        image = record.doc["image"]
        assert image == {
            "_media": "image",
            "sha256": hashlib.sha256(png).hexdigest(),
            "bytes": len(png),
            "width": 112,
            "height": 112,
            "format": "PNG",
        }
        assert record.doc["question"] == spec["question"]
        assert record.doc_hash == doc_hash({"question": spec["question"], "answer": spec["answer"]})
    shapes = sorted(read_samples(run.samples["demo_shapes"]), key=lambda r: r.doc_id)
    assert [r.doc for r in shapes] == specs  # the images of demo_shapes are drawn from the spec


# -- older files ----------------------------------------------------------------------------------

V1_RESULTS = {
    "results": {"demo_qa": {"alias": "demo_qa", "exact_match,none": 0.5, "exact_match_stderr,none": 0.2,
                            "exact_match_ci_lower,none": 0.1, "exact_match_ci_upper,none": 0.9, "samples": 4}},
    "groups": {}, "group_subtasks": {}, "configs": {"demo_qa": {"task": "demo_qa"}},
    "versions": {"demo_qa": 1.0}, "n-shot": {"demo_qa": 0},
    "higher_is_better": {"demo_qa": {"exact_match": True}},
    "n-samples": {"demo_qa": {"original": 20, "effective": 4}}, "task_hashes": {"demo_qa": "abc"},
    "timings": {"demo_qa": {"generate_until": 0.01}}, "throughput": {"demo_qa": {"responses": 4}},
    "usage": {"by_task": {"demo_qa": {"input_tokens": 0}}, "total": {"input_tokens": 0},
              "budget_total_tokens": None, "budget_used_tokens": None, "budget_exceeded": False},
    "failures": {}, "status": "completed", "schema_version": "1.0",
    "config": {"model": "dummy", "model_id": "dummy", "model_backend": "x.Dummy (chat)", "model_args": {},
               "batch_size": None, "limit": 4, "resolved_cli_args": {}},
    "model_name": "dummy", "model_name_sanitized": "dummy", "system_instruction": None,
    "system_instruction_sha": None, "start_time": "2026-01-01T00:00:00Z", "end_time": "2026-01-01T00:00:01Z",
    "date": "20260101_000000", "total_evaluation_time_seconds": 1.25, "lmms_eval_version": "0.1.0",
    "git_hash": None, "git_branch": None,
    "output_files": {"results": "o/dummy/20260101_000000_results.json"},
}  # fmt: skip


def _v1_line(doc_id: int, answer: str, correct: float) -> dict[str, Any]:
    return {"doc_id": doc_id, "doc_hash": f"h{doc_id}", "target": answer, "input": f"q{doc_id}",
            "resps": [[answer]], "filtered_resps": [answer], "filter": "none", "token_counts": None,
            "exact_match": correct}  # fmt: skip


def test_schema_1_0_files_load(tmp_path: Path) -> None:
    folder = tmp_path / "dummy"
    folder.mkdir()
    (folder / "20260101_000000_results.json").write_text(json.dumps(V1_RESULTS, indent=2))
    lines = [_v1_line(i, str(i), float(i % 2)) for i in range(4)]
    (folder / "20260101_000000_samples_demo_qa.jsonl").write_text("\n".join(map(json.dumps, lines)) + "\n")
    results = ResultsFile.load(folder / "20260101_000000_results.json")
    assert results.loaded_version == "1.0" and results.schema_version == "2.2"
    assert results.n_shot == {"demo_qa": 0} and results.config is not None and results.config.limit == 4
    assert results.usage is not None and results.usage.by_task["demo_qa"].input_tokens == 0
    records = list(read_samples(folder / "20260101_000000_samples_demo_qa.jsonl", published=False))
    assert [r.doc for r in records] == [None] * 4
    assert [json.loads(r.to_line()) for r in records] == lines
    run = load_doc_scores(tmp_path)
    assert run.tasks["demo_qa"].scores["exact_match,none"] == {0: 0.0, 1: 1.0, 2: 0.0, 3: 1.0}
    assert run.model_name == "dummy"


PUBLISHED_RESULTS = {
    "results": {"demo_qa": {"alias": "demo_qa", "exact_match,none": 0.75, "exact_match_stderr,none": 0.25,
                            "exact_match_stderr_clt,none": 0.25, "samples": 4}},
    "group_subtasks": {"demo_qa": []}, "configs": {"demo_qa": {"task": "demo_qa", "output_type": "generate_until"}},
    "versions": {"demo_qa": "Yaml"}, "n-shot": {"demo_qa": 0},
    "higher_is_better": {"demo_qa": {"exact_match": True}},
    "n-samples": {"demo_qa": {"original": 20, "effective": 4}},
    "config": {"model": "qwen2_5_vl", "model_args": "pretrained=Qwen/Qwen2.5-VL-3B-Instruct", "batch_size": "1",
               "batch_sizes": [], "device": "cuda:0", "use_cache": None, "limit": 4.0, "bootstrap_iters": 100000,
               "gen_kwargs": "", "random_seed": 0, "numpy_seed": 1234, "torch_seed": 1234, "fewshot_seed": 1234},
    "git_hash": "1a2b3c4", "date": "20250101_120000", "task_hashes": {"demo_qa": "abc"},
    "model_source": "qwen2_5_vl", "model_name": "Qwen/Qwen2.5-VL-3B-Instruct",
    "model_name_sanitized": "Qwen__Qwen2.5-VL-3B-Instruct", "system_instruction": None,
    "system_instruction_sha": None, "fewshot_as_multiturn": False, "chat_template": None,
    "chat_template_sha": None, "start_time": 1234.5, "end_time": 1300.25,
    "total_evaluation_time_seconds": "65.75",
}  # fmt: skip


def _published_samples() -> list[dict[str, Any]]:
    """Published lines: single-request lists flattened, ``resps`` left out when equal, no ``doc``."""
    answers = ["16", "12", "0", "9"]
    return [
        {"doc_id": i, "target": a, "input": f"q{i}", "filtered_resps": a, "token_counts": None,
         "doc_hash": f"h{i}", "exact_match": float(i != 2)}
        | ({"resps": ["sixteen"]} if i == 0 else {})
        for i, a in enumerate(answers)
    ]  # fmt: skip


def test_published_layout_loads_into_the_same_models(tmp_path: Path) -> None:
    folder = tmp_path / "Qwen__Qwen2.5-VL-3B-Instruct"
    folder.mkdir()
    (folder / "20250101_120000_results.json").write_text(json.dumps(PUBLISHED_RESULTS, indent=2))
    lines = _published_samples()
    (folder / "20250101_120000_samples_demo_qa.jsonl").write_text("\n".join(map(json.dumps, lines)) + "\n")
    results = ResultsFile.load(folder / "20250101_120000_results.json")
    assert results.loaded_version is None and results.total_evaluation_time_seconds == 65.75
    assert results.config is not None and results.config.batch_size == "1"
    assert results.model_extra is not None and results.model_extra["model_source"] == "qwen2_5_vl"
    [row] = results.results["demo_qa"].metrics()
    assert row.related == {"_stderr_clt": 0.25}
    records = list(read_samples(folder / "20250101_120000_samples_demo_qa.jsonl"))  # layout detected
    assert records[0].resps == [["sixteen"]] and records[0].filtered_resps == ["16"]
    assert records[1].resps == [["12"]] and records[1].filtered_resps == ["12"]
    assert records[2].metrics == {"exact_match": 0.0} and records[2].filter is None
    run = load_doc_scores(folder / "20250101_120000_results.json")
    assert run.tasks["demo_qa"].scores["exact_match,none"] == {0: 1.0, 1: 1.0, 2: 0.0, 3: 1.0}


def test_published_samples_replay_through_from_log(tmp_path: Path) -> None:
    first = _dummy_run(tmp_path / "ours")
    [run] = find_runs(tmp_path / "ours")
    published = []
    for line in _lines(run.samples["demo_qa"]):
        data = json.loads(line)
        data.pop("doc")
        data["filtered_resps"] = data["filtered_resps"][0]
        data["resps"] = data["resps"][0]
        published.append(json.dumps(data))
    logs = tmp_path / "published" / "20250101_120000_samples_demo_qa.jsonl"
    logs.parent.mkdir()
    logs.write_text("\n".join(published) + "\n")
    replay = lmms_eval.simple_evaluate(
        model="from_log", model_args=f"logs={logs.parent}", tasks=["demo_qa"], limit=8,
        bootstrap_iters=0, show_progress=False,
    )  # fmt: skip
    assert replay["results"]["demo_qa"]["exact_match,none"] == first["results"]["demo_qa"]["exact_match,none"]


# -- unknown keys, bad files ------------------------------------------------------------------------


def test_unknown_keys_survive_a_load_and_a_dump(tmp_path: Path) -> None:
    data = json.loads(json.dumps(V1_RESULTS))
    data["plugin"] = {"anything": [1, 2]}
    data["results"]["demo_qa"]["my_metric_extra,none"] = 3
    data["config"]["plugin_flag"] = True
    data["n-samples"]["demo_qa"]["skipped"] = 1
    data["usage"]["by_task"]["demo_qa"]["cost_usd"] = 0.5
    path = tmp_path / "20260101_000000_results.json"
    path.write_text(json.dumps(data))
    again = json.loads(ResultsFile.load(path).dump())
    assert again == {**data, "schema_version": SCHEMA_VERSION}
    line = json.dumps({"doc_id": 1, "resps": [["x"]], "filtered_resps": ["x"], "filter": "none",
                       "score": {"value": 1, "cat": "a"}, "parsed": "x", "doc": {"q": "?"}})  # fmt: skip
    record = SampleRecord.from_line(line)
    assert record.metrics == {"score": {"value": 1, "cat": "a"}, "parsed": "x"}
    assert record.scores() == {"score": {"value": 1, "cat": "a"}}
    assert record.to_line() == line


def test_bad_files_are_one_line_errors_naming_file_and_key(tmp_path: Path) -> None:
    path = tmp_path / "r_results.json"
    path.write_text(json.dumps({"schema_version": "3.0", "results": {}}))
    with pytest.raises(
        LmmsEvalError, match=r"r_results\.json: key 'schema_version' = '3\.0': written by a newer"
    ):
        ResultsFile.load(path)
    path.write_text(json.dumps({"schema_version": "2.0", "n-samples": {"t": {"effective": "many"}}}))
    with pytest.raises(
        LmmsEvalError, match=r"key 'n-samples\.t\.effective' = 'many': Input should be a valid integer"
    ):
        ResultsFile.load(path)
    path.write_text("{not json")
    with pytest.raises(LmmsEvalError, match="cannot read the results JSON"):
        ResultsFile.load(path)
    samples = tmp_path / "x_samples_t.jsonl"
    samples.write_text('{"doc_id": 0}\n{"doc_id": "zero"}\n')
    with pytest.raises(LmmsEvalError, match=r"x_samples_t\.jsonl:2: not a samples record: key 'doc_id'"):
        list(read_samples(samples))


def test_writer_logs_a_results_dict_that_breaks_the_schema_and_still_writes_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    writer = OutputWriter(str(tmp_path), "m")
    with caplog.at_level(logging.ERROR, logger="lmms_eval.results.writer"):
        path = writer.write_results({"status": "running", "n-samples": {"t": {"original": "lots"}}})
    assert json.loads(Path(path).read_text())["n-samples"]["t"]["original"] == "lots"
    assert "does not match the results schema 2.2: key 'n-samples.t.original'" in caplog.text


# -- the JSON Schema file ---------------------------------------------------------------------------


def test_results_schema_file_is_current() -> None:
    """docs/results_schema.json is written by scripts/gen_results_schema.py; this fails when it is stale."""
    script = runpy.run_path(str(ROOT / "scripts" / "gen_results_schema.py"))
    committed = (ROOT / "docs" / "results_schema.json").read_text(encoding="utf-8")
    assert script["render"]() == committed, "run: python scripts/gen_results_schema.py"
    schema = json.loads(committed)
    assert schema["schema_version"] == SCHEMA_VERSION
    properties = schema["results_file"]["properties"]
    assert {"n-shot", "n-samples", "results", "config", "status"} <= set(properties)
    assert "metrics" not in schema["sample_record"]["properties"]
    assert "doc" in schema["sample_record"]["properties"]


def test_metric_rows_keep_each_key_with_its_own_metric() -> None:
    entry = {"alias": "t", "samples": 10, "acc,none": 0.5, "acc_stderr,none": 0.1, "acc_ci_lower,none": 0.3,
             "acc_ci_upper,none": 0.7, "acc_stderr_clustered,none": 0.2, "acc_norm,none": 0.4,
             "acc_norm_stderr,none": 0.1, "acc_norm_diff,none": 0.05, "acc,strict": 1.0, "acc_stderr,strict": 0.0}  # fmt: skip
    rows = ResultsFile.from_dict({"results": {"t": entry}}).results["t"].metrics()
    assert [(r.key, r.value, r.stderr, r.related) for r in rows] == [
        ("acc,none", 0.5, 0.1, {"_stderr_clustered": 0.2}),
        ("acc_norm,none", 0.4, 0.1, {"_diff": 0.05}),
        ("acc,strict", 1.0, 0.0, {}),
    ]
    assert (rows[0].ci_lower, rows[0].ci_upper, rows[1].ci_lower) == (0.3, 0.7, None)
    task = ResultsFile.from_dict({"results": {"t": entry}}).results["t"]
    assert task.get("alias") == "t" and task.get("acc,none") == 0.5 and task.get("failed", 0) == 0
    assert task.as_dict() == entry
