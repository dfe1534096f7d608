"""Evaluation during training over the eval server: :class:`TrainingEvaluator`.

Framework-neutral: a plain loop calls :meth:`TrainingEvaluator.on_save` after it saved a Hugging
Face checkpoint folder, :meth:`~TrainingEvaluator.poll` now and then, and
:meth:`~TrainingEvaluator.finish` at the end. The callbacks of :mod:`lmms_eval.integrations.transformers`
and :mod:`lmms_eval.integrations.lightning` are thin layers over it.

``on_save`` never waits for the server: it checks the folder (and writes the processor files beside
it when it was given ``processor=``), then hands the submission to one background thread, which
submits (``pretrained=<the checkpoint folder>``, with ``training_run`` and ``step``), merges a
sharded checkpoint first through the server's ``/merge``, and polls the jobs. Results are handed
to ``log_fn(metrics, step)`` on the caller's thread, at the next ``on_save``, ``poll`` or
``finish``, at the step the checkpoint was taken: ``eval/<task>/<metric>`` and
``eval/<task>/<metric>_stderr``. A job that fails, or a server that cannot be reached, is logged
(one line), never raised into training.
"""

from __future__ import annotations

import logging
import math
import queue
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lmms_eval.entrypoints.client import EvalClient
from lmms_eval.errors import LmmsEvalError
from lmms_eval.results.schema import ResultsFile

logger = logging.getLogger(__name__)

LogFn = Callable[[dict[str, float], int], None]
TERMINAL = ("completed", "failed", "cancelled")
WEIGHT_PATTERNS = ("*.safetensors", "pytorch_model*.bin")
PROCESSOR_FILES = (
    "tokenizer_config.json",
    "tokenizer.json",
    "preprocessor_config.json",
    "processor_config.json",
)
SHARDED_MARKERS = (".metadata", "pytorch_model_fsdp_0")  # torch.distributed.checkpoint, FSDP folders


class CheckpointError(LmmsEvalError):
    """A checkpoint folder the server cannot evaluate as it is (the message says what is missing)."""


@dataclass
class StepResult:
    """What became of the evaluation of one checkpoint."""

    step: int
    checkpoint: str
    status: str  # completed | failed | cancelled | not submitted | timed out
    job_id: str | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    error: str | None = None


def metrics_of(result: Mapping[str, Any] | None) -> dict[str, float]:
    """``eval/<task>/<metric>`` and ``eval/<task>/<metric>_stderr`` of a results document (a metric
    of a filter other than ``none`` is named ``<metric>.<filter>``); only finite numbers."""
    if not result:
        return {}
    metrics: dict[str, float] = {}
    for task, entry in ResultsFile.from_dict(result, "job result").tasks():
        for row in entry.metrics():
            name = row.metric if row.filter in ("none", "") else f"{row.metric}.{row.filter}"
            for key, value in ((name, row.value), (f"{name}_stderr", row.stderr)):
                if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                    metrics[f"eval/{task}/{key}"] = float(value)
    return metrics


def _has(folder: Path, patterns: Sequence[str]) -> bool:
    return any(next(folder.glob(p), None) is not None for p in patterns)


def prepare_checkpoint(folder: Path, processor: Any = None) -> bool:
    """Check a saved checkpoint folder; True when it is sharded (to be merged by the server first).

    A folder without tokenizer or processor files gets them from ``processor`` (its
    ``save_pretrained``); without one, :class:`CheckpointError` says what is missing."""
    if not folder.is_dir():
        raise CheckpointError(f"{folder}: no such checkpoint folder")
    sharded = _has(folder, SHARDED_MARKERS) and not _has(folder, WEIGHT_PATTERNS)
    if not sharded and not (folder / "config.json").is_file():
        raise CheckpointError(f"{folder}: no config.json; save the model with save_pretrained")
    if not sharded and not _has(folder, WEIGHT_PATTERNS):
        raise CheckpointError(f"{folder}: no model weights (*.safetensors or pytorch_model*.bin)")
    if not _has(folder, PROCESSOR_FILES):
        if processor is None:
            raise CheckpointError(
                f"{folder}: no tokenizer or processor files ({', '.join(PROCESSOR_FILES)}); pass "
                "processor= (the model's processor or tokenizer) to write them beside each checkpoint"
            )
        processor.save_pretrained(str(folder))
    return sharded


class TrainingEvaluator:
    """Evaluates checkpoints on an eval server while training goes on (see the module docstring).

    ``every_n_steps``: evaluate the checkpoints of steps that are multiples of it (``None``: every
    checkpoint passed to :meth:`on_save`). ``model_args`` go with ``pretrained=<checkpoint>``;
    ``options`` are further run settings of the jobs (``batch_size``, ``num_gpus``...).
    ``training_run`` names the run in ``GET /jobs?training_run=`` (default: the name of the
    checkpoints' parent folder)."""

    def __init__(
        self,
        server_url: str,
        tasks: str | Sequence[str],
        every_n_steps: int | None = None,
        model_args: Mapping[str, Any] | str | None = None,
        limit: int | float | None = None,
        token: str | None = None,
        model: str = "huggingface",
        processor: Any = None,
        *,
        training_run: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        log_fn: LogFn | None = None,
        poll_interval: float = 2.0,
        **options: Any,
    ) -> None:
        if every_n_steps is not None and every_n_steps < 1:
            raise LmmsEvalError(f"every_n_steps must be 1 or more, got {every_n_steps}")
        self.tasks = [tasks] if isinstance(tasks, str) else list(tasks)
        self.every_n_steps = every_n_steps
        self.model = model
        self.model_args = model_args
        self.limit = limit
        self.processor = processor
        self.training_run = training_run
        self.metadata = dict(metadata) if metadata else None
        self.log_fn = log_fn
        self.poll_interval = poll_interval
        self.options = options
        self.results: dict[int, StepResult] = {}
        self._client = EvalClient(server_url, token=token)
        self._submit: queue.Queue[tuple[int, Path, bool]] = queue.Queue()
        self._done: queue.Queue[StepResult] = queue.Queue()
        self._pending: dict[str, StepResult] = {}
        self._closing = threading.Event()
        self._thread: threading.Thread | None = None

    # -- the training thread -----------------------------------------------------------------------

    def wants(self, step: int) -> bool:
        """Whether the checkpoint of ``step`` is evaluated."""
        return self.every_n_steps is None or step % self.every_n_steps == 0

    def on_save(self, step: int, checkpoint_dir: str | Path) -> bool:
        """Queue the evaluation of the checkpoint just saved at ``step`` (returns at once); False
        when the step is skipped or the folder cannot be evaluated (logged, one line)."""
        self.poll()
        if not self.wants(step):
            return False
        folder = Path(checkpoint_dir).absolute()
        if self.training_run is None:
            self.training_run = folder.parent.name or "training"
        try:
            sharded = prepare_checkpoint(folder, self.processor)
        except (CheckpointError, OSError) as exc:
            self._deliver(StepResult(step, str(folder), "not submitted", error=str(exc)))
            return False
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name="lmms-eval-training", daemon=True)
            self._thread.start()
        self._submit.put((step, folder, sharded))
        return True

    def poll(self) -> list[StepResult]:
        """Hand the results that arrived to ``log_fn`` (on this thread); returns them."""
        arrived: list[StepResult] = []
        while True:
            try:
                arrived.append(self._done.get_nowait())
            except queue.Empty:
                return [self._deliver(r) for r in arrived]

    def finish(self, timeout: float | None = 600.0) -> dict[int, StepResult]:
        """Wait (at most ``timeout`` seconds) for the jobs submitted, hand their results to ``log_fn``
        and stop; jobs still running then are logged (they go on on the server). Returns every
        step's result."""
        self._closing.set()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                waiting = sorted(r.step for r in self._pending.values()) or "not yet submitted"
                logger.warning(
                    "lmms-eval: stopped waiting after %ss for the evaluation of step(s) %s; see "
                    "GET /jobs?training_run=%s on the eval server",
                    timeout,
                    waiting,
                    self.training_run,
                )
        self.poll()
        if self._thread is None or not self._thread.is_alive():
            self._client.close()
        return dict(sorted(self.results.items()))

    def _deliver(self, result: StepResult) -> StepResult:
        self.results[result.step] = result
        if result.status == "completed":
            if self.log_fn is not None and result.metrics:
                try:
                    self.log_fn(dict(result.metrics), result.step)
                except Exception:  # a logger's failure is not training's
                    logger.exception("lmms-eval: log_fn failed for step %d", result.step)
            logger.info("lmms-eval: step %d evaluated (%d metrics)", result.step, len(result.metrics))
        else:
            logger.error("lmms-eval: evaluation of step %d %s: %s", result.step, result.status, result.error)
        return result

    # -- the background thread ---------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            try:
                item = self._submit.get(timeout=self.poll_interval if self._pending else 0.2)
            except queue.Empty:
                item = None
            if item is not None:
                self._start(*item)
                continue  # every queued submission first
            self._check_pending()
            if self._closing.is_set() and self._submit.empty() and not self._pending:
                return

    def _model_args(self, checkpoint: str) -> dict[str, Any] | str:
        if isinstance(self.model_args, str):
            return ",".join(p for p in (self.model_args, f"pretrained={checkpoint}") if p)
        return {**(self.model_args or {}), "pretrained": checkpoint}

    def _start(self, step: int, folder: Path, sharded: bool) -> None:
        result = StepResult(step, str(folder), "failed")
        try:
            checkpoint = str(folder)
            if sharded:
                merged = self._client.merge(folder, f"merged/{self.training_run}/step-{step}")
                checkpoint = str(merged["output_path"])
            job = self._client.evaluate(
                self.model,
                self.tasks,
                self._model_args(checkpoint),
                training_run=self.training_run,
                step=step,
                metadata=self.metadata,
                limit=self.limit,
                **self.options,
            )
        except LmmsEvalError as exc:
            result.status, result.error = "not submitted", str(exc)
            self._done.put(result)
            return
        result.job_id = str(job["job_id"])
        self._pending[result.job_id] = result

    def _check_pending(self) -> None:
        for job_id, result in list(self._pending.items()):
            try:
                job = self._client.get_job(job_id)
            except LmmsEvalError as exc:
                logger.warning("lmms-eval: cannot poll job %s (step %d): %s", job_id, result.step, exc)
                continue
            status = str(job.get("status"))
            if status not in TERMINAL:
                continue
            del self._pending[job_id]
            result.status = status
            if status == "completed":
                try:
                    result.metrics = metrics_of(job.get("result"))
                except LmmsEvalError as exc:
                    result.status, result.error = "failed", str(exc)
            else:
                lines = str(job.get("error") or status).strip().splitlines()
                result.error = lines[-1] if lines else status
            self._done.put(result)
