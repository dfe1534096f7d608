"""``qwen3_vl``: Qwen3-VL through the shared transformers backend.

Same arguments as ``huggingface`` (:mod:`lmms_eval.models.chat.huggingface`); ``pretrained``
defaults to ``Qwen/Qwen3-VL-8B-Instruct``.
"""

from __future__ import annotations

from typing import ClassVar

from lmms_eval.models.chat.huggingface import Huggingface


class Qwen3_VL(Huggingface):
    """Qwen3-VL chat model."""

    model_id: ClassVar[str | None] = "qwen3_vl"
    default_pretrained: ClassVar[str | None] = "Qwen/Qwen3-VL-8B-Instruct"
    model_types: ClassVar[tuple[str, ...]] = ("qwen3_vl", "qwen3_vl_moe")
