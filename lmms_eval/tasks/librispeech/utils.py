"""LibriSpeech: the audio of each utterance, the published recognition prompt, corpus-level WER.

Each doc's ``wer`` item keeps the reference and the model's transcript; the aggregation
normalises both (:func:`lmms_eval.scoring.asr.normalise_transcript`, in the language of the doc's
``task`` field, ``ASR_en`` -> English) and returns the corpus word error rate in percent.
"""

from __future__ import annotations

from typing import Any

from lmms_eval.scoring.asr import asr_language, corpus_error_rate
from lmms_eval.stats import pure_aggregation
from lmms_eval.tasks._task_utils.audio_docs import doc_to_visual, process_docs, recognition_doc_to_text  # noqa: F401 - used by the YAML

doc_to_text = recognition_doc_to_text  # the published recognition prompt


def process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, Any]:
    prediction = str(results[0]) if results else ""
    return {
        "wer": {"gt": doc["gt"], "pred": prediction, "source": doc.get("source"), "task": doc.get("task")}
    }


@pure_aggregation  # only computes: the bootstrap resamples it for the error bar
def librispeech_wer(items: list[dict[str, Any]], args: Any = None) -> float:
    """Corpus WER (percent) of the ``wer`` items, each pair normalised in its doc's language."""
    languages = [asr_language(i.get("task")) for i in items]
    return corpus_error_rate([i["gt"] for i in items], [i["pred"] for i in items], languages)


# The published package's names for these helpers: task YAMLs written for it reference them.
librispeech_doc_to_audio = doc_to_visual
librispeech_doc_to_text = doc_to_text
librispeech_process_result = process_results
