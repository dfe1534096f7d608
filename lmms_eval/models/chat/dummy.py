"""Chat variant of the ``dummy`` model (receives ``doc_to_messages``)."""

from __future__ import annotations

from lmms_eval.models.simple.dummy import DummySimple


class DummyChat(DummySimple):
    """Deterministic chat model; same arguments as :class:`DummySimple`."""

    is_simple = False
