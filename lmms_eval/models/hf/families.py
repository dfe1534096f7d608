"""The transformers families under their published ids: small hooks on the one engine.

Each class names the family's published id, its default checkpoint, the ``config.model_type``
values it expects and the transformers class that loads it; batching, stop strings, timing and
token counts, log-likelihoods, multi-round generation, media and the run's gate are the engine's
(:mod:`lmms_eval.models.hf.backend`). A family whose processor insists on a video processor is
loaded without one when torchvision is missing (:mod:`lmms_eval.models.hf.compat`; videos then go
in as frames). Families whose released checkpoints ship no chat template (InstructBLIP, PaliGemma,
Fuyu) render the family's own prompt format (:attr:`HFVisionLanguageModel.default_chat_template`),
so they run without a ``chat_template=`` argument.

Every family is a chat model (``doc_to_messages``) and a simple one (``--force_simple``: the
context string and ``doc_to_visual``), as published. Arguments: those of ``huggingface``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from lmms_eval.errors import ModelArgsError
from lmms_eval.models.hf.backend import HFVisionLanguageModel

# The text parts of the conversation, one turn after another; the processor places the image
# tokens itself (InstructBLIP's query tokens, PaliGemma's image prefix).
TEXT_ONLY_TEMPLATE = (
    "{% for message in messages %}{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}{% if part['type'] == 'text' %}{{ part['text'] }}"
    "{% endif %}{% endfor %}{% endif %}{% if not loop.last %}\n{% endif %}{% endfor %}"
)
# Fuyu: the question and a newline after it (the processor adds the image patches and the speaker
# token); an image part is left to the processor as well.
FUYU_TEMPLATE = TEXT_ONLY_TEMPLATE + "{% if add_generation_prompt %}\n{% endif %}"
# PaliGemma: the processor prefixes the image tokens and BOS and appends the newline that ends the
# prefix; the mix checkpoints answer prompts such as "answer en <question>".
PALIGEMMA_TEMPLATE = TEXT_ONLY_TEMPLATE


class LlavaOneVision(HFVisionLanguageModel):
    """LLaVA-OneVision (llava-hf conversions)."""

    model_id: ClassVar[str | None] = "llava_onevision"
    default_pretrained: ClassVar[str | None] = "llava-hf/llava-onevision-qwen2-7b-ov-hf"
    model_types: ClassVar[tuple[str, ...]] = ("llava_onevision",)


class LlavaNextVideo(HFVisionLanguageModel):
    """LLaVA-NeXT-Video (llava-hf conversions)."""

    model_id: ClassVar[str | None] = "llava_next_video"
    default_pretrained: ClassVar[str | None] = "llava-hf/LLaVA-NeXT-Video-7B-hf"
    model_types: ClassVar[tuple[str, ...]] = ("llava_next_video",)


class VideoLlava(HFVisionLanguageModel):
    """Video-LLaVA (the ``-hf`` conversion)."""

    model_id: ClassVar[str | None] = "video_llava"
    default_pretrained: ClassVar[str | None] = "LanguageBind/Video-LLaVA-7B-hf"
    model_types: ClassVar[tuple[str, ...]] = ("video_llava",)


class Gemma3(HFVisionLanguageModel):
    """Gemma 3 (the multimodal sizes, 4B and up)."""

    model_id: ClassVar[str | None] = "gemma3"
    default_pretrained: ClassVar[str | None] = "google/gemma-3-4b-it"
    model_types: ClassVar[tuple[str, ...]] = ("gemma3",)


class Idefics2(HFVisionLanguageModel):
    """Idefics2."""

    model_id: ClassVar[str | None] = "idefics2"
    default_pretrained: ClassVar[str | None] = "HuggingFaceM4/idefics2-8b"
    model_types: ClassVar[tuple[str, ...]] = ("idefics2",)


class LlamaVision(HFVisionLanguageModel):
    """Llama 3.2 Vision (Mllama)."""

    model_id: ClassVar[str | None] = "llama_vision"
    default_pretrained: ClassVar[str | None] = "meta-llama/Llama-3.2-11B-Vision-Instruct"
    model_types: ClassVar[tuple[str, ...]] = ("mllama",)


class InstructBlip(HFVisionLanguageModel):
    """InstructBLIP; the checkpoints ship no chat template: the prompt is the question itself."""

    model_id: ClassVar[str | None] = "instructblip"
    default_pretrained: ClassVar[str | None] = "Salesforce/instructblip-vicuna-7b"
    model_types: ClassVar[tuple[str, ...]] = ("instructblip",)
    default_chat_template: ClassVar[str | None] = TEXT_ONLY_TEMPLATE

    def _encode(
        self,
        texts: list[str],
        images: list[list[Any]],
        side: str,
        videos: list[list[Any]] | None = None,
        audios: list[list[Any]] | None = None,
    ) -> Any:
        """The processor puts the query tokens before the padded text (so padding lands between
        them); move each row's padding to ``side``, and the Q-Former's to the right (its positions
        are absolute), so a batch answers as its rows alone."""
        batch = super()._encode(texts, images, side, videos, audios)
        move_padding(batch, "input_ids", "attention_mask", side)
        move_padding(batch, "qformer_input_ids", "qformer_attention_mask", "right")
        return batch


def move_padding(batch: Any, ids_key: str, mask_key: str, side: str) -> None:
    """Reorder each row of ``batch[ids_key]`` / ``batch[mask_key]`` so its padding is on ``side``
    and its tokens keep their order."""
    import torch

    if ids_key not in batch or mask_key not in batch:
        return
    mask = batch[mask_key]
    keys = mask if side == "left" else 1 - mask
    order = torch.argsort(keys.to(torch.int64), dim=1, stable=True)
    batch[ids_key] = torch.gather(batch[ids_key], 1, order)
    batch[mask_key] = torch.gather(mask, 1, order)


class PaliGemma(HFVisionLanguageModel):
    """PaliGemma; the checkpoints ship no chat template: the prompt is the task prefix and question."""

    model_id: ClassVar[str | None] = "paligemma"
    default_pretrained: ClassVar[str | None] = "google/paligemma-3b-mix-224"
    model_types: ClassVar[tuple[str, ...]] = ("paligemma",)
    default_chat_template: ClassVar[str | None] = PALIGEMMA_TEMPLATE


class Glm4v(HFVisionLanguageModel):
    """GLM-4.1V / GLM-4.5V."""

    model_id: ClassVar[str | None] = "glm4v"
    default_pretrained: ClassVar[str | None] = "zai-org/GLM-4.1V-9B-Thinking"
    model_types: ClassVar[tuple[str, ...]] = ("glm4v", "glm4v_moe")


class Mistral3VL(HFVisionLanguageModel):
    """Mistral Small 3.x with its Pixtral vision encoder."""

    model_id: ClassVar[str | None] = "mistral3_vl"
    default_pretrained: ClassVar[str | None] = "mistralai/Mistral-Small-3.1-24B-Instruct-2503"
    model_types: ClassVar[tuple[str, ...]] = ("mistral3",)


class Qwen3_5(HFVisionLanguageModel):
    """Qwen3.5 (dense and MoE, one class each in transformers; ``pretrained`` picks)."""

    model_id: ClassVar[str | None] = "qwen3_5"
    model_types: ClassVar[tuple[str, ...]] = ("qwen3_5", "qwen3_5_moe")


class Phi4Multimodal(HFVisionLanguageModel):
    """Phi-4-multimodal (the transformers-native class; images and text)."""

    model_id: ClassVar[str | None] = "phi4_multimodal"
    default_pretrained: ClassVar[str | None] = "microsoft/Phi-4-multimodal-instruct"
    model_types: ClassVar[tuple[str, ...]] = ("phi4_multimodal",)
    model_class: ClassVar[str] = "AutoModelForCausalLM"


class MiniCPMV(HFVisionLanguageModel):
    """MiniCPM-V 4.6 (the transformers-native class); the remote-code MiniCPM-V releases run with
    ``trust_remote_code=true`` through :mod:`lmms_eval.models.hf.remote`."""

    model_id: ClassVar[str | None] = "minicpm_v"
    model_types: ClassVar[tuple[str, ...]] = ("minicpmv4_6",)

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        """With ``trust_remote_code=true``: the remote-code hook (MiniCPM-V 2.6 / 4 / 4.5)."""
        if kwargs.get("trust_remote_code") in (True, "true", "True", "1"):
            import inspect

            from lmms_eval.models.hf.remote import MiniCPMVChat, MiniCPMVChatSimple

            remote = MiniCPMVChatSimple if cls.is_simple else MiniCPMVChat
            accepted = inspect.signature(remote.__init__).parameters
            unknown = sorted(set(kwargs) - set(accepted))
            if unknown:
                raise ModelArgsError(
                    f"minicpm_v with trust_remote_code=true takes no argument {', '.join(unknown)}; "
                    f"it takes {', '.join(k for k in accepted if k != 'self')}"
                )
            return remote(*args, **kwargs)
        return super().__new__(cls)


class Fuyu(HFVisionLanguageModel):
    """Fuyu; the checkpoints ship no chat template: the prompt is the question and a newline."""

    model_id: ClassVar[str | None] = "fuyu"
    default_pretrained: ClassVar[str | None] = "adept/fuyu-8b"
    model_types: ClassVar[tuple[str, ...]] = ("fuyu",)
    model_class: ClassVar[str] = "FuyuForCausalLM"
    default_chat_template: ClassVar[str | None] = FUYU_TEMPLATE

    def _load_processor(
        self,
        trust_remote_code: bool,
        chat_template: str | None,
        max_pixels: int | None,
        min_pixels: int | None,
    ) -> Any:
        from lmms_eval.models.hf.compat import fix_fuyu_patchify

        processor = super()._load_processor(trust_remote_code, chat_template, max_pixels, min_pixels)
        fix_fuyu_patchify(processor)
        return processor


class Ovis2(HFVisionLanguageModel):
    """Ovis2 (the transformers-native class and its ``-hf`` conversions); the remote-code Ovis
    releases (Ovis2 originals, Ovis2.5, Ovis-U1) have no hook here."""

    model_id: ClassVar[str | None] = "ovis2"
    default_pretrained: ClassVar[str | None] = "thisisiron/Ovis2-1B-hf"
    model_types: ClassVar[tuple[str, ...]] = ("ovis2",)


class Aria(HFVisionLanguageModel):
    """Aria (the transformers-native class)."""

    model_id: ClassVar[str | None] = "aria"
    default_pretrained: ClassVar[str | None] = "rhymes-ai/Aria"
    model_types: ClassVar[tuple[str, ...]] = ("aria",)


# -- the simple variants (``--force_simple``): the same family, given the context string -----------


class LlavaOneVisionSimple(LlavaOneVision):
    is_simple = True


class LlavaNextVideoSimple(LlavaNextVideo):
    is_simple = True


class VideoLlavaSimple(VideoLlava):
    is_simple = True


class Gemma3Simple(Gemma3):
    is_simple = True


class Idefics2Simple(Idefics2):
    is_simple = True


class LlamaVisionSimple(LlamaVision):
    is_simple = True


class InstructBlipSimple(InstructBlip):
    is_simple = True


class PaliGemmaSimple(PaliGemma):
    is_simple = True


class Glm4vSimple(Glm4v):
    is_simple = True


class Mistral3VLSimple(Mistral3VL):
    is_simple = True


class Qwen3_5Simple(Qwen3_5):
    is_simple = True


class Phi4MultimodalSimple(Phi4Multimodal):
    is_simple = True


class MiniCPMVSimple(MiniCPMV):
    is_simple = True


class FuyuSimple(Fuyu):
    is_simple = True


class Ovis2Simple(Ovis2):
    is_simple = True


class AriaSimple(Aria):
    is_simple = True


FAMILY_CLASSES: dict[str, tuple[type[HFVisionLanguageModel], type[HFVisionLanguageModel]]] = {
    "llava_onevision": (LlavaOneVision, LlavaOneVisionSimple),
    "llava_next_video": (LlavaNextVideo, LlavaNextVideoSimple),
    "video_llava": (VideoLlava, VideoLlavaSimple),
    "gemma3": (Gemma3, Gemma3Simple),
    "idefics2": (Idefics2, Idefics2Simple),
    "llama_vision": (LlamaVision, LlamaVisionSimple),
    "instructblip": (InstructBlip, InstructBlipSimple),
    "paligemma": (PaliGemma, PaliGemmaSimple),
    "glm4v": (Glm4v, Glm4vSimple),
    "mistral3_vl": (Mistral3VL, Mistral3VLSimple),
    "qwen3_5": (Qwen3_5, Qwen3_5Simple),
    "phi4_multimodal": (Phi4Multimodal, Phi4MultimodalSimple),
    "minicpm_v": (MiniCPMV, MiniCPMVSimple),
    "fuyu": (Fuyu, FuyuSimple),
    "ovis2": (Ovis2, Ovis2Simple),
    "aria": (Aria, AriaSimple),
}
"""Published id -> (chat class, simple class) of the families here."""

__all__ = ["FAMILY_CLASSES", "FUYU_TEMPLATE", "PALIGEMMA_TEMPLATE", "TEXT_ONLY_TEMPLATE"]
