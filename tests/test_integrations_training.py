"""Evaluation during training, end to end: a tiny Qwen2-VL model trained four steps on CPU with
``transformers.Trainer`` (checkpoints at steps 2 and 4, saved without their processor), each
checkpoint evaluated on ``demo_shapes`` by a real eval server (uvicorn on 127.0.0.1), the results
logged at steps 2 and 4 through the Trainer: in ``state.log_history`` and in its offline W&B run."""

from __future__ import annotations

import importlib.util
import logging
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HAS_HF = all(importlib.util.find_spec(n) for n in ("torch", "transformers", "safetensors"))
pytestmark = pytest.mark.skipif(not HAS_HF, reason="training needs the hf extra (torch, transformers)")
pytest.importorskip("uvicorn")

from test_training_jobs import serve  # noqa: E402

from lmms_eval.demo import TINY_VLM_DIR  # noqa: E402
from lmms_eval.integrations.evaluator import TrainingEvaluator, metrics_of  # noqa: E402

STEPS = (2, 4)
TASK = "demo_shapes"


def tiny_dataset(tokenizer: Any, n: int = 8) -> list[dict[str, Any]]:
    texts = [f"a red square and {i} blue circles" for i in range(n)]
    batch = tokenizer(texts, padding="max_length", max_length=12, truncation=True, return_tensors="pt")
    return [
        {"input_ids": ids, "attention_mask": mask, "labels": ids.clone()}
        for ids, mask in zip(batch["input_ids"], batch["attention_mask"], strict=True)
    ]


def wandb_env(mp: pytest.MonkeyPatch, home: Path) -> None:
    for name, sub in [("WANDB_DIR", "runs"), ("WANDB_DATA_DIR", "data"), ("WANDB_CACHE_DIR", "cache"),
                      ("WANDB_CONFIG_DIR", "config"), ("WANDB_ARTIFACT_DIR", "artifacts")]:  # fmt: skip
        (home / sub).mkdir(parents=True)
        mp.setenv(name, str(home / sub))
    mp.setenv("WANDB_MODE", "offline")
    mp.setenv("WANDB_SILENT", "true")
    mp.delenv("WANDB_API_KEY", raising=False)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One training run (four steps, checkpoints at 2 and 4) evaluated by a real server."""
    import transformers
    import wandb

    root = tmp_path_factory.mktemp("training")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LMMS_EVAL_HOME", str(root / "home"))
        mp.delenv("LMMS_EVAL_SERVER_TOKEN", raising=False)
        wandb_env(mp, root / "wandb")
        wandb.teardown()
        from lmms_eval.integrations.transformers import LmmsEvalCallback
        from lmms_eval.models.hf.compat import load_processor  # the model's whole processor

        processor = load_processor(str(TINY_VLM_DIR))
        model = transformers.AutoModelForImageTextToText.from_pretrained(str(TINY_VLM_DIR))
        args = transformers.TrainingArguments(
            output_dir=str(root / "checkpoints" / "tiny-run"), max_steps=4, save_steps=2,
            per_device_train_batch_size=2, logging_steps=1, learning_rate=1e-4, report_to=["wandb"],
            run_name="tiny-run", use_cpu=True, save_only_model=True, disable_tqdm=True,
        )  # fmt: skip
        for url in serve(root, checkpoint_root=str(root / "checkpoints")):
            trainer = transformers.Trainer(
                model=model,
                args=args,
                train_dataset=tiny_dataset(processor.tokenizer),  # type: ignore[arg-type]
            )
            callback = LmmsEvalCallback(url, [TASK], limit=2, processor=processor, poll_interval=0.2)
            callback.attach(trainer)
            trainer.train()
            run_folder = Path(wandb.run.dir).parent if wandb.run is not None else None
            wandb.finish()
            yield {"trainer": trainer, "callback": callback, "wandb": run_folder, "root": root}
        wandb.teardown()


def test_results_land_in_log_history_at_the_checkpoint_steps(trained: dict[str, Any]) -> None:
    callback, trainer = trained["callback"], trained["trainer"]
    assert {s: r.status for s, r in callback.results.items()} == {2: "completed", 4: "completed"}
    evals = [e for e in trainer.state.log_history if any(k.startswith("eval/") for k in e)]
    assert sorted(e["step"] for e in evals) == list(STEPS)
    for entry in evals:
        value, stderr = entry[f"eval/{TASK}/accuracy"], entry[f"eval/{TASK}/accuracy_stderr"]
        assert 0.0 <= value <= 1.0 and stderr >= 0.0
    # the jobs evaluated the Trainer's own checkpoint folders, processor files written beside them
    for step in STEPS:
        folder = Path(trainer.args.output_dir) / f"checkpoint-{step}"
        assert callback.results[step].checkpoint == str(folder.absolute())
        assert (folder / "tokenizer_config.json").is_file()


def test_the_server_lists_the_jobs_of_the_training_run(trained: dict[str, Any]) -> None:
    results = trained["callback"].results
    jobs = {r.job_id for r in results.values()}
    assert None not in jobs and len(jobs) == 2
    metrics = [r.metrics for r in (results[2], results[4])]
    assert all(f"eval/{TASK}/accuracy" in m for m in metrics)


def test_results_reach_the_trainers_own_wandb_run_at_the_checkpoint_steps(trained: dict[str, Any]) -> None:
    from test_wandb_logger import read_offline_run

    assert trained["wandb"] is not None, "the Trainer started no W&B run"
    run = read_offline_run(trained["wandb"])
    assert run.run.display_name == "tiny-run"  # the Trainer's run, not another
    rows = [h for h in run.history if any(k.startswith("train/eval/") for k in _flat(h))]
    steps = sorted(_flat(h)["train/global_step"] for h in rows)
    assert steps == list(STEPS)
    for row in rows:
        assert f"train/eval/{TASK}/accuracy_stderr" in _flat(row)
    assert any("train/loss" in _flat(h) for h in run.history)  # training's own logs, same run


def _flat(entry: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in entry.items():
        if isinstance(value, dict) and not key.startswith("_"):
            out.update(_flat(value, f"{prefix}{key}/"))
        else:
            out[f"{prefix}{key}"] = value
    return out


def test_a_checkpoint_without_processor_files_fails_in_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "run" / "checkpoint-3"
    folder.mkdir(parents=True)
    for name in ("config.json", "model.safetensors"):
        shutil.copy(TINY_VLM_DIR / name, folder / name)
    evaluator = TrainingEvaluator("http://127.0.0.1:9", [TASK])  # never reached
    with caplog.at_level(logging.ERROR, logger="lmms_eval.integrations"):
        assert evaluator.on_save(3, folder) is False
    result = evaluator.finish(timeout=1)[3]
    assert result.status == "not submitted" and result.job_id is None
    assert "no tokenizer or processor files" in str(result.error) and "pass processor=" in str(result.error)
    assert "\n" not in str(result.error) and "checkpoint-3" in caplog.text


def test_steps_off_the_schedule_are_skipped_and_an_unreachable_server_is_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "run" / "checkpoint-4"
    shutil.copytree(TINY_VLM_DIR, folder)
    seen: list[tuple[dict[str, float], int]] = []
    evaluator = TrainingEvaluator(
        "http://127.0.0.1:9", [TASK], every_n_steps=4, log_fn=lambda m, s: seen.append((m, s))
    )
    assert evaluator.on_save(2, folder) is False  # not a multiple of 4: nothing queued
    with caplog.at_level(logging.ERROR, logger="lmms_eval.integrations"):
        assert evaluator.on_save(4, folder) is True  # queued; the submission fails in the background
        results = evaluator.finish(timeout=30)
    assert list(results) == [4] and results[4].status == "not submitted"
    assert "cannot reach the eval server" in str(results[4].error) and seen == []
    assert evaluator.training_run == "run"


def test_metrics_of_names_metric_and_stderr_per_task() -> None:
    result = {
        "results": {
            "t": {"acc,none": 0.5, "acc_stderr,none": 0.1, "em,strict": 1.0, "em_stderr,strict": "N/A"}
        }
    }
    assert metrics_of(result) == {"eval/t/acc": 0.5, "eval/t/acc_stderr": 0.1, "eval/t/em.strict": 1.0}


def test_lightning_callback_logs_through_the_trainers_loggers_at_the_export_steps(tmp_path: Path) -> None:
    if importlib.util.find_spec("lightning") is None:
        pytest.skip("Lightning is not installed (pip install 'lmms_eval[lightning]')")
    import csv

    import lightning
    import torch
    import transformers
    from lightning.pytorch.loggers import CSVLogger

    from lmms_eval.integrations.lightning import LmmsEvalCallback
    from lmms_eval.models.hf.compat import load_processor

    processor = load_processor(str(TINY_VLM_DIR))

    class Tiny(lightning.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.model = transformers.AutoModelForImageTextToText.from_pretrained(str(TINY_VLM_DIR))

        def training_step(self, batch: dict[str, Any], _index: int) -> Any:
            return self.model(**batch).loss

        def configure_optimizers(self) -> Any:
            return torch.optim.SGD(self.parameters(), lr=1e-4)

    rows = tiny_dataset(processor.tokenizer)
    callback: Any = None
    loader = torch.utils.data.DataLoader(rows, batch_size=2)  # type: ignore[arg-type]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LMMS_EVAL_HOME", str(tmp_path / "home"))
        mp.delenv("LMMS_EVAL_SERVER_TOKEN", raising=False)
        for url in serve(tmp_path, checkpoint_root=str(tmp_path / "runs")):
            callback = LmmsEvalCallback(
                url, [TASK], every_n_steps=2, limit=2, processor=processor, poll_interval=0.2,
                export_dir=tmp_path / "runs" / "lit",
            )  # fmt: skip
            trainer = lightning.Trainer(
                max_steps=4, accelerator="cpu", logger=CSVLogger(str(tmp_path / "logs"), name="lit"),
                callbacks=[callback], enable_checkpointing=False, enable_progress_bar=False,
                enable_model_summary=False, log_every_n_steps=1,
            )  # fmt: skip
            trainer.fit(Tiny(), loader)
    assert {s: r.status for s, r in callback.results.items()} == {2: "completed", 4: "completed"}
    (metrics_file,) = (tmp_path / "logs").rglob("metrics.csv")
    with metrics_file.open(encoding="utf-8") as f:
        logged = [r for r in csv.DictReader(f) if r.get(f"eval/{TASK}/accuracy")]
    assert sorted(int(r["step"]) for r in logged) == list(STEPS)
    assert all(r[f"eval/{TASK}/accuracy_stderr"] != "" for r in logged)


def test_the_callback_examples_of_the_service_guide_name_real_arguments() -> None:
    """The ``py`` blocks of docs/service.md (a Trainer and a Lightning run, not run here: the
    tests above train for real) compile, import what exists and pass only arguments the callbacks
    take (their own, or run options of the server's requests)."""
    import ast
    import importlib
    import inspect
    import re

    from lmms_eval.entrypoints.protocol import EvaluateRequest

    guide = (Path(__file__).resolve().parents[1] / "docs" / "service.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```py\n(.*?)^```", guide, re.M | re.S)
    assert len(blocks) == 2
    for block in blocks:
        tree = ast.parse(block)
        imported = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("lmms_eval"):
                module = importlib.import_module(node.module)
                imported.update({a.name: getattr(module, a.name) for a in node.names})
        callback = imported["LmmsEvalCallback"]
        params = set(inspect.signature(callback).parameters) | set(EvaluateRequest.model_fields)
        calls = [
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "LmmsEvalCallback"
        ]
        assert calls and all(k.arg in params for c in calls for k in c.keywords)
