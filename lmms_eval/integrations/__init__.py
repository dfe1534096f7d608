"""Evaluation during training: glue between training loops and the eval server.

* :class:`~lmms_eval.integrations.evaluator.TrainingEvaluator`: framework-neutral, for a plain loop;
* :mod:`lmms_eval.integrations.transformers`: ``LmmsEvalCallback``, a ``transformers.TrainerCallback``;
* :mod:`lmms_eval.integrations.lightning`: ``LmmsEvalCallback``, a Lightning ``Callback``.

This package uses only the eval server's client (:mod:`lmms_eval.entrypoints.client`) and the
results schema; nothing in lmms_eval imports it. The framework modules import their framework
when imported themselves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lmms_eval.integrations.evaluator import StepResult, TrainingEvaluator, metrics_of


def __getattr__(name: str) -> Any:
    if name in ("TrainingEvaluator", "StepResult", "metrics_of"):
        from lmms_eval.integrations import evaluator

        return getattr(evaluator, name)
    raise AttributeError(f"module 'lmms_eval.integrations' has no attribute {name!r}")


__all__ = ["StepResult", "TrainingEvaluator", "metrics_of"]
