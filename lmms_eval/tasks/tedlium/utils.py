"""TED-LIUM: English TED talks: the published recognition prompt and corpus-level WER in percent under the published key ``wer``.

The reference (``gt``) and
the model's transcript both go through the Whisper English text normaliser, which drops the
``<...>`` tags, punctuation and fillers (:func:`lmms_eval.scoring.asr.normalise_transcript`).
"""

from __future__ import annotations

from lmms_eval.tasks._task_utils.audio_docs import (  # noqa: F401 - used by the YAML
    doc_to_visual,
    english_corpus_wer,
    process_docs,
    recognition_doc_to_text,
    transcript_results,
)

doc_to_text = recognition_doc_to_text  # the published recognition prompt
process_results = transcript_results
tedlium_wer = english_corpus_wer  # corpus WER (percent) after the Whisper English normaliser


# The published package's names for these helpers: task YAMLs written for it reference them.
tedlium_doc_to_audio = doc_to_visual
tedlium_doc_to_text = doc_to_text
tedlium_process_result = process_results
