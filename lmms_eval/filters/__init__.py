"""Built-in filters, registered by name for ``filter_list``.

* selection: ``take_first``, ``take_first_k``, ``majority_vote``
* extraction: ``regex``, ``multi_choice_regex``
* transformation: ``lowercase``, ``uppercase``, ``remove_whitespace``, ``map``, ``strip_thinking``
* multiple choice: ``leading_letter``, ``mcq_letter``

:data:`BUILTIN_FILTERS` is the one list of them: importing this package registers each name in
:data:`lmms_eval.api.registry.FILTER_REGISTRY` as a lazy ``"module:Class"`` path, so nothing but
the registry is imported until a filter is used (``api/`` never imports this package; the package
root ``lmms_eval`` does, which every import of a submodule runs first). The classes are also
importable from here (``from lmms_eval.filters import RegexFilter``), loaded on first access.
"""

from __future__ import annotations

from importlib import import_module
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from lmms_eval.api.registry import FILTER_REGISTRY

if TYPE_CHECKING:
    from lmms_eval.filters.choice import LeadingLetterFilter, MCQLetterFilter
    from lmms_eval.filters.extraction import MultiChoiceRegexFilter, RegexFilter, doc_choices
    from lmms_eval.filters.selection import MajorityVoteFilter, TakeFirstFilter, TakeKFilter
    from lmms_eval.filters.transformation import (
        LowercaseFilter,
        MapFilter,
        StripThinkingFilter,
        UppercaseFilter,
        WhitespaceFilter,
    )

BUILTIN_FILTERS = MappingProxyType(
    {
        "take_first": "lmms_eval.filters.selection:TakeFirstFilter",
        "take_first_k": "lmms_eval.filters.selection:TakeKFilter",
        "majority_vote": "lmms_eval.filters.selection:MajorityVoteFilter",
        "regex": "lmms_eval.filters.extraction:RegexFilter",
        "multi_choice_regex": "lmms_eval.filters.extraction:MultiChoiceRegexFilter",
        "lowercase": "lmms_eval.filters.transformation:LowercaseFilter",
        "uppercase": "lmms_eval.filters.transformation:UppercaseFilter",
        "remove_whitespace": "lmms_eval.filters.transformation:WhitespaceFilter",
        "map": "lmms_eval.filters.transformation:MapFilter",
        "strip_thinking": "lmms_eval.filters.transformation:StripThinkingFilter",
        "leading_letter": "lmms_eval.filters.choice:LeadingLetterFilter",
        "mcq_letter": "lmms_eval.filters.choice:MCQLetterFilter",
    }
)
"""Filter name -> ``"module:Class"`` of every built-in filter."""

# attribute -> module, for the lazy re-exports below
_EXPORTS: dict[str, str] = {
    **{path.partition(":")[2]: path.partition(":")[0] for path in BUILTIN_FILTERS.values()},
    "doc_choices": "lmms_eval.filters.extraction",
}


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'lmms_eval.filters' has no attribute {name!r}")


for _name, _path in BUILTIN_FILTERS.items():
    FILTER_REGISTRY.register(_name, _path)

__all__ = [
    "BUILTIN_FILTERS",
    "LeadingLetterFilter",
    "LowercaseFilter",
    "MCQLetterFilter",
    "MajorityVoteFilter",
    "MapFilter",
    "MultiChoiceRegexFilter",
    "RegexFilter",
    "StripThinkingFilter",
    "TakeFirstFilter",
    "TakeKFilter",
    "UppercaseFilter",
    "WhitespaceFilter",
    "doc_choices",
]
