"""Simple (legacy) variant of ``llava_hf``: a context string with ``<image>`` placeholders and ``doc_to_visual``.

The visuals fill the ``<image>`` placeholders in order (visuals without a placeholder, and
videos, go before the text); the resulting user message goes through the checkpoint's chat
template, or is used as plain text with the processor's image token when there is none. Same
arguments as the chat variant (:mod:`lmms_eval.models.chat.llava_hf`).
"""

from __future__ import annotations

from lmms_eval.models.chat.llava_hf import LlavaHf as _ChatLlavaHf


class LlavaHf(_ChatLlavaHf):
    """LLaVA (llava-hf) simple model."""

    is_simple = True
