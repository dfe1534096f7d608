"""``qwen2_audio``: Qwen2-Audio-Instruct through the shared transformers engine, with audio parts.

A chat model: the audio parts of ``doc_to_messages`` (``{"type": "audio", "url": ...}``; any source
:func:`~lmms_eval.media.load_audio` reads: ``datasets`` ``Audio`` dicts, paths, bytes, ``data:``
URIs) are read, mixed down to mono and resampled to the feature extractor's rate (16 kHz), cut at
its window (30 seconds; the processor pads every clip to that window, so batching does not change
an answer), and rendered by the chat template as the processor's audio placeholder.

:class:`HFAudioLanguageModel` is the audio layer over
:class:`~lmms_eval.models.hf.backend.HFVisionLanguageModel`: batching, stop strings, timing
fields, loglikelihood, multi-round generation, the run's gate and media prefetching are the
engine's (see :mod:`lmms_eval.models.hf.backend`). A request whose audio cannot be read
(missing, corrupt, empty: :class:`~lmms_eval.media.MediaError`) is answered with
``RequestFailure(kind="input")``; the others run.

Arguments (``--model_args``): those of ``huggingface`` (``pretrained`` defaults to
``Qwen/Qwen2-Audio-7B-Instruct``; ``device``, ``device_map``, ``torch_dtype``,
``attn_implementation``, ``batch_size``, ``system_prompt``, ``chat_template``...). The model is
loaded with ``Qwen2AudioForConditionalGeneration``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from lmms_eval.errors import LmmsEvalError
from lmms_eval.media import load_audio
from lmms_eval.models.hf.backend import HFVisionLanguageModel, _Media

DEFAULT_WINDOW_SECONDS = 30.0


class HFAudioLanguageModel(HFVisionLanguageModel):
    """The engine with audio parts: read at the feature extractor's rate, given to the processor as
    ``audio=``. Subclasses set ``model_class`` (the transformers class) and the class defaults."""

    is_simple = False

    @property
    def feature_extractor(self) -> Any:
        extractor = getattr(self.processor, "feature_extractor", None)
        if extractor is None:
            raise LmmsEvalError(
                f"{type(self).__name__}: the processor of '{self.pretrained}' has no feature extractor"
            )
        return extractor

    @property
    def sampling_rate(self) -> int:
        """The rate the feature extractor expects (16 kHz for the Qwen audio models)."""
        return int(self.feature_extractor.sampling_rate)

    @property
    def window_seconds(self) -> float:
        """The longest clip the feature extractor takes (longer audio is cut)."""
        samples = getattr(self.feature_extractor, "n_samples", None)
        return samples / self.sampling_rate if samples else DEFAULT_WINDOW_SECONDS

    def _audio_part(self, part: dict[str, Any], media: _Media, load: bool) -> dict[str, Any]:
        media.audios.append(
            load_audio(part["audio"], self.sampling_rate, max_seconds=self.window_seconds).samples
            if load
            else None
        )
        return {"type": "audio"}

    def _audio_inputs(self, audios: list[Any]) -> dict[str, Any]:
        return {"audio": audios, "sampling_rate": self.sampling_rate}


class Qwen2Audio(HFAudioLanguageModel):
    """Qwen2-Audio-Instruct chat model (audio and text in, text out)."""

    model_id: ClassVar[str | None] = "qwen2_audio"
    default_pretrained: ClassVar[str | None] = "Qwen/Qwen2-Audio-7B-Instruct"
    model_types: ClassVar[tuple[str, ...]] = ("qwen2_audio",)
    model_class: ClassVar[str] = "Qwen2AudioForConditionalGeneration"


class Qwen2AudioSimple(Qwen2Audio):
    """The published simple form: the context string, and the audio of ``doc_to_visual``."""

    is_simple = True


__all__ = ["HFAudioLanguageModel", "Qwen2Audio", "Qwen2AudioSimple"]
