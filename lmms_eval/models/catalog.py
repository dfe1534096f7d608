"""The published package's model ids, and what each one does here.

:data:`PUBLISHED_MODEL_IDS` lists the 120 model ids the published ``lmms-eval`` 0.7.3 registers.
An id registered here (a built-in manifest, an alias or a plugin) runs; for the others
:data:`NOT_HERE` holds one line naming the nearest runnable id here, or the package or repository
the original backend needs. ``lmms-eval models --all`` prints every published id with its status;
:func:`published_status` is the one lookup.
"""

from __future__ import annotations

from dataclasses import dataclass

PUBLISHED_MODEL_IDS: tuple[str, ...] = (
    "aero", "aero_realtime_vllm", "aria", "async_hf_model", "async_openai", "audio_flamingo_3", "auroracap",
    "bagel", "bagel_lmms_engine", "bagel_umm", "bagel_unig2u", "baichuan_omni", "batch_gpt4", "cambrians",
    "cambrians_vsc", "cambrians_vsc_streaming", "cambrians_vsr", "claude", "cogvlm2", "cosmos_wm", "dummy",
    "egogpt", "fastvideo", "from_log", "fuyu", "gemini", "gemma3", "gemma4", "generation_api", "glm4v",
    "gpt4o_audio", "gpt4v", "huggingface", "idefics2", "illume_plus", "instructblip", "internvideo2",
    "internvideo2_5", "internvl", "internvl2", "internvl3", "internvl3_5", "internvl_hf", "kimi_audio",
    "lfm2_5_vl", "litellm", "llama4_scout", "llama_vid", "llama_vision", "llava", "llava_hf", "llava_onevision",
    "llava_onevision1_5", "llava_onevision2", "llava_onevision_moviechat", "llava_sglang", "llava_vid", "longva",
    "longvila", "ltx_video", "magi1_wm", "mantis", "minicpm_o", "minicpm_v", "minimonkey", "mistral3_vl", "mmada",
    "moviechat", "mplug_owl_video", "nanovlm", "neo_ov", "ola", "omnivinci", "openai", "oryx", "ovis_u1",
    "penguinvl", "phi3v", "phi4_multimodal", "plm", "qwen2_5_omni", "qwen2_5_vl", "qwen2_audio", "qwen2_vl",
    "qwen3_5", "qwen3_omni", "qwen3_vl", "qwen_image_edit", "qwen_vl", "qwen_vl_api", "reka", "ross", "sam3",
    "sglang", "slime", "srt_api", "thyme", "tinyllava", "uni_moe_2_omni", "videoChatGPT", "video_llava",
    "video_salmonn_2", "videochat2", "videochat_flash", "videollama3", "vila", "vita", "vllm", "vllm_generate",
    "vora", "vqtoken", "wan2_1_t2i", "wan2_1_t2v", "wan2_2", "wan2_2_t2v", "whisper", "whisper_tt",
    "whisper_vllm", "xcomposer2_4KHD", "xcomposer2d5",
)  # fmt: skip
"""The model ids of the published lmms-eval 0.7.3 (its simple and chat registries together)."""

_ORIGINAL_REPO = "needs its original repository (not on PyPI)"
_GENERATION = "an image/video generation or world model: not an evaluation backend here"

NOT_HERE: dict[str, str] = {
    "aero": "Aero-1-Audio: remote code without a chat() interface here; try qwen2_audio or qwen2_5_omni",
    "aero_realtime_vllm": "needs vLLM's realtime audio API; serve the model with vllm and use openai",
    "async_hf_model": "use huggingface (batched local generation) or vllm / sglang for concurrency",
    "audio_flamingo_3": "needs NVIDIA's audio-flamingo repository; nearest here: qwen2_audio",
    "auroracap": f"AuroraCap {_ORIGINAL_REPO}; nearest here: llava_onevision",
    "bagel": f"BAGEL {_ORIGINAL_REPO} (ByteDance-Seed/Bagel)",
    "bagel_lmms_engine": "needs lmms-engine (not on PyPI)",
    "bagel_umm": f"BAGEL {_ORIGINAL_REPO} (ByteDance-Seed/Bagel)",
    "bagel_unig2u": f"BAGEL {_ORIGINAL_REPO} (ByteDance-Seed/Bagel)",
    "baichuan_omni": "Baichuan-Omni remote code without a chat() hook here; nearest here: qwen2_5_omni",
    "batch_gpt4": "use openai with --model_args batch=true (OpenAI Batch API)",
    "cambrians": f"Cambrian-S {_ORIGINAL_REPO}",
    "cambrians_vsc": f"Cambrian-S {_ORIGINAL_REPO}",
    "cambrians_vsc_streaming": f"Cambrian-S {_ORIGINAL_REPO}",
    "cambrians_vsr": f"Cambrian-S {_ORIGINAL_REPO}",
    "cogvlm2": "CogVLM2 remote code (needs xformers) without a chat() hook here; nearest here: glm4v",
    "cosmos_wm": _GENERATION,
    "egogpt": f"EgoGPT {_ORIGINAL_REPO}",
    "fastvideo": f"{_GENERATION} (needs fastvideo)",
    "gemma4": "needs a transformers release with Gemma 4; nearest here: gemma3",
    "generation_api": f"{_GENERATION} (an image-generation API client)",
    "gpt4o_audio": "audio through the OpenAI API is not sent by openai here; nearest here: qwen2_audio",
    "illume_plus": f"ILLUME+ {_ORIGINAL_REPO}",
    "internvideo2": f"InternVideo2 {_ORIGINAL_REPO}",
    "internvideo2_5": "InternVideo2.5 remote code: try internvl2 with trust_remote_code=true (same chat() interface)",
    "internvl": "InternVL 1.x: use internvl2 with trust_remote_code=true (same chat() interface)",
    "kimi_audio": "needs MoonshotAI's Kimi-Audio repository; nearest here: qwen2_audio",
    "lfm2_5_vl": "LFM2.5-VL: run it through huggingface (AutoModelForImageTextToText) with a recent transformers",
    "litellm": "use openai (OpenAI-compatible) or the provider backends claude / gemini",
    "llama4_scout": "Llama 4: run it through huggingface (AutoModelForImageTextToText) on a GPU machine",
    "llama_vid": f"LLaMA-VID {_ORIGINAL_REPO}",
    "llava": "original LLaVA repository: use llava_hf with a converted checkpoint (llava-hf/llava-1.5-7b-hf)",
    "llava_onevision1_5": "LLaVA-OneVision-1.5 remote code without a hook here; nearest here: llava_onevision",
    "llava_onevision2": f"LLaVA-OneVision-2 {_ORIGINAL_REPO}; nearest here: llava_onevision",
    "llava_onevision_moviechat": f"{_ORIGINAL_REPO} (LLaVA-NeXT + MovieChat)",
    "llava_sglang": "use sglang (serves LLaVA checkpoints) or llava_hf",
    "llava_vid": "LLaVA-Video original repository: use llava_onevision with a converted checkpoint",
    "longva": f"LongVA {_ORIGINAL_REPO}; nearest here: llava_onevision",
    "longvila": f"LongVILA {_ORIGINAL_REPO} (NVlabs/VILA)",
    "ltx_video": _GENERATION,
    "magi1_wm": _GENERATION,
    "mantis": "needs the mantis-vl package from TIGER-AI-Lab's repository; nearest here: idefics2",
    "minicpm_o": "MiniCPM-o remote code: try minicpm_v with trust_remote_code=true (same chat() interface)",
    "minimonkey": f"MiniMonkey {_ORIGINAL_REPO}; nearest here: internvl2",
    "mmada": f"MMaDA {_ORIGINAL_REPO}",
    "moviechat": f"MovieChat {_ORIGINAL_REPO}",
    "mplug_owl_video": f"mPLUG-Owl video {_ORIGINAL_REPO}",
    "nanovlm": "needs huggingface/nanoVLM (not on PyPI)",
    "neo_ov": f"NEO {_ORIGINAL_REPO}",
    "ola": f"Ola {_ORIGINAL_REPO}",
    "omnivinci": "OmniVinci remote code without a hook here; nearest here: qwen2_5_omni",
    "oryx": f"Oryx {_ORIGINAL_REPO}",
    "ovis_u1": "Ovis-U1 remote code (understanding + image generation) without a hook here; nearest here: ovis2",
    "penguinvl": f"PenguinVL {_ORIGINAL_REPO}",
    "plm": "Perception LM: needs facebookresearch/perception_models; nearest here: huggingface",
    "qwen3_omni": "Qwen3-Omni: needs a transformers release with Qwen3-Omni; nearest here: qwen2_5_omni",
    "qwen_image_edit": _GENERATION,
    "qwen_vl": "Qwen-VL (1st generation) remote code without a hook here; nearest here: qwen2_vl",
    "qwen_vl_api": "use openai against DashScope's OpenAI-compatible endpoint (base_url=...)",
    "reka": "needs the reka-api SDK; no backend here",
    "ross": f"ROSS {_ORIGINAL_REPO}",
    "sam3": "a segmentation model: not a text-generation backend here",
    "slime": f"SliME {_ORIGINAL_REPO}",
    "srt_api": "use sglang, or openai against an SGLang server",
    "thyme": f"Thyme {_ORIGINAL_REPO}",
    "tinyllava": "needs the tinyllava package (TinyLLaVA_Factory); nearest here: llava_hf",
    "uni_moe_2_omni": f"Uni-MoE-2.0-Omni {_ORIGINAL_REPO}",
    "videoChatGPT": f"Video-ChatGPT {_ORIGINAL_REPO}",
    "video_salmonn_2": f"video-SALMONN 2 {_ORIGINAL_REPO}",
    "videochat2": f"VideoChat2 {_ORIGINAL_REPO}",
    "videochat_flash": "VideoChat-Flash remote code without a hook here; nearest here: llava_onevision",
    "videollama3": "VideoLLaMA3 remote code without a hook here; nearest here: qwen2_5_vl",
    "vila": f"VILA {_ORIGINAL_REPO} (NVlabs/VILA)",
    "vita": f"VITA {_ORIGINAL_REPO}",
    "vllm_generate": "use vllm",
    "vora": f"VoRA {_ORIGINAL_REPO}",
    "vqtoken": f"VQToken {_ORIGINAL_REPO}",
    "wan2_1_t2i": _GENERATION,
    "wan2_1_t2v": _GENERATION,
    "wan2_2": _GENERATION,
    "wan2_2_t2v": _GENERATION,
    "whisper_tt": "Whisper on Tenstorrent hardware: use whisper",
    "whisper_vllm": "use whisper, or vllm serving Whisper through openai",
    "xcomposer2_4KHD": "InternLM-XComposer2-4KHD remote code without a hook here; nearest here: internvl2",
    "xcomposer2d5": "InternLM-XComposer-2.5 remote code without a hook here; nearest here: internvl2",
}
"""Published id -> one line: what to run here instead, or what the original backend needs."""


@dataclass(frozen=True)
class PublishedStatus:
    """A published id here: ``model_id`` when it runs (resolves to a backend), else ``note``."""

    published_id: str
    model_id: str | None
    note: str

    @property
    def runs(self) -> bool:
        return self.model_id is not None


def published_status(published_id: str) -> PublishedStatus:
    """Whether ``published_id`` resolves here, and the one line for it when it does not."""
    from lmms_eval.errors import ModelNotFoundError
    from lmms_eval.models import ensure_registry

    registry = ensure_registry()
    try:
        model_id = registry.canonical_id(published_id)
    except ModelNotFoundError:
        return PublishedStatus(published_id, None, NOT_HERE.get(published_id, "no backend here"))
    manifest = registry.get_manifest(model_id)
    kinds = "+".join(
        k for k, p in (("chat", manifest.chat_class_path), ("simple", manifest.simple_class_path)) if p
    )
    alias = "" if model_id == published_id else f" (alias of {model_id})"
    return PublishedStatus(published_id, model_id, f"runs: {kinds}{alias}")


__all__ = ["NOT_HERE", "PUBLISHED_MODEL_IDS", "PublishedStatus", "published_status"]
