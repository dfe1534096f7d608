"""``idefics3``: Idefics3 through the shared transformers backend.

Same arguments as ``huggingface`` (:mod:`lmms_eval.models.chat.huggingface`); ``pretrained``
defaults to ``HuggingFaceM4/Idefics3-8B-Llama3``.
"""

from __future__ import annotations

from typing import ClassVar

from lmms_eval.models.chat.huggingface import Huggingface


class Idefics3(Huggingface):
    """Idefics3 chat model."""

    model_id: ClassVar[str | None] = "idefics3"
    default_pretrained: ClassVar[str | None] = "HuggingFaceM4/Idefics3-8B-Llama3"
    model_types: ClassVar[tuple[str, ...]] = ("idefics3",)
