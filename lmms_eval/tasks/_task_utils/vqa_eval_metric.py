"""``EvalAIAnswerProcessor``: the EvalAI VQA answer normaliser, as a callable object."""

from __future__ import annotations

from typing import Any

from lmms_eval.scoring import vqa


class EvalAIAnswerProcessor:
    """``processor(answer)`` normalises a VQA answer as EvalAI does (see :mod:`lmms_eval.scoring.vqa`):
    lower-case, punctuation removed or spaced, number words to digits, articles dropped, contractions
    restored. The steps are also available one by one, as in the published class."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # the published class ignores its arguments
        pass

    def word_tokenize(self, word: str) -> str:
        return vqa._tokenize(word)

    def process_punctuation(self, in_text: str) -> str:
        return vqa.process_punctuation(in_text)

    def process_digit_article(self, in_text: str) -> str:
        return vqa.process_digit_article(in_text)

    def __call__(self, item: Any) -> str:
        return vqa.normalize_answer(item)
