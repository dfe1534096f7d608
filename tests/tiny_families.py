"""Tiny random checkpoints of the transformers families with a family hook, built offline.

``build(family, folder)`` writes a randomly initialised model of a few hundred thousand
parameters, its processor and a byte-level BPE tokenizer (trained once per process on the local
corpus of :mod:`lmms_eval.models.hf.tiny`) in the layout of a hub checkpoint, so the family's
backend loads it as it would a released one. Families whose released checkpoints ship no chat
template (InstructBLIP, PaliGemma, Fuyu) are saved without one here too.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from typing import Any

from lmms_eval.models.hf.tiny import IDEFICS_TEMPLATE, LLAVA_TEMPLATE, QWEN_TEMPLATE, default_corpus

SPECIAL = [
    "<pad>", "<s>", "</s>", "<image>", "<video>", "<bos>", "<eos>",
    "<start_of_image>", "<end_of_image>", "<image_soft_token>", "<start_of_turn>", "<end_of_turn>",
    "<|image|>", "<|begin_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>",
    "<|finetune_right_pad_id|>", "<fake_token_around_image>", "<end_of_utterance>",
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
    "<|image_pad|>", "<|video_pad|>", "<|begin_of_image|>", "<|end_of_image|>", "<|video|>",
    "<|begin_of_video|>", "<|end_of_video|>", "[IMG]", "[IMG_BREAK]", "[IMG_END]", "[INST]", "[/INST]",
    "<img>", "</img>", "<IMG_CONTEXT>", "<|img|>", "|SPEAKER|", "|NEWLINE|", "<|AUDIO|>",
    "<|audio_bos|>", "<|audio_eos|>", "<|user|>", "<|assistant|>",
]  # fmt: skip

GEMMA_TEMPLATE = (
    "<bos>{% for message in messages %}<start_of_turn>{{ 'model' if message['role'] == 'assistant' else 'user' }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<start_of_image>{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<end_of_turn>\n{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)
MLLAMA_TEMPLATE = (
    "<|begin_of_text|>{% for message in messages %}<|start_header_id|>{{ message['role'] }}<|end_header_id|>\n\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<|image|>{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|eot_id|>{% endfor %}"
    "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)
MISTRAL_TEMPLATE = (
    "<s>{% for message in messages %}{% if message['role'] == 'user' %}[INST]"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}[IMG]{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}[/INST]{% else %}{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}{% if part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}</s>{% endif %}{% endfor %}"
)
GLM_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|>\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<|begin_of_image|><|image|><|end_of_image|>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
INTERNVL_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<IMG_CONTEXT>\n{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
ARIA_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<fim_prefix><|img|><fim_suffix>{% elif part['type'] == 'text' %}"
    "{{ part['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
AUDIO_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'audio' %}Audio: <|audio_bos|><|AUDIO|><|audio_eos|>\n"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@functools.cache
def _base_tokenizer() -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=1024,
        special_tokens=[*SPECIAL, "<fim_prefix>", "<fim_suffix>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(default_corpus(sentences=800), trainer=trainer)
    return tokenizer


def tokenizer(pad: str, eos: str, bos: str | None = None, template: str | None = None, **extra: Any) -> Any:
    """A fast tokenizer over the shared BPE model with the family's roles and chat template."""
    from transformers import PreTrainedTokenizerFast

    roles = {"pad_token": pad, "eos_token": eos, **({"bos_token": bos} if bos else {})}
    fast = PreTrainedTokenizerFast(
        tokenizer_object=copy.deepcopy(_base_tokenizer()),
        padding_side="left",
        extra_special_tokens=[t for t in SPECIAL if t not in roles.values()],
        **roles,
        **extra,
    )
    if template:
        fast.chat_template = template
    return fast


def text_config(tok: Any, **extra: Any) -> dict[str, Any]:
    return {
        "vocab_size": len(tok),
        "bos_token_id": tok.bos_token_id,
        "eos_token_id": tok.eos_token_id,
        "pad_token_id": tok.pad_token_id,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "max_position_embeddings": 4096,
        "tie_word_embeddings": False,
        **extra,
    }


def _id(tok: Any, token: str) -> int:
    return int(tok.convert_tokens_to_ids(token))


CLIP = {"model_type": "clip_vision_model", "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
        "num_attention_heads": 2, "image_size": 64, "patch_size": 16}  # fmt: skip
SIGLIP = {"model_type": "siglip_vision_model", "hidden_size": 32, "intermediate_size": 64,
          "num_hidden_layers": 2, "num_attention_heads": 2, "image_size": 64, "patch_size": 16}  # fmt: skip


def _clip_processor(size: int = 64) -> Any:
    from transformers import CLIPImageProcessorPil

    return CLIPImageProcessorPil(size={"shortest_edge": size}, crop_size={"height": size, "width": size})


# -- the families ------------------------------------------------------------------------------------


def _llava_onevision() -> tuple[Any, Any]:
    import transformers

    from lmms_eval.models.hf.compat import register_no_video_processors

    tok = tokenizer("<pad>", "</s>", "<s>", LLAVA_TEMPLATE)
    config = transformers.LlavaOnevisionConfig(
        vision_config=SIGLIP, text_config={"model_type": "qwen2", **text_config(tok)},
        image_token_index=_id(tok, "<image>"), video_token_index=_id(tok, "<video>"),
        image_grid_pinpoints=[[64, 64], [64, 128], [128, 64]], vision_feature_select_strategy="full",
        vision_feature_layer=-1, vision_aspect_ratio="anyres_max_1",
    )  # fmt: skip
    model = transformers.LlavaOnevisionForConditionalGeneration(config)
    image_processor = transformers.LlavaOnevisionImageProcessorPil(
        size={"height": 64, "width": 64}, image_grid_pinpoints=[[64, 64], [64, 128], [128, 64]]
    )
    processor = register_no_video_processors()["LlavaOnevisionProcessor"](
        image_processor=image_processor, tokenizer=tok, num_image_tokens=16,
        vision_feature_select_strategy="full", chat_template=LLAVA_TEMPLATE, vision_aspect_ratio="anyres_max_1",
    )  # fmt: skip
    return model, processor


def _llava_next_video() -> tuple[Any, Any]:
    import transformers

    from lmms_eval.models.hf.compat import register_no_video_processors

    tok = tokenizer("<pad>", "</s>", "<s>", LLAVA_TEMPLATE)
    config = transformers.LlavaNextVideoConfig(
        vision_config=CLIP, text_config={"model_type": "llama", **text_config(tok)},
        image_token_index=_id(tok, "<image>"), video_token_index=_id(tok, "<video>"),
        image_grid_pinpoints=[[64, 64], [64, 128]], vision_feature_select_strategy="default",
        vision_feature_layer=-1, spatial_pool_stride=2,
    )  # fmt: skip
    model = transformers.LlavaNextVideoForConditionalGeneration(config)
    image_processor = transformers.LlavaNextImageProcessorPil(
        size={"shortest_edge": 64}, crop_size={"height": 64, "width": 64},
        image_grid_pinpoints=[[64, 64], [64, 128]],
    )  # fmt: skip
    processor = register_no_video_processors()["LlavaNextVideoProcessor"](
        image_processor=image_processor, tokenizer=tok, patch_size=16, vision_feature_select_strategy="default",
        num_additional_image_tokens=1, chat_template=LLAVA_TEMPLATE,
    )  # fmt: skip
    return model, processor


def _video_llava() -> tuple[Any, Any]:
    import transformers

    from lmms_eval.models.hf.compat import register_no_video_processors

    tok = tokenizer("<pad>", "</s>", "<s>", LLAVA_TEMPLATE)
    config = transformers.VideoLlavaConfig(
        vision_config=CLIP, text_config={"model_type": "llama", **text_config(tok)},
        image_token_index=_id(tok, "<image>"), video_token_index=_id(tok, "<video>"),
        vision_feature_select_strategy="default", vision_feature_layer=-1, image_seq_length=16,
    )  # fmt: skip
    model = transformers.VideoLlavaForConditionalGeneration(config)
    processor = register_no_video_processors()["VideoLlavaProcessor"](
        image_processor=_clip_processor(), tokenizer=tok, patch_size=16,
        vision_feature_select_strategy="default", num_additional_image_tokens=1, chat_template=LLAVA_TEMPLATE,
    )  # fmt: skip
    return model, processor


def _gemma3() -> tuple[Any, Any]:
    import transformers

    tok = tokenizer(
        "<pad>", "<end_of_turn>", "<bos>", GEMMA_TEMPLATE,
        model_specific_special_tokens={"image_token": "<image_soft_token>", "boi_token": "<start_of_image>",
                                       "eoi_token": "<end_of_image>"},
    )  # fmt: skip
    config = transformers.Gemma3Config(
        text_config={"model_type": "gemma3_text", **text_config(tok), "sliding_window": 64},
        vision_config=SIGLIP, mm_tokens_per_image=4, boi_token_index=_id(tok, "<start_of_image>"),
        eoi_token_index=_id(tok, "<end_of_image>"), image_token_index=_id(tok, "<image_soft_token>"),
    )  # fmt: skip
    model = transformers.Gemma3ForConditionalGeneration(config)
    image_processor = transformers.Gemma3ImageProcessorPil(size={"height": 64, "width": 64})
    processor = transformers.Gemma3Processor(image_processor, tok, GEMMA_TEMPLATE, image_seq_length=4)
    return model, processor


def _idefics2() -> tuple[Any, Any]:
    import transformers

    template = IDEFICS_TEMPLATE.replace("{{ bos }}", "<s>")
    tok = tokenizer("<pad>", "<end_of_utterance>", "<s>", template)
    config = transformers.Idefics2Config(
        vision_config={k: v for k, v in SIGLIP.items() if k != "model_type"},
        perceiver_config={"hidden_size": 64, "resampler_n_latents": 4, "resampler_depth": 1, "resampler_n_heads": 2,
                          "resampler_head_dim": 8, "num_key_value_heads": 1},
        text_config={"model_type": "mistral", **text_config(tok)}, image_token_id=_id(tok, "<image>"),
    )  # fmt: skip
    model = transformers.Idefics2ForConditionalGeneration(config)
    image_processor = transformers.Idefics2ImageProcessorPil(
        do_image_splitting=False, size={"shortest_edge": 64, "longest_edge": 64}
    )
    processor = transformers.Idefics2Processor(image_processor, tok, image_seq_len=4, chat_template=template)
    return model, processor


def _llama_vision() -> tuple[Any, Any]:
    import transformers

    tok = tokenizer("<|finetune_right_pad_id|>", "<|eot_id|>", "<|begin_of_text|>", MLLAMA_TEMPLATE)
    config = transformers.MllamaConfig(
        vision_config={"hidden_size": 32, "num_hidden_layers": 2, "num_global_layers": 1, "attention_heads": 2,
                       "intermediate_size": 64, "vision_output_dim": 64, "image_size": 32, "patch_size": 16,
                       "max_num_tiles": 2, "intermediate_layers_indices": [0],
                       "supported_aspect_ratios": [[1, 1], [1, 2], [2, 1]]},
        text_config={**text_config(tok), "cross_attention_layers": [1]}, image_token_index=_id(tok, "<|image|>"),
    )  # fmt: skip
    model = transformers.MllamaForConditionalGeneration(config)
    image_processor = transformers.MllamaImageProcessorPil(
        size={"height": 32, "width": 32}, max_image_tiles=2
    )
    processor = transformers.MllamaProcessor(image_processor, tok, chat_template=MLLAMA_TEMPLATE)
    return model, processor


def _instructblip() -> tuple[Any, Any]:
    import transformers

    tok = tokenizer("<pad>", "</s>", "<s>")  # InstructBLIP checkpoints ship no chat template
    qformer_tok = tokenizer("<pad>", "</s>", "<s>")
    qformer_tok.padding_side = "right"  # a BERT-style tokenizer: absolute positions
    config = transformers.InstructBlipConfig(
        vision_config={k: v for k, v in CLIP.items() if k != "model_type"},
        qformer_config={"vocab_size": len(qformer_tok), "hidden_size": 32, "num_hidden_layers": 2,
                        "num_attention_heads": 2, "intermediate_size": 64, "encoder_hidden_size": 32,
                        "max_position_embeddings": 512, "pad_token_id": qformer_tok.pad_token_id},
        text_config={"model_type": "llama", **text_config(tok)}, num_query_tokens=4,
        image_token_index=_id(tok, "<image>"),
    )  # fmt: skip
    model = transformers.InstructBlipForConditionalGeneration(config)
    image_processor = transformers.BlipImageProcessorPil(size={"height": 64, "width": 64})
    processor = transformers.InstructBlipProcessor(image_processor, tok, qformer_tok, num_query_tokens=4)
    return model, processor


def _paligemma() -> tuple[Any, Any]:
    import transformers

    tok = tokenizer("<pad>", "<eos>", "<bos>")  # PaliGemma checkpoints ship no chat template
    config = transformers.PaliGemmaConfig(
        vision_config={**SIGLIP, "projection_dim": 64},
        text_config={"model_type": "gemma", **text_config(tok)}, image_token_index=_id(tok, "<image>"),
        projection_dim=64, hidden_size=64,
    )  # fmt: skip
    model = transformers.PaliGemmaForConditionalGeneration(config)
    image_processor = transformers.SiglipImageProcessorPil(size={"height": 64, "width": 64})
    setattr(image_processor, "image_seq_length", 16)  # noqa: B010 - read by PaliGemmaProcessor
    processor = transformers.PaliGemmaProcessor(image_processor=image_processor, tokenizer=tok)
    return model, processor


def _glm4v() -> tuple[Any, Any]:
    import transformers

    from lmms_eval.models.hf.compat import register_no_video_processors

    tok = tokenizer("<|endoftext|>", "<|endoftext|>", None, GLM_TEMPLATE)
    rope = {
        "rope_type": "default",
        "rope_theta": 10000.0,
        "mrope_section": [1, 1, 2],
        "partial_rotary_factor": 0.5,
    }
    config = transformers.Glm4vConfig(
        text_config={**text_config(tok), "rope_parameters": rope},
        vision_config={"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "out_hidden_size": 64,
                       "image_size": 56, "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2},
        image_token_id=_id(tok, "<|image|>"), video_token_id=_id(tok, "<|video|>"),
        image_start_token_id=_id(tok, "<|begin_of_image|>"), image_end_token_id=_id(tok, "<|end_of_image|>"),
        video_start_token_id=_id(tok, "<|begin_of_video|>"), video_end_token_id=_id(tok, "<|end_of_video|>"),
    )  # fmt: skip
    model = transformers.Glm4vForConditionalGeneration(config)
    image_processor = transformers.Glm4vImageProcessorPil(
        patch_size=14,
        merge_size=2,
        temporal_patch_size=2,
        size={"shortest_edge": 56 * 56, "longest_edge": 112 * 112},
    )
    processor = register_no_video_processors()["Glm4vProcessor"](
        image_processor=image_processor, tokenizer=tok, chat_template=GLM_TEMPLATE
    )
    return model, processor


def _mistral3_vl() -> tuple[Any, Any]:
    import transformers

    tok = tokenizer("<pad>", "</s>", "<s>", MISTRAL_TEMPLATE)
    config = transformers.Mistral3Config(
        vision_config={"model_type": "pixtral", "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
                       "num_attention_heads": 2, "image_size": 64, "patch_size": 16, "head_dim": 16},
        text_config={"model_type": "mistral", **text_config(tok)}, image_token_index=_id(tok, "[IMG]"),
        spatial_merge_size=2, vision_feature_layer=-1,
    )  # fmt: skip
    model = transformers.Mistral3ForConditionalGeneration(config)
    image_processor = transformers.PixtralImageProcessorPil(size={"longest_edge": 64}, patch_size=16)
    processor = transformers.PixtralProcessor(
        image_processor=image_processor, tokenizer=tok, patch_size=16, spatial_merge_size=2,
        image_token="[IMG]", image_break_token="[IMG_BREAK]", image_end_token="[IMG_END]", chat_template=MISTRAL_TEMPLATE,
    )  # fmt: skip
    return model, processor


def _qwen3_5(moe: bool = False) -> tuple[Any, Any]:
    import transformers

    from lmms_eval.models.hf.compat import register_no_video_processors

    tok = tokenizer("<|endoftext|>", "<|im_end|>", None, QWEN_TEMPLATE)
    rope = {
        "rope_type": "default",
        "rope_theta": 10000.0,
        "mrope_section": [2, 3, 3],
        "mrope_interleaved": True,
        "partial_rotary_factor": 1.0,
    }
    text = {
        **text_config(tok),
        "rope_parameters": rope,
        "layer_types": ["linear_attention", "full_attention"],
        "linear_conv_kernel_dim": 2,
        "linear_key_head_dim": 8,
        "linear_value_head_dim": 8,
        "linear_num_key_heads": 2,
        "linear_num_value_heads": 2,
    }
    if moe:
        text.update(
            moe_intermediate_size=32, shared_expert_intermediate_size=32, num_experts=2, num_experts_per_tok=1
        )
    ids = {
        "image_token_id": _id(tok, "<|image_pad|>"),
        "video_token_id": _id(tok, "<|video_pad|>"),
        "vision_start_token_id": _id(tok, "<|vision_start|>"),
        "vision_end_token_id": _id(tok, "<|vision_end|>"),
    }
    vision = {
        "depth": 2,
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_heads": 2,
        "out_hidden_size": 64,
        "patch_size": 16,
        "num_position_embeddings": 256,
        "spatial_merge_size": 2,
        "temporal_patch_size": 2,
    }
    config_class: Any = transformers.Qwen3_5MoeConfig if moe else transformers.Qwen3_5Config
    config = config_class(text_config=text, vision_config=vision, **ids)
    model_class: Any = (
        transformers.Qwen3_5MoeForConditionalGeneration
        if moe
        else transformers.Qwen3_5ForConditionalGeneration
    )
    model = model_class(config)
    image_processor = transformers.Qwen2VLImageProcessorPil(
        patch_size=16, merge_size=2, temporal_patch_size=2, min_pixels=32 * 32, max_pixels=64 * 64
    )
    processor = register_no_video_processors()["Qwen3VLProcessor"](
        image_processor=image_processor, tokenizer=tok, chat_template=QWEN_TEMPLATE
    )
    return model, processor


def _internvl_hf() -> tuple[Any, Any]:
    import transformers

    from lmms_eval.models.hf.compat import register_no_video_processors

    tok = tokenizer(
        "<|endoftext|>", "<|im_end|>", None, INTERNVL_TEMPLATE,
        model_specific_special_tokens={"start_image_token": "<img>", "end_image_token": "</img>",
                                       "context_image_token": "<IMG_CONTEXT>", "video_token": "<video>"},
    )  # fmt: skip
    config = transformers.InternVLConfig(
        vision_config={"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64,
                       "image_size": [64, 64], "patch_size": [16, 16]},
        text_config={"model_type": "qwen2", **text_config(tok)}, image_token_id=_id(tok, "<IMG_CONTEXT>"),
        image_seq_length=4, downsample_ratio=0.5,
    )  # fmt: skip
    model = transformers.InternVLForConditionalGeneration(config)
    image_processor = transformers.GotOcr2ImageProcessorPil(
        size={"height": 64, "width": 64}, crop_to_patches=False
    )
    processor = register_no_video_processors()["InternVLProcessor"](
        image_processor=image_processor, tokenizer=tok, image_seq_length=4, chat_template=INTERNVL_TEMPLATE
    )
    return model, processor


FUYU_MARKERS = ("|SPEAKER|", "|NEWLINE|")
# GPT-2's pre-tokenizer pattern, with Fuyu's image markers as whole pieces and the space before one
# as a piece of its own
_GPT2_PATTERN = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
_FUYU_PATTERN = r" (?=\|SPEAKER\||\|NEWLINE\|)|\|SPEAKER\||\|NEWLINE\||" + _GPT2_PATTERN


def fuyu_tokenizer() -> Any:
    """The shared BPE model behaving as Fuyu's released tokenizer where the processor relies on it:
    ``|SPEAKER|`` and ``|NEWLINE|`` are ordinary vocabulary pieces (not added tokens), and every
    text gets a leading space that the image markers do not absorb, so the image part's encoding
    starts with a piece of its own, the one the processor strips (sentencepiece's dummy prefix);
    with special tokens, encodings start with BOS."""
    import json

    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    spec = json.loads(_base_tokenizer().to_str())
    spec["added_tokens"] = [t for t in spec["added_tokens"] if t["content"] not in FUYU_MARKERS]
    spec["model"]["ignore_merges"] = True  # a marker is one vocabulary piece, not a chain of merges
    spec["normalizer"] = {"type": "Prepend", "prepend": " "}
    spec["pre_tokenizer"] = {
        "type": "Sequence",
        "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": _FUYU_PATTERN}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
        ],
    }
    spec["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
        "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
        "special_tokens": {"<s>": {"id": "<s>", "ids": [SPECIAL.index("<s>")], "tokens": ["<s>"]}},
    }
    roles = {"pad_token": "<pad>", "eos_token": "</s>", "bos_token": "<s>"}
    return PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer.from_str(json.dumps(spec)),
        padding_side="left",
        extra_special_tokens=[t for t in SPECIAL if t not in (*roles.values(), *FUYU_MARKERS)],
        **roles,
    )


def _fuyu() -> tuple[Any, Any]:
    import transformers

    tok = fuyu_tokenizer()  # Fuyu checkpoints ship no chat template
    assert tok.convert_ids_to_tokens(tok("|SPEAKER||NEWLINE|", add_special_tokens=False)["input_ids"]) == [
        "Ġ",
        *FUYU_MARKERS,
    ], "the tiny Fuyu tokenizer must start the image part with a piece of its own"
    config = transformers.FuyuConfig(
        text_config={"model_type": "persimmon", **{k: v for k, v in text_config(tok).items() if k != "head_dim"},
                     "num_key_value_heads": 4},
        image_size=32, patch_size=16, image_token_id=_id(tok, "|SPEAKER|"),
    )  # fmt: skip
    model = transformers.FuyuForCausalLM(config)
    image_processor = transformers.FuyuImageProcessorPil(
        size={"height": 64, "width": 64}, patch_size={"height": 16, "width": 16}
    )
    processor = transformers.FuyuProcessor(image_processor=image_processor, tokenizer=tok)
    return model, processor


OVIS_TEMPLATE = INTERNVL_TEMPLATE.replace("<IMG_CONTEXT>", "<image>")
OVIS_MARKERS = ("<IMG_ATOM>", "<IMG_START>", "<IMG_GRID>", "<IMG_COL>", "<IMG_ROW>", "<IMG_END>")


def _ovis2() -> tuple[Any, Any]:
    import transformers

    tok = tokenizer("<|endoftext|>", "<|im_end|>", None, OVIS_TEMPLATE)
    tok.add_tokens(list(OVIS_MARKERS), special_tokens=True)
    config = transformers.Ovis2Config(
        vision_config={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
                       "image_size": 32, "patch_size": 16, "vocab_size": 37, "hidden_stride": 1},
        text_config={"model_type": "qwen2", **text_config(tok)}, image_token_id=_id(tok, "<IMG_ATOM>"),
        visual_indicator_token_ids=[_id(tok, m) for m in OVIS_MARKERS[1:]], vocab_size=len(tok), hidden_size=64,
    )  # fmt: skip
    model = transformers.Ovis2ForConditionalGeneration(config)
    image_processor = transformers.Ovis2ImageProcessorPil(
        size={"height": 32, "width": 32}, crop_to_patches=False
    )
    processor = transformers.Ovis2Processor(
        image_processor=image_processor, tokenizer=tok, chat_template=OVIS_TEMPLATE, image_seq_length=4
    )
    return model, processor


def _aria() -> tuple[Any, Any]:
    import transformers

    tok = tokenizer(
        "<|endoftext|>",
        "<|im_end|>",
        None,
        ARIA_TEMPLATE,
        model_specific_special_tokens={"image_token": "<|img|>"},
    )
    config = transformers.AriaConfig(
        vision_config={"model_type": "idefics3_vision", "hidden_size": 32, "intermediate_size": 64,
                       "num_hidden_layers": 2, "num_attention_heads": 2, "image_size": 980, "patch_size": 70},
        text_config={"model_type": "aria_text", **text_config(tok), "moe_num_experts": 2, "moe_topk": 1,
                     "moe_num_shared_experts": 1},
        projector_patch_to_query_dict={196: 4}, image_token_index=_id(tok, "<|img|>"),
    )  # fmt: skip
    model = transformers.AriaForConditionalGeneration(config)
    # the processor asks for 980-pixel images whatever the image processor says: 14 x 14 patches of 70
    image_processor = transformers.AriaImageProcessorPil(split_image=False)
    processor = transformers.AriaProcessor(
        image_processor=image_processor, tokenizer=tok, chat_template=ARIA_TEMPLATE, size_conversion={980: 4}
    )
    return model, processor


FAMILIES: dict[str, Callable[[], tuple[Any, Any]]] = {
    "llava_onevision": _llava_onevision,
    "llava_next_video": _llava_next_video,
    "video_llava": _video_llava,
    "gemma3": _gemma3,
    "idefics2": _idefics2,
    "llama_vision": _llama_vision,
    "instructblip": _instructblip,
    "paligemma": _paligemma,
    "glm4v": _glm4v,
    "mistral3_vl": _mistral3_vl,
    "qwen3_5": _qwen3_5,
    "qwen3_5_moe": functools.partial(_qwen3_5, moe=True),
    "internvl_hf": _internvl_hf,
    "fuyu": _fuyu,
    "ovis2": _ovis2,
    "aria": _aria,
}


def build(family: str, folder: str, seed: int = 0) -> str:
    """Write the tiny checkpoint of ``family`` to ``folder``; returns the folder."""
    import torch
    from transformers import GenerationConfig

    torch.manual_seed(seed)
    model, processor = FAMILIES[family]()
    tok = processor.tokenizer
    model.generation_config = GenerationConfig(
        eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, do_sample=False
    )
    model.eval()
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


# -- Phi-3.5-vision: a remote-code checkpoint (its own configuration, modeling and processing code) --

PHI3V_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|>\n{{ message['content'] }}<|end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
PHI3V_CONFIGURATION = """
from transformers import PretrainedConfig


class TinyPhi3VConfig(PretrainedConfig):
    model_type = "phi3_v"

    def __init__(self, vocab_size=1024, hidden_size=16, **kwargs):
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        super().__init__(**kwargs)
"""
# The processor of the model card's interface: one prompt whose <|image_k|> placeholders become
# -k image positions (as the released processor writes them), pixel_values of shape (images,
# 1 + num_crops, 3, size, size) and image_sizes.
PHI3V_PROCESSING = """
import re

import numpy as np
import torch
from transformers import AutoTokenizer
from transformers.feature_extraction_utils import BatchFeature

PLACEHOLDER = re.compile(r"(<\\|image_\\d+\\|>)")


class TinyPhi3VProcessor:
    tokens_per_image = 3

    def __init__(self, tokenizer, num_crops=4, size=8):
        self.tokenizer = tokenizer
        self.num_crops = num_crops
        self.size = size

    @classmethod
    def from_pretrained(cls, path, num_crops=4, trust_remote_code=False, **kwargs):
        tok = AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code)
        return cls(tok, num_crops=int(num_crops))

    @classmethod
    def register_for_auto_class(cls, auto_class="AutoProcessor"):
        pass

    def _views(self, image):
        image = image.convert("RGB")
        width, height = image.size
        views = [image.resize((self.size, self.size))]
        for k in range(self.num_crops):
            box = (k * width // self.num_crops, 0, (k + 1) * width // self.num_crops, height)
            views.append(image.crop(box).resize((self.size, self.size)))
        return torch.tensor(np.stack([np.asarray(v, np.float32).transpose(2, 0, 1) / 255.0 for v in views]))

    def __call__(self, text, images=None, return_tensors="pt"):
        if not isinstance(text, str):
            raise ValueError("the processor takes one prompt")
        images = list(images or [])
        numbers = [int(n) for n in re.findall(r"<\\|image_(\\d+)\\|>", text)]
        if sorted(numbers) != list(range(1, len(images) + 1)):
            raise ValueError(f"placeholders {numbers} do not match {len(images)} images")
        ids = []
        for piece in PLACEHOLDER.split(text):
            found = re.fullmatch(r"<\\|image_(\\d+)\\|>", piece)
            if found:
                ids += [-int(found.group(1))] * self.tokens_per_image
            elif piece:
                ids += self.tokenizer(piece, add_special_tokens=False)["input_ids"]
        data = {"input_ids": torch.tensor([ids]), "attention_mask": torch.ones(1, len(ids), dtype=torch.long)}
        if images:
            data["pixel_values"] = torch.stack([self._views(image) for image in images])
            data["image_sizes"] = torch.tensor([[image.height, image.width] for image in images])
        return BatchFeature(data, tensor_type=return_tensors)
"""
# A causal bag-of-embeddings language model: image positions (negative ids) take the image's
# features, so what the model says depends on the pixels it was given.
PHI3V_MODELING = """
import torch
from transformers import GenerationMixin, PreTrainedModel
from transformers.modeling_outputs import CausalLMOutputWithPast

from .configuration_phi3v import TinyPhi3VConfig


class TinyPhi3VForCausalLM(PreTrainedModel, GenerationMixin):
    config_class = TinyPhi3VConfig

    def __init__(self, config):
        super().__init__(config)
        self.embed = torch.nn.Embedding(config.vocab_size, config.hidden_size)
        self.vision = torch.nn.Linear(3, config.hidden_size)
        self.mix = torch.nn.Linear(config.hidden_size, config.hidden_size)
        self.head = torch.nn.Linear(config.hidden_size, config.vocab_size)
        self.post_init()

    def forward(self, input_ids, attention_mask=None, pixel_values=None, image_sizes=None, **kwargs):
        at_image = input_ids < 0
        embeds = self.embed(input_ids.clamp(min=0))
        if bool(at_image.any()):
            if pixel_values is None or image_sizes is None or int(-input_ids.min()) > pixel_values.shape[0]:
                raise ValueError("image positions without their pixel_values / image_sizes")
            features = self.vision(pixel_values.float().mean(dim=(-1, -2))).mean(dim=1) * 10
            embeds = torch.where(at_image[..., None], features[(-input_ids - 1).clamp(min=0)], embeds)
        mask = (torch.ones_like(input_ids) if attention_mask is None else attention_mask)[..., None].float()
        running = torch.cumsum(embeds * mask, dim=1) / mask.cumsum(dim=1).clamp(min=1)
        return CausalLMOutputWithPast(logits=self.head(torch.tanh(self.mix(running))))

    def prepare_inputs_for_generation(self, input_ids, attention_mask=None, pixel_values=None, image_sizes=None,
                                      **kwargs):
        return {"input_ids": input_ids, "attention_mask": attention_mask, "pixel_values": pixel_values,
                "image_sizes": image_sizes}
"""


def write_phi3v_checkpoint(folder: str, seed: int = 0) -> str:
    """A tiny Phi-3.5-vision-style remote-code checkpoint in ``folder``: ``configuration_phi3v.py``,
    ``modeling_phi3v.py`` and ``processing_phi3v.py`` named by ``auto_map`` (AutoConfig,
    AutoModelForCausalLM, AutoProcessor), random weights and a tokenizer with the chat template."""
    import json
    from pathlib import Path

    import torch

    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)
    for name, source in (("configuration", PHI3V_CONFIGURATION), ("modeling", PHI3V_MODELING),
                         ("processing", PHI3V_PROCESSING)):  # fmt: skip
        (root / f"{name}_phi3v.py").write_text(source, encoding="utf-8")
    tok = tokenizer("<|endoftext|>", "<|endoftext|>", None, PHI3V_TEMPLATE)
    tok.add_tokens(["<|user|>", "<|assistant|>", "<|system|>", "<|end|>"], special_tokens=True)
    tok.save_pretrained(folder)
    auto_map = {
        "AutoConfig": "configuration_phi3v.TinyPhi3VConfig",
        "AutoModelForCausalLM": "modeling_phi3v.TinyPhi3VForCausalLM",
        "AutoProcessor": "processing_phi3v.TinyPhi3VProcessor",
    }
    config = {"model_type": "phi3_v", "architectures": ["TinyPhi3VForCausalLM"], "auto_map": auto_map,
              "vocab_size": len(tok), "hidden_size": 16, "eos_token_id": tok.convert_tokens_to_ids("<|end|>"),
              "pad_token_id": tok.pad_token_id, "use_cache": False}  # fmt: skip
    (root / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (root / "preprocessor_config.json").write_text(
        json.dumps({"auto_map": {"AutoProcessor": auto_map["AutoProcessor"]}, "num_crops": 4}),
        encoding="utf-8",
    )
    generation = {"eos_token_id": config["eos_token_id"], "pad_token_id": tok.pad_token_id, "do_sample": False,
                  "use_cache": False}  # fmt: skip
    (root / "generation_config.json").write_text(json.dumps(generation), encoding="utf-8")
    torch.manual_seed(seed)
    weights = {
        "embed.weight": torch.randn(len(tok), 16),
        "vision.weight": torch.randn(16, 3), "vision.bias": torch.randn(16),
        "mix.weight": torch.randn(16, 16) / 4, "mix.bias": torch.zeros(16),
        "head.weight": torch.randn(len(tok), 16), "head.bias": torch.zeros(len(tok)),
    }  # fmt: skip
    import safetensors.torch

    safetensors.torch.save_file(weights, str(root / "model.safetensors"))
    return folder
