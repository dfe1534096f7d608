"""Simple (legacy) variant of ``qwen3_vl``: a context string with ``<image>`` placeholders and ``doc_to_visual``.

The visuals fill the ``<image>`` placeholders in order (visuals without a placeholder, and
videos, go before the text); the resulting user message goes through the checkpoint's chat
template, or is used as plain text with the processor's image token when there is none. Same
arguments as the chat variant (:mod:`lmms_eval.models.chat.qwen3_vl`).
"""

from __future__ import annotations

from lmms_eval.models.chat.qwen3_vl import Qwen3_VL as _ChatQwen3_VL


class Qwen3_VL(_ChatQwen3_VL):
    """Qwen3-VL simple model."""

    is_simple = True
