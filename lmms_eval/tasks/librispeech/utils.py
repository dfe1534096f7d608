"""LibriSpeech: the audio of each utterance, the published recognition prompt, corpus-level WER.

Each doc's ``wer`` item keeps the reference and the model's transcript; the aggregation
normalises both (:func:`lmms_eval.scoring.asr.normalise_transcript`, in the language of the doc's
``task`` field, ``ASR_en`` -> English) and returns the corpus word error rate in percent.
"""

from __future__ import annotations

from typing import Any

from lmms_eval.api.prompts import with_prompts
from lmms_eval.scoring.asr import asr_language, corpus_wer, normalise_transcript
from lmms_eval.tasks._task_utils.audio_docs import doc_to_visual, process_docs  # noqa: F401 - used by the YAML

PROMPT = "Please recognize the speech and only output the recognized content:"


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    return with_prompts(PROMPT, lmms_eval_specific_kwargs)


def process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, Any]:
    prediction = str(results[0]) if results else ""
    return {
        "wer": {"gt": doc["gt"], "pred": prediction, "source": doc.get("source"), "task": doc.get("task")}
    }


def librispeech_wer(items: list[dict[str, Any]], args: Any = None) -> float:
    """Corpus WER (percent) of the ``wer`` items, each pair normalised in its doc's language."""
    references = [normalise_transcript(str(i["gt"]), asr_language(i.get("task"))) for i in items]
    hypotheses = [normalise_transcript(str(i["pred"]), asr_language(i.get("task"))) for i in items]
    return 100.0 * corpus_wer(references, hypotheses)
