"""``LmmsEvalCallback`` for ``transformers.Trainer``: each checkpoint the Trainer saves
(``<output_dir>/checkpoint-N``, the folder itself, not a copy) is evaluated on the eval server while
training goes on, and the results are logged through the Trainer's own ``log`` at step N, so they
land in ``state.log_history`` and in whatever the Trainer reports to (W&B, TensorBoard...)::

    trainer = Trainer(model=model, args=TrainingArguments(output_dir=..., save_steps=500), ...)
    LmmsEvalCallback("http://gpu-box:8000", tasks=["mme"], limit=200).attach(trainer)
    trainer.train()

The Trainer's ``output_dir`` must lie under the server's ``checkpoint_root``. Results arrive at the
next step, save or log event after the job ends, and at the end of training (waiting at most
``finish_timeout`` seconds).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from transformers import TrainerCallback
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

from lmms_eval.integrations.evaluator import StepResult, TrainingEvaluator

logger = logging.getLogger(__name__)


class LmmsEvalCallback(TrainerCallback):
    """A ``TrainerCallback`` over :class:`~lmms_eval.integrations.evaluator.TrainingEvaluator`
    (same arguments). Bind it with :meth:`attach` so results go through ``Trainer.log``; added with
    ``callbacks=[...]`` alone it can only append them to ``state.log_history``."""

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
        finish_timeout: float | None = 600.0,
        **options: Any,
    ) -> None:
        self.evaluator = TrainingEvaluator(
            server_url, tasks, every_n_steps, model_args, limit, token, model, processor, **options
        )
        self.evaluator.log_fn = self._log
        self.finish_timeout = finish_timeout
        self.trainer: Any = None
        self._state: Any = None
        self._epochs: dict[int, float | None] = {}  # the epoch of each checkpoint's step
        self._warned = False

    def attach(self, trainer: Any) -> LmmsEvalCallback:
        """Add this callback to ``trainer`` and log through it; returns the callback."""
        self.trainer = trainer
        trainer.add_callback(self)
        return self

    def _log(self, metrics: dict[str, float], step: int) -> None:
        """Log at ``step`` (the checkpoint's) through ``Trainer.log``, whose entry takes the state's
        current step: the step is set to the checkpoint's for that call only."""
        trainer = self.trainer
        if trainer is None:
            if not self._warned:
                logger.warning("lmms-eval: attach(trainer) so results reach the Trainer's loggers too")
                self._warned = True
            if self._state is not None:
                self._state.log_history.append({**metrics, "step": step})
            return
        state = trainer.state
        now = (state.global_step, state.epoch)
        state.global_step, state.epoch = step, self._epochs.get(step, state.epoch)
        try:
            trainer.log(dict(metrics))
        finally:
            state.global_step, state.epoch = now

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._state = state
        if self.evaluator.processor is None and kwargs.get("processing_class") is not None:
            self.evaluator.processor = kwargs["processing_class"]
        if self.evaluator.training_run is None:
            self.evaluator.training_run = args.run_name or Path(args.output_dir).name

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if not state.is_world_process_zero:
            return
        folder = Path(args.output_dir) / f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}"
        self._epochs[state.global_step] = state.epoch
        self.evaluator.on_save(state.global_step, folder)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.is_world_process_zero:
            self.evaluator.poll()

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.is_world_process_zero:
            self.evaluator.finish(self.finish_timeout)

    @property
    def results(self) -> dict[int, StepResult]:
        """Each evaluated step's outcome so far."""
        return self.evaluator.results
