"""FLEURS: read Wikipedia sentences in 102 languages; the published recognition prompt and the
corpus error rate in percent under the published key ``wer``.

Each doc's ``wer`` item keeps the reference (``transcription``, the normalised transcript of the
dataset), the model's transcript and the doc's ``language`` (the FLEURS language name). The
aggregation normalises each pair in that language (:func:`lmms_eval.scoring.asr.normalise_transcript`):
English by words after the Whisper English normaliser, Mandarin per character with numerals read
as Chinese numerals, Cantonese per character after conversion to simplified characters.
"""

from __future__ import annotations

from typing import Any

from lmms_eval.scoring.asr import corpus_error_rate
from lmms_eval.stats import pure_aggregation
from lmms_eval.tasks._task_utils.audio_docs import doc_to_visual, process_docs, recognition_doc_to_text  # noqa: F401 - used by the YAML

doc_to_text = recognition_doc_to_text  # the published recognition prompt

# the FLEURS language names of the bundled configs -> the language their transcripts are scored in
LANGUAGES = {"English": "en", "Mandarin Chinese": "zh", "Cantonese Chinese": "yue"}


def fleurs_language(name: Any) -> str:
    """The scoring language of a FLEURS ``language`` name (``"Mandarin Chinese"`` -> ``"zh"``);
    other languages are scored by words after the Whisper basic normaliser (``""``)."""
    return LANGUAGES.get(str(name or "").strip(), "")


def process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, Any]:
    prediction = str(results[0]) if results else ""
    return {
        "wer": {
            "gt": doc["transcription"],
            "pred": prediction,
            "source": doc.get("path"),
            "language": doc.get("language"),
        }
    }


@pure_aggregation  # only computes: the bootstrap resamples it for the error bar
def fleurs_wer(items: list[dict[str, Any]], args: Any = None) -> float:
    """Corpus error rate (percent) of the ``wer`` items, each pair normalised in its language."""
    languages = [fleurs_language(i.get("language")) for i in items]
    return corpus_error_rate([i["gt"] for i in items], [i["pred"] for i in items], languages)


# The published package's names for these helpers: task YAMLs written for it reference them.
fleurs_doc_to_audio = doc_to_visual
fleurs_doc_to_text = doc_to_text
fleurs_process_result = process_results
