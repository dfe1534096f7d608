"""Speech translation scoring: corpus BLEU after the published text normalisation.

The published CoVoST 2 tasks normalise both sides before BLEU, so capitals, punctuation and
number spellings do not count:

- **English** targets go through the Whisper English text normaliser (as English speech
  recognition does, :func:`lmms_eval.scoring.asr.normalise_transcript`): "twenty-one" is 21,
  "don't" is "do not", "colour" is "color", punctuation dropped; then sacrebleu's ``13a`` tokens.
- **Chinese** targets are read per character as Chinese recognition is
  (:func:`lmms_eval.scoring.asr.chinese_characters`: numerals read as Chinese numerals,
  punctuation dropped, letters lower case); then sacrebleu's ``zh`` tokens.

:func:`corpus_translation_bleu` returns the corpus BLEU in 0-100 (one reference per segment).
"""

from __future__ import annotations

from collections.abc import Sequence

from lmms_eval.errors import MissingDependencyError
from lmms_eval.scoring.asr import chinese_characters, normalise_transcript

TOKENIZERS = {"en": "13a", "zh": "zh"}


def normalise_translation(text: str, language: str) -> str:
    """``text`` as it is scored in the target ``language`` (``"en"`` or ``"zh"``)."""
    if language == "zh":
        return "".join(chinese_characters(text))
    return normalise_transcript(text, language)


def corpus_translation_bleu(references: Sequence[str], hypotheses: Sequence[str], language: str) -> float:
    """Corpus BLEU (0-100) of the pairs after :func:`normalise_translation`; an empty corpus is 0."""
    try:
        import sacrebleu
    except ImportError:
        raise MissingDependencyError("sacrebleu", "metrics", "translation BLEU") from None
    if len(references) != len(hypotheses):
        raise ValueError(f"{len(references)} references but {len(hypotheses)} hypotheses")
    if not references:
        return 0.0
    refs = [normalise_translation(str(r), language) for r in references]
    hyps = [normalise_translation(str(h), language) for h in hypotheses]
    tokenizer = TOKENIZERS.get(language, "13a")
    return float(sacrebleu.corpus_bleu(hyps, [refs], tokenize=tokenizer).score)


__all__ = ["TOKENIZERS", "corpus_translation_bleu", "normalise_translation"]
