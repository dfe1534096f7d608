"""``internvl_hf``: InternVL (the transformers-native ``-hf`` checkpoints) through the shared transformers backend.

Same arguments as ``huggingface`` (:mod:`lmms_eval.models.chat.huggingface`); ``pretrained``
defaults to ``OpenGVLab/InternVL3-2B-hf``.
Its processor needs a video processor, which needs torchvision; without torchvision loading fails
with a clear error.
"""

from __future__ import annotations

from typing import ClassVar

from lmms_eval.models.chat.huggingface import Huggingface


class InternVLHf(Huggingface):
    """InternVL (the transformers-native ``-hf`` checkpoints) chat model."""

    model_id: ClassVar[str | None] = "internvl_hf"
    default_pretrained: ClassVar[str | None] = "OpenGVLab/InternVL3-2B-hf"
    model_types: ClassVar[tuple[str, ...]] = ("internvl",)
