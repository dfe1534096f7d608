"""Common Voice 15: crowd-read sentences, the published recognition prompt, corpus-level WER.

Each doc's ``wer`` item keeps the reference (``sentence``) and the model's transcript; the
aggregation normalises both (:func:`lmms_eval.scoring.asr.normalise_transcript`, in the language
of the doc's ``locale``: ``en`` -> the Whisper English normaliser, ``fr`` -> the Whisper basic
normaliser, ``zh-CN`` -> one token per character) and returns the corpus error rate in percent:
word error rate for English and French, character error rate for Chinese (still keyed ``wer``,
as published).
"""

from __future__ import annotations

from typing import Any

from lmms_eval.scoring.asr import corpus_error_rate
from lmms_eval.stats import pure_aggregation
from lmms_eval.tasks._task_utils.audio_docs import doc_to_visual, process_docs, recognition_doc_to_text  # noqa: F401 - used by the YAML

doc_to_text = recognition_doc_to_text  # the published recognition prompt


def process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, Any]:
    prediction = str(results[0]) if results else ""
    return {
        "wer": {
            "gt": doc["sentence"],
            "pred": prediction,
            "source": doc.get("path"),
            "locale": doc.get("locale"),
        }
    }


def locale_language(locale: Any) -> str:
    """The language code of a Common Voice locale, lower case (``"en"`` -> ``"en"``,
    ``"zh-CN"`` -> ``"zh"``)."""
    return str(locale or "").split("-")[0].strip().lower()


@pure_aggregation  # only computes: the bootstrap resamples it for the error bar
def common_voice_wer(items: list[dict[str, Any]], args: Any = None) -> float:
    """Corpus WER (percent) of the ``wer`` items, each pair normalised in its doc's language."""
    languages = [locale_language(i.get("locale")) for i in items]
    return corpus_error_rate([i["gt"] for i in items], [i["pred"] for i in items], languages)


# The published package's names for these helpers: task YAMLs written for it reference them.
common_voice_15_doc_to_audio = doc_to_visual
common_voice_15_doc_to_text = doc_to_text
common_voice_15_process_result = process_results
