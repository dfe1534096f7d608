"""``whisper``: speech recognition (and translation to English) with a transformers Whisper checkpoint.

A simple model: each ``generate_until`` request's audio comes from the task's ``doc_to_visual`` (the
``datasets`` ``Audio`` dicts, paths, bytes... any source :func:`~lmms_eval.media.load_audio`
reads; several clips of one document are joined in order). The text prompt is not used: Whisper
is steered by its task and language tokens only.

Arguments (``--model_args``):

* ``pretrained``: hub id or local folder (default ``openai/whisper-large-v3``);
* ``language``: the spoken language, e.g. ``en`` or ``english``; unset lets the model detect it;
* ``task``: ``transcribe`` (default) or ``translate`` (to English);
* ``device``, ``torch_dtype`` (``auto`` default), ``batch_size``.

The audio is resampled to the feature extractor's rate (16 kHz) and cut at 30 seconds (one
Whisper window; no long-form decoding). Requests with equal generation settings run in batches
of ``batch_size`` (every clip is padded to the same window, so batching does not change an
answer); ``max_new_tokens`` (default 256), ``num_beams`` and ``until`` are honoured, decoding is
greedy. A request whose audio cannot be read is answered with ``RequestFailure(kind="input")``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from lmms_eval.api.instance import GenerationResult, Instance, RequestFailure, TokenCounts
from lmms_eval.api.model import lmms
from lmms_eval.api.path_types import ModelPath
from lmms_eval.errors import ModelArgsError
from lmms_eval.media import DecodedAudio, MediaError, content_part, load_audio, media_failure
from lmms_eval.models._common import apply_stop_strings, parse_batch_size
from lmms_eval.models.hf.backend import GenerationSettings, resolve_device, resolve_dtype, resolve_pretrained
from lmms_eval.models.hf.hub import loading_errors, resolve_checkpoint
from lmms_eval.models.hf.runtime import import_torch, import_transformers

logger = logging.getLogger(__name__)

WHISPER_TASKS = ("transcribe", "translate")
WINDOW_SECONDS = 30.0


class Whisper(lmms):
    """A Whisper checkpoint answering ``generate_until`` requests with the transcript of their audio."""

    is_simple = True

    def __init__(
        self,
        pretrained: ModelPath = "openai/whisper-large-v3",
        language: str | None = None,
        task: str = "transcribe",
        device: str | None = None,
        torch_dtype: str | None = "auto",
        batch_size: int | str = 1,
    ) -> None:
        super().__init__()
        if task not in WHISPER_TASKS:
            raise ModelArgsError(
                f"whisper: task={task!r} is not supported; use one of {', '.join(WHISPER_TASKS)}"
            )
        self.pretrained = resolve_pretrained(pretrained, None, "whisper")
        self.language = language or None
        self.task = task
        self.batch_size_per_gpu = parse_batch_size(batch_size, "whisper")
        import_torch("whisper")
        transformers = import_transformers("whisper")
        self.checkpoint = resolve_checkpoint(self.pretrained, "whisper")
        self._device = resolve_device(device)
        with loading_errors(self.checkpoint, "whisper"):
            self.processor: Any = transformers.AutoProcessor.from_pretrained(self.checkpoint.path)
            model = transformers.WhisperForConditionalGeneration.from_pretrained(
                self.checkpoint.path, dtype=resolve_dtype(torch_dtype)
            )
        self.model: Any = model.to(self._device).eval()
        self.sampling_rate = int(self.processor.feature_extractor.sampling_rate)
        logger.info(
            "whisper: loaded %s on %s (language %s, task %s)", self.pretrained, self._device, language, task
        )

    # -- audio --------------------------------------------------------------------------------------

    def _audio(self, request: Instance) -> DecodedAudio:
        """The request's audio at the model's rate, mono, at most one window long."""
        import numpy as np

        doc_to_visual: Any = request.args[2]
        visuals: list[Any] = list(doc_to_visual(self.get_doc(request)) or []) if doc_to_visual else []
        sources = [part["url"] for part in map(content_part, visuals) if part["type"] == "audio"]
        if not sources:
            raise MediaError("whisper: the document has no audio", "empty")
        clips = [load_audio(s, self.sampling_rate, max_seconds=WINDOW_SECONDS).samples for s in sources]
        joined = np.concatenate(clips)[: int(WINDOW_SECONDS * self.sampling_rate)]
        return DecodedAudio(joined, self.sampling_rate)

    # -- generation ---------------------------------------------------------------------------------

    def _transcribe(self, clips: list[DecodedAudio], settings: GenerationSettings) -> list[GenerationResult]:
        import torch

        started = time.perf_counter()
        features = self.processor.feature_extractor(
            [clip.samples for clip in clips], sampling_rate=self.sampling_rate, return_tensors="pt"
        )
        inputs = features.input_features.to(self._device, dtype=self.model.dtype)
        with torch.inference_mode():
            output = self.model.generate(
                input_features=inputs,
                language=self.language,
                task=self.task,
                max_new_tokens=settings.max_new_tokens,
                num_beams=settings.num_beams,
                do_sample=False,
                return_dict_in_generate=True,
                force_unique_generate_call=True,  # one 30 s window: no long-form segment loop
            )
        tokenizer = self.processor.tokenizer
        special = set(tokenizer.all_special_ids)
        latency = time.perf_counter() - started
        results = []
        for row in output.sequences.tolist():  # the decoder prompt (special tokens) included
            text = tokenizer.decode(row, skip_special_tokens=True).strip()
            produced = sum(1 for token in row if token not in special)
            results.append(
                GenerationResult(
                    text=apply_stop_strings(text, settings.until),
                    token_counts=TokenCounts(input_tokens=int(inputs.shape[-1]), output_tokens=produced),
                    latency_s=latency,
                )
            )
        return results

    def _batches(self, settings: Sequence[GenerationSettings]) -> list[list[int]]:
        groups: dict[GenerationSettings, list[int]] = {}
        for index, setting in enumerate(settings):
            groups.setdefault(setting, []).append(index)
        size = self.batch_size_per_gpu
        return [group[i : i + size] for group in groups.values() for i in range(0, len(group), size)]

    def _run_batch(
        self, batch: list[int], requests: Sequence[Instance], settings: GenerationSettings
    ) -> dict[int, GenerationResult | RequestFailure]:
        """The answers of one batch: transcripts, or ``input`` failures for unreadable audio."""
        answers: dict[int, GenerationResult | RequestFailure] = {}
        clips: dict[int, DecodedAudio] = {}
        for index in batch:
            try:
                clips[index] = self._audio(requests[index])
            except MediaError as exc:
                answers[index] = media_failure(exc)
        if clips:
            answers.update(zip(clips, self._transcribe(list(clips.values()), settings)))
        return answers

    def generate_until(self, requests: list[Instance]) -> list[str | GenerationResult | RequestFailure]:
        settings = [GenerationSettings.from_gen_kwargs(request.args[1]) for request in requests]
        answers: dict[int, GenerationResult | RequestFailure] = {}
        for batch in self._batches(settings):
            refusal = self.gate.refusal()
            if refusal is not None:
                return [answers.get(i, refusal) for i in range(len(requests))]
            answers.update(self._run_batch(batch, requests, settings[batch[0]]))
            for index in batch:
                self.gate.done(answers[index], requests[index])
        return [answers[i] for i in range(len(requests))]

    def loglikelihood(self, requests: list[Instance]) -> list[tuple[float, bool] | RequestFailure]:
        raise ModelArgsError("whisper answers generate_until requests only (speech recognition)")


__all__ = ["WHISPER_TASKS", "Whisper"]
