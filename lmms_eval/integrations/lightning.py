"""``LmmsEvalCallback`` for Lightning: the LightningModule's Hugging Face model (its ``model``
attribute, or ``hf_attribute``) is exported with ``save_pretrained`` to ``<export_dir>/step-N`` and
evaluated on the eval server while training goes on; the results are logged through every logger of
the Lightning ``Trainer`` (``logger.log_metrics(metrics, step=N)``) at the step of the export::

    trainer = lightning.Trainer(max_steps=10_000, logger=WandbLogger(...),
                                callbacks=[LmmsEvalCallback(URL, ["mme"], every_n_steps=1000)])

With ``every_n_steps`` the export happens every that many optimizer steps; without it, at each
Lightning checkpoint save. ``export_dir`` (default ``<default_root_dir>/lmms_eval_checkpoints``)
must lie under the server's ``checkpoint_root``. Needs ``pip install 'lmms_eval[lightning]'``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

try:
    from lightning.pytorch import Callback
except ImportError:
    raise ImportError(
        "lmms_eval.integrations.lightning needs Lightning: pip install 'lmms_eval[lightning]'"
    ) from None

from lmms_eval.integrations.evaluator import StepResult, TrainingEvaluator

logger = logging.getLogger(__name__)


class LmmsEvalCallback(Callback):
    """A Lightning ``Callback`` over :class:`~lmms_eval.integrations.evaluator.TrainingEvaluator`
    (same arguments, plus where and what to export)."""

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
        export_dir: str | Path | None = None,
        hf_attribute: str = "model",
        finish_timeout: float | None = 600.0,
        **options: Any,
    ) -> None:
        super().__init__()
        self.evaluator = TrainingEvaluator(
            server_url, tasks, every_n_steps, model_args, limit, token, model, processor, **options
        )
        self.export_dir = Path(export_dir) if export_dir is not None else None
        self.hf_attribute = hf_attribute
        self.finish_timeout = finish_timeout
        self._trainer: Any = None
        self._exported: set[int] = set()
        self.evaluator.log_fn = self._log

    def _log(self, metrics: dict[str, float], step: int) -> None:
        for each in self._trainer.loggers if self._trainer is not None else []:
            each.log_metrics(dict(metrics), step=step)

    def _export(self, trainer: Any, pl_module: Any) -> None:
        step = int(trainer.global_step)
        if step in self._exported or not self.evaluator.wants(step):
            return
        self._exported.add(step)
        hf_model = getattr(pl_module, self.hf_attribute, None)
        if hf_model is None or not hasattr(hf_model, "save_pretrained"):
            logger.error(
                "lmms-eval: %s has no Hugging Face model in '%s' (set hf_attribute=); step %d not evaluated",
                type(pl_module).__name__,
                self.hf_attribute,
                step,
            )
            return
        root = self.export_dir or Path(trainer.default_root_dir) / "lmms_eval_checkpoints"
        folder = root / f"step-{step}"
        hf_model.save_pretrained(str(folder))
        self.evaluator.on_save(step, folder)

    def setup(self, trainer: Any, pl_module: Any, stage: str) -> None:
        self._trainer = trainer

    def on_train_batch_end(self, trainer: Any, pl_module: Any, *args: Any, **kwargs: Any) -> None:
        if not trainer.is_global_zero:
            return
        if self.evaluator.every_n_steps is not None and trainer.global_step > 0:
            self._export(trainer, pl_module)
        self.evaluator.poll()

    def on_save_checkpoint(self, trainer: Any, pl_module: Any, checkpoint: dict[str, Any]) -> None:
        if trainer.is_global_zero and self.evaluator.every_n_steps is None:
            self._export(trainer, pl_module)

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        if trainer.is_global_zero:
            self.evaluator.finish(self.finish_timeout)

    @property
    def results(self) -> dict[int, StepResult]:
        """Each evaluated step's outcome so far."""
        return self.evaluator.results
