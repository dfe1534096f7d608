"""``smolvlm``: SmolVLM / SmolVLM2 through the shared transformers backend.

Same arguments as ``huggingface`` (:mod:`lmms_eval.models.chat.huggingface`); ``pretrained``
defaults to ``HuggingFaceTB/SmolVLM-Instruct``.
SmolVLM (v1) checkpoints are saved as ``idefics3`` models, SmolVLM2 as ``smolvlm``.
"""

from __future__ import annotations

from typing import ClassVar

from lmms_eval.models.chat.huggingface import Huggingface


class SmolVLM(Huggingface):
    """SmolVLM / SmolVLM2 chat model."""

    model_id: ClassVar[str | None] = "smolvlm"
    default_pretrained: ClassVar[str | None] = "HuggingFaceTB/SmolVLM-Instruct"
    model_types: ClassVar[tuple[str, ...]] = ("smolvlm", "idefics3")
