"""``qwen2_5_vl``: Qwen2.5-VL through the shared transformers backend.

Same arguments as ``huggingface`` (:mod:`lmms_eval.models.chat.huggingface`); ``pretrained``
defaults to ``Qwen/Qwen2.5-VL-7B-Instruct``.
"""

from __future__ import annotations

from typing import ClassVar

from lmms_eval.models.chat.huggingface import Huggingface


class Qwen2_5_VL(Huggingface):
    """Qwen2.5-VL chat model."""

    model_id: ClassVar[str | None] = "qwen2_5_vl"
    default_pretrained: ClassVar[str | None] = "Qwen/Qwen2.5-VL-7B-Instruct"
    model_types: ClassVar[tuple[str, ...]] = ("qwen2_5_vl",)
