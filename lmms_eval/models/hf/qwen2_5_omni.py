"""``qwen2_5_omni``: Qwen2.5-Omni's thinker (text out) through the shared transformers engine.

Qwen2.5-Omni is a thinker (audio, image and video encoders over a language model, text out) and a
talker that speaks the thinker's answer. Evaluation scores text, so only the thinker is kept: the
checkpoint is loaded with ``enable_audio_output=False`` (the talker and its vocoder are never
built, their weights never read) and the engine drives the thinker directly, for generation and
for loglikelihood. A thinker saved on its own (``model_type`` ``qwen2_5_omni_thinker``, as
``model.thinker.save_pretrained`` writes it after fine-tuning) is loaded as it is.

Audio parts are read as for :mod:`lmms_eval.models.hf.qwen2_audio` (mono, the feature extractor's
16 kHz, cut at its 30-second window); images and videos are the engine's (see
:mod:`lmms_eval.models.hf.backend`). Without torchvision the processor is loaded without its video
processor (:mod:`lmms_eval.models.hf.compat`), so videos go in as frames.

Arguments (``--model_args``): those of ``huggingface`` (``pretrained`` defaults to
``Qwen/Qwen2.5-Omni-7B``; ``device``, ``device_map``, ``torch_dtype``, ``attn_implementation``,
``batch_size``, ``system_prompt``, ``chat_template``, ``max_pixels``...).
"""

from __future__ import annotations

from typing import Any, ClassVar

from lmms_eval.models.hf.qwen2_audio import HFAudioLanguageModel


class Qwen2_5Omni(HFAudioLanguageModel):
    """Qwen2.5-Omni, thinker only (audio, images, video and text in; text out)."""

    model_id: ClassVar[str | None] = "qwen2_5_omni"
    default_pretrained: ClassVar[str | None] = "Qwen/Qwen2.5-Omni-7B"
    model_types: ClassVar[tuple[str, ...]] = ("qwen2_5_omni", "qwen2_5_omni_thinker")
    model_class: ClassVar[str] = "Qwen2_5OmniForConditionalGeneration"

    def _loader_for(self, model_type: str) -> tuple[str, dict[str, Any]]:
        if model_type == "qwen2_5_omni_thinker":  # a thinker saved on its own (a fine-tuned one)
            return "Qwen2_5OmniThinkerForConditionalGeneration", {}
        return self.model_class, {"enable_audio_output": False}

    def _model_for_evaluation(self, loaded: Any) -> Any:
        thinker = getattr(loaded, "thinker", None)
        if thinker is None:
            return loaded
        thinker.generation_config = loaded.generation_config  # the checkpoint's stop tokens and defaults
        return thinker


__all__ = ["Qwen2_5Omni"]
