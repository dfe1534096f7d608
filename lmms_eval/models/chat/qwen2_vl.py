"""``qwen2_vl``: Qwen2-VL through the shared transformers backend.

Same arguments as ``huggingface`` (:mod:`lmms_eval.models.chat.huggingface`); ``pretrained``
defaults to ``Qwen/Qwen2-VL-7B-Instruct``.
"""

from __future__ import annotations

from typing import ClassVar

from lmms_eval.models.chat.huggingface import Huggingface


class Qwen2_VL(Huggingface):
    """Qwen2-VL chat model."""

    model_id: ClassVar[str | None] = "qwen2_vl"
    default_pretrained: ClassVar[str | None] = "Qwen/Qwen2-VL-7B-Instruct"
    model_types: ClassVar[tuple[str, ...]] = ("qwen2_vl",)
