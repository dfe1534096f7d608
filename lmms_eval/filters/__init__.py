"""Built-in filters, registered by name for ``filter_list``.

* selection: ``take_first``, ``take_first_k``, ``majority_vote``
* extraction: ``regex``, ``multi_choice_regex``
* transformation: ``lowercase``, ``uppercase``, ``remove_whitespace``, ``map``, ``strip_thinking``
* multiple choice: ``leading_letter``, ``mcq_letter``
"""

from __future__ import annotations

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

__all__ = [
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
