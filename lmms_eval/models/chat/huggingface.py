"""``huggingface``: any transformers image-text-to-text checkpoint with a chat template.

Loads the processor with :func:`lmms_eval.models.hf.compat.load_processor` (works without
torchvision) and the model with ``AutoModelForImageTextToText``. Model args:

* ``pretrained`` (required here; ``demo`` is the bundled tiny checkpoint), ``trust_remote_code``;
* ``device`` (default ``cuda`` when available, else ``cpu``), ``device_map`` (e.g. ``auto``;
  then ``device`` is not used for placement), ``torch_dtype`` (``auto``, ``float32``,
  ``bfloat16``, ``float16``), ``attn_implementation`` (e.g. ``sdpa``, ``flash_attention_2``);
* ``batch_size``; ``max_pixels`` / ``min_pixels`` (image processors that resize by pixel count,
  e.g. Qwen-VL; ignored with a warning elsewhere); ``max_num_frames`` (video frames sampled
  evenly, given to the model as images);
* ``system_prompt`` (text or a file path), ``chat_template`` (a Jinja file path or inline Jinja
  that replaces the checkpoint's template).

Batching, stop strings, timing fields, loglikelihood and multi-round behaviour are described in
:mod:`lmms_eval.models.hf.backend`.
"""

from __future__ import annotations

from typing import ClassVar

from lmms_eval.models.hf.backend import HFVisionLanguageModel


class Huggingface(HFVisionLanguageModel):
    """Generic transformers chat backend; see the module docstring for its arguments."""

    is_simple = False
    model_id: ClassVar[str | None] = "huggingface"
