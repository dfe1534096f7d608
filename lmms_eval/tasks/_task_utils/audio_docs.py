"""Audio documents of the bundled speech and sound benchmarks (LibriSpeech, Common Voice,
Clotho-AQA, MMAU): one place for how their ``audio`` column is read, and the published speech
recognition prompt of the ASR tasks (:func:`recognition_doc_to_text`).

``process_docs`` keeps the column undecoded (``{"bytes", "path"}``), so loading needs no torchcodec;
``doc_to_visual`` decodes it with :func:`lmms_eval.media.load_audio` into the ``datasets`` ``Audio``
dict ``{"array", "sampling_rate"}`` that models receive, as the published package passes it.
"""

from __future__ import annotations

from typing import Any

from lmms_eval.api.prompts import with_prompts
from lmms_eval.media import load_audio
from lmms_eval.scoring.asr import corpus_error_rate
from lmms_eval.stats import pure_aggregation

AUDIO_COLUMN = "audio"
RECOGNITION_PROMPT = "Please recognize the speech and only output the recognized content:"


def process_docs(dataset: Any) -> Any:
    """The dataset with its audio column undecoded (:func:`doc_to_visual` decodes it)."""
    import datasets

    if AUDIO_COLUMN in getattr(dataset, "features", {}):
        return dataset.cast_column(AUDIO_COLUMN, datasets.Audio(decode=False))
    return dataset


def doc_to_visual(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The document's clip as ``[{"array", "sampling_rate"}]`` (channels kept)."""
    return [load_audio(doc[AUDIO_COLUMN], mono=False).as_dict()]


def recognition_doc_to_text(
    doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None
) -> str:
    """The published speech recognition prompt, between the task's pre and post prompts."""
    return with_prompts(RECOGNITION_PROMPT, lmms_eval_specific_kwargs)


def transcript_results(doc: dict[str, Any], results: list[Any]) -> dict[str, Any]:
    """``{"wer": {"gt": <reference>, "pred": <transcript>}}``: the item of an English corpus WER."""
    prediction = str(results[0]) if results else ""
    return {"wer": {"gt": doc["gt"], "pred": prediction}}


@pure_aggregation  # only computes: the bootstrap resamples it for the error bar
def english_corpus_wer(items: list[dict[str, Any]], args: Any = None) -> float:
    """Corpus WER (percent) of ``transcript_results`` items after the Whisper English normaliser."""
    return corpus_error_rate([i["gt"] for i in items], [i["pred"] for i in items], ["en"] * len(items))
