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

The published helpers are here too: :data:`FILTER_REGISTRY`, :func:`get_filter` and
:func:`build_filter_ensemble` (``build_filter_ensemble("get-answer", [["regex", {"regex_pattern":
...}], ["take_first", None]])``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from importlib import import_module
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from lmms_eval.api.filter import Filter, FilterEnsemble
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


def get_filter(filter_name: str | Callable[..., Any]) -> Any:
    """The filter class registered as ``filter_name``; a callable is returned as it is.

    An unknown name is a :class:`~lmms_eval.api.registry.RegistryLookupError` naming the closest
    registered filters (the published function returned the name unchanged).
    """
    if callable(filter_name):
        return filter_name
    return FILTER_REGISTRY.get(filter_name)


def build_filter_ensemble(filter_name: str, components: Sequence[Sequence[Any]]) -> FilterEnsemble:
    """A :class:`~lmms_eval.api.filter.FilterEnsemble` named ``filter_name`` from
    ``[[function, kwargs or None], ...]`` steps (a function is a registered name or a class)."""
    steps: list[Filter] = []
    for component in components:
        function, kwargs = (component[0], component[1] if len(component) > 1 else None)
        steps.append(get_filter(function)(**(kwargs or {})))
    return FilterEnsemble(filter_name, steps)


__all__ = [
    "BUILTIN_FILTERS",
    "FILTER_REGISTRY",
    "Filter",
    "FilterEnsemble",
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
    "build_filter_ensemble",
    "doc_choices",
    "get_filter",
]
