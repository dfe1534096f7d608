"""``llava_hf``: LLaVA (llava-hf checkpoints) through the shared transformers backend.

Same arguments as ``huggingface`` (:mod:`lmms_eval.models.chat.huggingface`); ``pretrained``
defaults to ``llava-hf/llava-1.5-7b-hf``.
"""

from __future__ import annotations

from typing import ClassVar

from lmms_eval.models.chat.huggingface import Huggingface


class LlavaHf(Huggingface):
    """LLaVA (llava-hf checkpoints) chat model."""

    model_id: ClassVar[str | None] = "llava_hf"
    default_pretrained: ClassVar[str | None] = "llava-hf/llava-1.5-7b-hf"
    model_types: ClassVar[tuple[str, ...]] = ("llava", "llava_next", "llava_onevision")
