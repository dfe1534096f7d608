"""Simple (legacy) variant of ``qwen2_vl``: a context string with ``<image>`` placeholders and ``doc_to_visual``.

The visuals fill the ``<image>`` placeholders in order (visuals without a placeholder, and
videos, go before the text); the resulting user message goes through the checkpoint's chat
template, or is used as plain text with the processor's image token when there is none. Same
arguments as the chat variant (:mod:`lmms_eval.models.chat.qwen2_vl`).
"""

from __future__ import annotations

from lmms_eval.models.chat.qwen2_vl import Qwen2_VL as _ChatQwen2_VL


class Qwen2_VL(_ChatQwen2_VL):
    """Qwen2-VL simple model."""

    is_simple = True
