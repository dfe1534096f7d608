"""W&B logging of a finished run, checked by reading the offline run's files back.

A real evaluation (dummy model, demo_qa, 8 docs) is logged with ``mode=offline`` into tmp_path, then
the run's ``.wandb`` transaction log is decoded record by record (W&B's length-prefixed, CRC-checked
block format holding ``wandb_internal_pb2.Record`` messages) and its config, summary, tables and
artifacts are compared with the results and samples files. W&B 0.31 ships no Python reader of
that file, hence the small one below.
"""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import logging
import re
import struct
import subprocess
import sys
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import wandb  # in the 'dev' extra: these tests run in CI, never skipped
from wandb.proto import wandb_internal_pb2

from lmms_eval.errors import ConfigError
from lmms_eval.evaluator import simple_evaluate
from lmms_eval.loggers.wandb_logger import (
    RESULTS_COLUMNS,
    check_wandb_args,
    log_to_wandb,
    samples_from_files,
)
from lmms_eval.models.chat.dummy import DummyChat

SECRET = "sk-test-secret-123"
ROOT = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------------------------
# reading an offline run back
# --------------------------------------------------------------------------------------------

BLOCK = 32 * 1024
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


def read_records(path: Path) -> Iterator[Any]:
    """The ``Record`` messages of a ``.wandb`` file (header ``:W&B``, 0xBEE1, version; then 32 KiB
    blocks of chunks ``crc32(type + data) | length | type | data``)."""
    data = path.read_bytes()
    ident, magic, _version = struct.unpack("<4sHB", data[:7])
    assert (ident, magic) == (b":W&B", 0xBEE1), f"{path} is not a W&B transaction log"
    pos, parts = 7, []
    while pos + 7 <= len(data):
        left = BLOCK - pos % BLOCK
        if left < 7:  # the rest of a block too short for a chunk header is padding
            pos += left
            continue
        crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        if kind == 0:  # zero padding at the end of a block
            pos += left
            continue
        chunk = data[pos + 7 : pos + 7 + length]
        assert zlib.crc32(bytes([kind]) + chunk) & 0xFFFFFFFF == crc, f"bad checksum at byte {pos} of {path}"
        pos += 7 + length
        parts.append(chunk)
        if kind in (FULL, LAST):
            record = wandb_internal_pb2.Record()  # pyright: ignore[reportAttributeAccessIssue]  (generated, no stubs)
            record.ParseFromString(b"".join(parts))
            parts = []
            yield record


def _apply(target: dict[str, Any], item: Any) -> None:
    keys = list(item.nested_key) or [item.key]
    for key in keys[:-1]:
        target = target.setdefault(key, {})
    target[keys[-1]] = json.loads(item.value_json)


@dataclasses.dataclass
class OfflineRun:
    folder: Path
    run: Any = None
    config: dict[str, Any] = dataclasses.field(default_factory=dict)
    summary: dict[str, Any] = dataclasses.field(default_factory=dict)
    history: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    artifacts: list[Any] = dataclasses.field(default_factory=list)

    def table(self, key: str) -> dict[str, Any]:
        """A logged table's history entry and its rows (read from the run's files)."""
        entry = next(h[key] for h in self.history if key in h)
        rows = json.loads((self.folder / "files" / entry["path"]).read_text(encoding="utf-8"))
        return {**entry, **rows}


def _finished_records(log: Path, timeout: float = 10.0) -> list[Any]:
    """The records of a finished run. ``run.finish()`` returns before W&B's service has flushed
    the file, so it is read until it ends with the run's ``exit`` record."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            records = list(read_records(log))
        except (AssertionError, struct.error):  # an empty file, or a chunk written halfway
            records = []
        if any(r.WhichOneof("record_type") == "exit" for r in records):
            return records
        assert time.monotonic() < deadline, f"{log} has no exit record after {timeout} s"
        time.sleep(0.02)


def read_offline_run(folder: Path) -> OfflineRun:
    (log,) = folder.glob("run-*.wandb")
    out = OfflineRun(folder)
    for record in _finished_records(log):
        kind = record.WhichOneof("record_type")
        if kind == "run":
            out.run = record.run
            for item in record.run.config.update:
                _apply(out.config, item)
        elif kind == "config":
            for item in record.config.update:
                _apply(out.config, item)
        elif kind == "summary":
            for item in record.summary.update:
                _apply(out.summary, item)
        elif kind == "history":
            step: dict[str, Any] = {}
            for item in record.history.item:
                _apply(step, item)
            out.history.append(step)
        elif kind == "artifact":
            out.artifacts.append(record.artifact)
    return out


# --------------------------------------------------------------------------------------------
# fixtures
# --------------------------------------------------------------------------------------------


@pytest.fixture
def wandb_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every W&B folder (runs, staged artifacts, cache, settings) under tmp_path; offline.

    W&B reads its environment once per process (``wandb.setup``): it is torn down after each test,
    so the next one starts from its own environment and no W&B service outlives the tests."""
    home = tmp_path / "wandb_home"
    for name, sub in [
        ("WANDB_DIR", "runs"),
        ("WANDB_DATA_DIR", "data"),
        ("WANDB_CACHE_DIR", "cache"),
        ("WANDB_CONFIG_DIR", "config"),
        ("WANDB_ARTIFACT_DIR", "artifacts"),
    ]:
        (home / sub).mkdir(parents=True)
        monkeypatch.setenv(name, str(home / sub))
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    wandb.teardown()
    yield home
    wandb.teardown()


def _evaluate(tmp_path: Path, task: str, limit: int) -> dict[str, Any]:
    model = DummyChat(answer_field="answer", accuracy=0.5, wrong_response=f"leaked {SECRET}")
    return simple_evaluate(
        model=model,
        model_args=f"api_key={SECRET}",
        tasks=[task],
        limit=limit,
        output_path=str(tmp_path / "out"),
        log_samples=True,
        bootstrap_iters=0,
        show_progress=False,
    )


def _files_holding(root: Path, text: str) -> list[str]:
    needle = text.encode()
    return [str(p) for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


# --------------------------------------------------------------------------------------------
# tests
# --------------------------------------------------------------------------------------------


def test_offline_run_holds_the_results_file(
    tmp_path: Path, wandb_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = _evaluate(tmp_path, "demo_qa", 8)
    saved = json.loads(Path(results["output_files"]["results"]).read_text(encoding="utf-8"))
    samples_path = Path(results["output_files"]["samples"]["demo_qa"])
    sample_lines = [json.loads(line) for line in samples_path.read_text(encoding="utf-8").splitlines()]
    monkeypatch.setattr(sys, "argv", ["lmms-eval", "--model_args", f"api_key={SECRET}"])  # W&B records argv

    location = log_to_wandb(
        saved, samples_from_files(saved), "project=lmms-test,tags=ci,notes=offline test", "model_outputs"
    )

    assert location is not None and Path(location).parent.parent == wandb_home / "runs"
    run = read_offline_run(Path(location))
    assert run.run.project == "lmms-test" and list(run.run.tags) == ["ci"]
    assert run.run.display_name == "DummyChat_model_outputs"  # <model_name_sanitized>_<suffix>

    # the config: the run settings of the results file, redacted, and the run description
    for key, value in saved["config"].items():
        assert run.config[key] == value, key
    assert run.config["model_args"] == "api_key=[REDACTED]"
    for key in ("model_name", "versions", "n-shot", "n-samples", "lmms_eval_version", "date"):
        assert run.config[key] == saved[key], key
    assert run.config["task_configs"]["demo_qa"]["task"] == "demo_qa"

    # the summary: every number of the task's scores, stderr and CI bounds included
    scores = saved["results"]["demo_qa"]
    for key in ("exact_match,none", "exact_match_stderr,none", "exact_match_ci_lower,none", "samples"):
        assert run.summary[f"demo_qa/{key}"] == scores[key], key
    assert scores["exact_match_stderr,none"] > 0  # the dummy model is right on about half the docs

    table = run.table("evaluation/results")
    assert table["columns"] == RESULTS_COLUMNS
    assert table["data"] == [
        [
            "demo_qa",
            "1.0",
            "none",
            0,
            "exact_match",
            scores["exact_match,none"],
            scores["exact_match_stderr,none"],
            scores["exact_match_ci_lower,none"],
            scores["exact_match_ci_upper,none"],
        ]
    ]

    samples = run.table("demo_qa/model_outputs")
    assert samples["nrows"] == len(sample_lines) == 8
    columns = samples["columns"]
    assert columns == [
        "doc_id",
        "filter",
        "input",
        "target",
        "filtered_resps",
        "exact_match",
        "failed",
        "error",
    ]
    for row, line in zip(samples["data"], sample_lines):
        cells = dict(zip(columns, row))
        assert cells["doc_id"] == line["doc_id"] and cells["target"] == line["target"]
        assert cells["input"] == line["input"] and cells["exact_match"] == line["exact_match"]
        assert cells["filtered_resps"] == line["filtered_resps"][0] and cells["failed"] is False
    assert {a.type for a in run.artifacts} == {"run_table"}

    assert _files_holding(tmp_path, SECRET) == []  # run folder, staged artifacts, results files
    assert "[REDACTED]" in json.dumps(samples["data"])  # the wrong answers held the secret


def test_image_task_puts_the_images_in_the_samples_table(tmp_path: Path, wandb_home: Path) -> None:
    from lmms_eval.tasks.demo_shapes.utils import doc_to_visual

    results = _evaluate(tmp_path, "demo_shapes", 3)
    lines = (ROOT / "lmms_eval/tasks/demo_shapes/demo_shapes.jsonl").read_text(encoding="utf-8").splitlines()
    docs = [json.loads(line) for line in lines]
    asked: list[tuple[str, int]] = []

    def images_of(task: str, doc_id: int) -> list[Any]:
        asked.append((task, doc_id))
        return doc_to_visual(docs[doc_id])

    location = log_to_wandb(results, samples_from_files(results), "project=lmms-test", images_of=images_of)
    assert location is not None
    assert sorted(asked) == [("demo_shapes", 0), ("demo_shapes", 1), ("demo_shapes", 2)]
    run = read_offline_run(Path(location))
    samples = run.table("demo_shapes/model_outputs")
    assert samples["nrows"] == 3 and samples["columns"][-1] == "image"
    assert "accuracy" in samples["columns"] and "colour_accuracy" in samples["columns"]
    # the table's images travel in its artifact
    (artifact,) = [a for a in run.artifacts if "demo_shapes" in a.name]
    images = [e.path for e in artifact.manifest.contents if e.path.endswith(".png")]
    assert len(images) == 3
    # skill metrics are None for documents of other skills: no NaN reaches the summary
    scores = {k: v for k, v in run.summary.items() if k.startswith("demo_shapes/") and "," in k}
    assert "demo_shapes/colour_accuracy,none" in scores
    assert all(isinstance(v, (int, float)) for v in scores.values())


def test_input_media_data_uris_become_images(tmp_path: Path, wandb_home: Path) -> None:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (4, 4), "red").save(buffer, format="PNG")
    uri = "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()
    results = {"model_name_sanitized": "m", "results": {"t": {"acc,none": 1.0, "acc_stderr,none": 0.0}}}
    records = [
        {
            "doc_id": 0,
            "input": "q",
            "target": "a",
            "filtered_resps": ["a"],
            "acc": 1.0,
            "input_media": [uri, uri],
        },
        {"doc_id": 1, "failed": True, "errors": ["timeout"], "filter": None},
    ]
    location = log_to_wandb(results, {"t": records}, "project=lmms-test", log_samples_suffix="outs")
    assert location is not None
    table = read_offline_run(Path(location)).table("t/outs")
    assert table["columns"][-2:] == ["image_1", "image_2"]
    failed = dict(zip(table["columns"], table["data"][1]))
    assert failed["failed"] is True and failed["error"] == "timeout" and failed["acc"] is None


def test_unknown_key_is_one_config_error_naming_the_valid_ones() -> None:
    with pytest.raises(ConfigError) as info:
        check_wandb_args("projct=x")
    message = str(info.value)
    assert "\n" not in message
    assert "--wandb_args: unknown key 'projct'. Did you mean 'project'?" in message
    assert "entity" in message and "job_type" in message  # the valid keys are listed
    with pytest.raises(ConfigError, match=r"mode='cloud' is not one of online, offline, disabled"):
        check_wandb_args("mode=cloud")
    with pytest.raises(ConfigError, match=r"'config' is set by lmms-eval"):
        check_wandb_args("config=x")
    parsed = check_wandb_args('project=p,tags=["a","b"],name=2024,settings={"init_timeout": 5}')
    assert parsed == {"project": "p", "tags": ["a", "b"], "name": "2024", "settings": {"init_timeout": 5}}


def test_a_wandb_failure_is_one_error_line_and_no_secret(
    wandb_home: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from lmms_eval.secrets import register_secret

    register_secret(SECRET)

    def broken_init(**kwargs: Any) -> Any:
        raise RuntimeError(f"server said no to key {SECRET}")

    results = {"results": {"t": {"acc,none": 0.5}}}
    with caplog.at_level(logging.ERROR, logger="lmms_eval"):
        assert log_to_wandb(results, None, "projct=p") is None
        monkeypatch.setattr(wandb, "init", broken_init)
        assert log_to_wandb(results, None, "project=p") is None
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 2
    assert "--wandb_args: unknown key 'projct'. Did you mean 'project'?" in errors[0]
    assert errors[1].startswith("W&B logging failed, the results files are not affected: RuntimeError")
    assert SECRET not in errors[1] and "[REDACTED]" in errors[1]


def test_an_active_run_is_logged_into_and_left_open(tmp_path: Path, wandb_home: Path) -> None:
    run = wandb.init(project="training", settings={"console": "off", "silent": True})
    try:
        results = {"model_name": "m", "results": {"t": {"acc,none": 0.25, "acc_stderr,none": 0.1}}}
        location = log_to_wandb(results, None, "")
        assert wandb.run is run
    finally:
        run.finish()
    assert location is not None
    logged = read_offline_run(Path(location))
    assert logged.run.project == "training" and logged.summary["t/acc,none"] == 0.25
    assert logged.config["model_name"] == "m"


def test_disabled_mode_logs_nothing(tmp_path: Path, wandb_home: Path) -> None:
    results = {"model_name": "m", "results": {"t": {"acc,none": 0.25}}}
    assert log_to_wandb(results, {"t": [{"doc_id": 0, "acc": 1.0}]}, "mode=disabled") == ""
    assert list((wandb_home / "runs").rglob("*.wandb")) == []


def test_importing_the_package_and_the_loggers_imports_neither_wandb_nor_the_hub() -> None:
    code = (
        "import sys, contextlib, io\n"
        "import lmms_eval, lmms_eval.loggers.wandb_logger, lmms_eval.loggers.hf_hub\n"
        "from lmms_eval.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    main(['--help'])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('wandb', 'huggingface_hub')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


# --------------------------------------------------------------------------------------------
# docs/loggers.md: every command and snippet is run (the Hub ones in test_hf_hub_logger.py)
# --------------------------------------------------------------------------------------------

DOC = (ROOT / "docs" / "loggers.md").read_text(encoding="utf-8")


def doc_blocks() -> list[tuple[str, str]]:
    """``(language, text)`` of every fenced block of docs/loggers.md."""
    return [(m.group(1), m.group(2)) for m in re.finditer(r"```(\w*)\n(.*?)```", DOC, re.S)]


def _cli(command: str) -> list[str]:
    words = command.strip().split()
    while "=" in words[0]:  # leading VAR=value assignments
        words = words[1:]
    assert words[0] == "lmms-eval", command
    return words[1:]


def _doc_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The docs' run without the logger flags: writes out/dummy/*_results.json and samples."""
    from lmms_eval.cli import main

    monkeypatch.chdir(tmp_path)
    argv = _cli(doc_blocks()[0][1])
    cut = argv.index("--wandb_args")
    assert main([*argv[:cut], "--verbosity", "ERROR"]) == 0


def test_every_block_of_the_loggers_doc_is_run_by_a_test() -> None:
    blocks = doc_blocks()
    assert [lang for lang, _ in blocks] == ["bash", "python", "bash", "python"]
    assert "--wandb_args" in blocks[0][1] and "log_to_wandb" in blocks[1][1]  # run here
    assert "--hf_hub_log_args" in blocks[2][1] and "push_results_to_hub" in blocks[3][1]  # test_hf_hub_logger


def test_docs_wandb_command_logs_an_offline_run(
    tmp_path: Path, wandb_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lmms_eval.cli import main

    monkeypatch.chdir(tmp_path)
    assert main([*_cli(doc_blocks()[0][1]), "--verbosity", "ERROR"]) == 0
    (log,) = (wandb_home / "runs").rglob("run-*.wandb")
    run = read_offline_run(log.parent)
    assert run.run.project == "lmms-eval" and run.run.display_name == "dummy_model_outputs"
    assert run.table("demo_qa/model_outputs")["nrows"] == 8
    assert "demo_qa/exact_match,none" in run.summary


def test_docs_wandb_snippet_logs_an_earlier_run(
    tmp_path: Path,
    wandb_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _doc_run(monkeypatch, tmp_path)
    capsys.readouterr()
    namespace: dict[str, Any] = {}
    with caplog.at_level(logging.INFO, logger="lmms_eval"):
        exec(doc_blocks()[1][1], namespace)
    where = namespace["where"]
    assert capsys.readouterr().out.strip() == where
    assert f"upload the offline run with: wandb sync {where}" in caplog.messages  # as the doc says
    run = read_offline_run(Path(where))
    assert run.run.project == "lmms-eval" and run.run.display_name == "dummy_model_outputs"
    assert run.table("demo_qa/model_outputs")["nrows"] == 8
    assert run.run.job_type == "eval"


def test_a_bad_wandb_key_stops_the_run_before_it_starts(
    tmp_path: Path, wandb_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from lmms_eval.cli import main

    argv = ["--model", "dummy", "--tasks", "demo_qa", "--limit", "2", "--output_path", str(tmp_path / "o")]
    assert main([*argv, "--wandb_args", "projct=x", "--verbosity", "ERROR"]) == 1
    assert "--wandb_args: unknown key 'projct'. Did you mean 'project'?" in capsys.readouterr().err
    assert not list(tmp_path.rglob("*_results.json"))  # as the doc says: before the evaluation
