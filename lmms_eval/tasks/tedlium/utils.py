"""TED-LIUM: English TED talks: the published recognition prompt and corpus-level WER in percent under the published key ``wer``.

The reference (``gt``) and
the model's transcript both go through the Whisper English text normaliser, which drops the
``<...>`` tags, punctuation and fillers (:func:`lmms_eval.scoring.asr.normalise_transcript`).
"""

from __future__ import annotations

from typing import Any

from lmms_eval.scoring.asr import corpus_error_rate
from lmms_eval.stats import pure_aggregation
from lmms_eval.tasks._task_utils.audio_docs import doc_to_visual, process_docs, recognition_doc_to_text  # noqa: F401 - used by the YAML

doc_to_text = recognition_doc_to_text  # the published recognition prompt


def process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, Any]:
    prediction = str(results[0]) if results else ""
    return {"wer": {"gt": doc["gt"], "pred": prediction}}


@pure_aggregation  # only computes: the bootstrap resamples it for the error bar
def tedlium_wer(items: list[dict[str, Any]], args: Any = None) -> float:
    """Corpus WER (percent) of the ``wer`` items after the Whisper English normaliser."""
    return corpus_error_rate([i["gt"] for i in items], [i["pred"] for i in items], ["en"] * len(items))


# The published package's names for these helpers: task YAMLs written for it reference them.
tedlium_doc_to_audio = doc_to_visual
tedlium_doc_to_text = doc_to_text
tedlium_process_result = process_results
