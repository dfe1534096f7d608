"""CoVoST 2: speech translation, English speech to Chinese text and Chinese speech to English
text; the published instruction as the prompt and corpus BLEU (0-100, rounded to 5 decimals as
published) under the published key ``bleu``, after the published normalisation of both sides
(:func:`lmms_eval.scoring.translation.corpus_translation_bleu`).

The reference is ``translation`` in the English-to-Chinese dataset and ``gt`` in the
Chinese-to-English one.
"""

from __future__ import annotations

from typing import Any

from lmms_eval.api.prompts import with_prompts
from lmms_eval.scoring.translation import corpus_translation_bleu
from lmms_eval.stats import pure_aggregation
from lmms_eval.tasks._task_utils.audio_docs import doc_to_visual, process_docs  # noqa: F401 - used by the YAML


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    """The instruction is the task's pre prompt (per model), followed by its post prompt."""
    return with_prompts("", lmms_eval_specific_kwargs)


def _item(reference: Any, results: list[Any]) -> dict[str, Any]:
    return {"bleu": {"gt": str(reference), "pred": str(results[0]) if results else ""}}


def process_results_en_zh(doc: dict[str, Any], results: list[Any]) -> dict[str, Any]:
    return _item(doc["translation"], results)


def process_results_zh_en(doc: dict[str, Any], results: list[Any]) -> dict[str, Any]:
    return _item(doc["gt"], results)


BLEU_DECIMALS = 5  # the published aggregation rounds BLEU to 5 decimals


@pure_aggregation  # only computes: the bootstrap resamples it for the error bar
def bleu_zh(items: list[dict[str, Any]], args: Any = None) -> float:
    """Corpus BLEU of Chinese translations, per character (rounded as published)."""
    bleu = corpus_translation_bleu([i["gt"] for i in items], [i["pred"] for i in items], "zh")
    return round(bleu, BLEU_DECIMALS)


@pure_aggregation  # only computes: the bootstrap resamples it for the error bar
def bleu_en(items: list[dict[str, Any]], args: Any = None) -> float:
    """Corpus BLEU of English translations, after the Whisper English normaliser (rounded as published)."""
    bleu = corpus_translation_bleu([i["gt"] for i in items], [i["pred"] for i in items], "en")
    return round(bleu, BLEU_DECIMALS)


# The published package's names for these helpers: task YAMLs written for it reference them.
covost2_doc_to_audio = doc_to_visual
covost2_doc_to_text = doc_to_text
covost2_en_zh_process_result = process_results_en_zh
covost2_zh_en_process_result = process_results_zh_en
