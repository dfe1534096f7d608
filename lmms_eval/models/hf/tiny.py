"""Tiny vision-language checkpoints built offline, for tests and the bundled demo model.

``build_tiny_vlm(family, folder)`` writes a randomly initialised model (about 2 MB), its processor
and a byte-level BPE tokenizer trained on a small local corpus, in the layout of a hub checkpoint,
so that ``AutoProcessor`` / ``AutoModelForImageTextToText`` load it like a real one. Needs the
``hf`` extra (torch, transformers, tokenizers).
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any

FAMILIES = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl", "llava", "idefics3", "smolvlm")

QWEN_SPECIAL = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
]
LLAVA_SPECIAL = ["<pad>", "<s>", "</s>", "<image>"]
IDEFICS_SPECIAL = [
    "<|finetune_right_pad_id|>",
    "<|begin_of_text|>",
    "<|end_of_text|>",
    "<end_of_utterance>",
    "<fake_token_around_image>",
    "<image>",
    "<global-img>",
    "<|im_start|>",
    *[f"<row_{i}_col_{j}>" for i in range(1, 7) for j in range(1, 7)],
]

QWEN_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif part['type'] == 'video' %}<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
LLAVA_TEMPLATE = (
    "{% for message in messages %}{% if message['role'] == 'system' %}"
    "{% for part in message['content'] %}{% if part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}\n"
    "{% elif message['role'] == 'user' %}USER: {% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}{% if part['type'] == 'image' %}<image>\n"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %} "
    "{% else %}ASSISTANT: {% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for part in message['content'] %}{% if part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}"
    "{% endif %}</s>{% endif %}{% endfor %}{% if add_generation_prompt %}ASSISTANT:{% endif %}"
)
IDEFICS_TEMPLATE = (
    "{{ bos }}{% for message in messages %}{{ message['role'] | capitalize }}:"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<image>{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<end_of_utterance>\n{% endfor %}{% if add_generation_prompt %}Assistant:{% endif %}"
)

_WORDS = [
    "the",
    "a",
    "an",
    "of",
    "to",
    "in",
    "is",
    "it",
    "what",
    "which",
    "how",
    "many",
    "where",
    "color",
    "colour",
    "shape",
    "answer",
    "question",
    "image",
    "picture",
    "red",
    "green",
    "blue",
    "yellow",
    "purple",
    "orange",
    "black",
    "white",
    "gray",
    "brown",
    "pink",
    "circle",
    "square",
    "triangle",
    "star",
    "shapes",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "zero",
    "left",
    "right",
    "top",
    "bottom",
    "middle",
    "center",
    "upper",
    "lower",
    "yes",
    "no",
    "with",
    "word",
    "number",
    "only",
    "using",
    "single",
    "phrase",
    "describe",
    "there",
    "are",
    "on",
    "at",
    "side",
    "count",
    "object",
    "objects",
]


def default_corpus(seed: int = 0, sentences: int = 4000) -> list[str]:
    """Deterministic synthetic text: the vocabulary of simple visual questions and answers."""
    rnd = random.Random(seed)
    lines = []
    for _ in range(sentences):
        n = rnd.randint(4, 14)
        words = [rnd.choice(_WORDS) for _ in range(n)]
        if rnd.random() < 0.3:
            words.append(str(rnd.randint(0, 99)))
        lines.append(" ".join(words).capitalize() + rnd.choice([".", "?", "!", ":"]))
    return lines


def build_tokenizer(family: str, corpus: Iterable[str] | None = None, vocab_size: int = 2048) -> Any:
    """A byte-level BPE tokenizer with the family's special tokens and chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    special = _special_tokens(family)
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=special,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(list(corpus) if corpus is not None else default_corpus(), trainer=trainer)
    roles = _family_roles(family)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        padding_side="left",
        extra_special_tokens=[t for t in special if t not in roles.values()],
        **roles,
    )
    fast.chat_template = _template(family)
    return fast


def _special_tokens(family: str) -> list[str]:
    if family.startswith("qwen"):
        return list(QWEN_SPECIAL)
    if family == "llava":
        return list(LLAVA_SPECIAL)
    if family in ("idefics3", "smolvlm"):
        return list(IDEFICS_SPECIAL)
    raise ValueError(f"unknown tiny model family '{family}'; choose from {', '.join(FAMILIES)}")


def _family_roles(family: str) -> dict[str, str]:
    if family.startswith("qwen"):
        return {"pad_token": "<|endoftext|>", "eos_token": "<|im_end|>"}
    if family == "llava":
        return {"pad_token": "<pad>", "bos_token": "<s>", "eos_token": "</s>"}
    bos = "<|begin_of_text|>" if family == "idefics3" else "<|im_start|>"
    return {"pad_token": "<|finetune_right_pad_id|>", "bos_token": bos, "eos_token": "<end_of_utterance>"}


def _template(family: str) -> str:
    if family.startswith("qwen"):
        return QWEN_TEMPLATE
    if family == "llava":
        return LLAVA_TEMPLATE
    bos = "<|begin_of_text|>" if family == "idefics3" else "<|im_start|>"
    return IDEFICS_TEMPLATE.replace("{{ bos }}", bos)


def _text_config(tokenizer: Any, **extra: Any) -> dict[str, Any]:
    return {
        "vocab_size": len(tokenizer),
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.pad_token_id,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 2048,
        "tie_word_embeddings": False,
        **extra,
    }


def _qwen(family: str, tokenizer: Any, image_size: int) -> tuple[Any, Any]:
    import transformers
    from transformers import Qwen2VLImageProcessorPil

    from lmms_eval.models.hf.compat import register_no_video_processors

    ids = {name: tokenizer.convert_tokens_to_ids(tok) for name, tok in (
        ("image_token_id", "<|image_pad|>"),
        ("video_token_id", "<|video_pad|>"),
        ("vision_start_token_id", "<|vision_start|>"),
        ("vision_end_token_id", "<|vision_end|>"),
    )}  # fmt: skip
    rope: dict[str, Any] = {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3]}
    patch = 16 if family == "qwen3_vl" else 14
    if family == "qwen2_vl":
        config = transformers.Qwen2VLConfig(
            text_config=_text_config(tokenizer, rope_parameters=rope),
            vision_config={"depth": 2, "embed_dim": 32, "hidden_size": 64, "mlp_ratio": 2, "num_heads": 2,
                           "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2},
            **ids,
        )  # fmt: skip
        model = transformers.Qwen2VLForConditionalGeneration(config)
    elif family == "qwen2_5_vl":
        config = transformers.Qwen2_5_VLConfig(
            text_config=_text_config(tokenizer, rope_parameters=rope),
            vision_config={"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "out_hidden_size": 64,
                           "window_size": 112, "fullatt_block_indexes": [1], "patch_size": 14,
                           "spatial_merge_size": 2, "temporal_patch_size": 2},
            **ids,
        )  # fmt: skip
        model = transformers.Qwen2_5_VLForConditionalGeneration(config)
    else:
        config = transformers.Qwen3VLConfig(
            text_config=_text_config(tokenizer, head_dim=16, rope_parameters={**rope, "mrope_interleaved": True}),
            vision_config={"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "out_hidden_size": 64,
                           "patch_size": 16, "num_position_embeddings": 256, "deepstack_visual_indexes": [1],
                           "spatial_merge_size": 2, "temporal_patch_size": 2},
            **ids,
        )  # fmt: skip
        model = transformers.Qwen3VLForConditionalGeneration(config)
    pixels = image_size * image_size
    image_processor = Qwen2VLImageProcessorPil(
        patch_size=patch,
        merge_size=2,
        temporal_patch_size=2,
        min_pixels=min(56 * 56, pixels),
        max_pixels=pixels,
    )
    base = {
        "qwen2_vl": "Qwen2VLProcessor",
        "qwen2_5_vl": "Qwen2_5_VLProcessor",
        "qwen3_vl": "Qwen3VLProcessor",
    }[family]
    processor = register_no_video_processors()[base](
        image_processor=image_processor, tokenizer=tokenizer, chat_template=tokenizer.chat_template
    )
    return model, processor


def _llava(tokenizer: Any, image_size: int) -> tuple[Any, Any]:
    import transformers
    from transformers import CLIPImageProcessorPil

    config = transformers.LlavaConfig(
        vision_config={"model_type": "clip_vision_model", "hidden_size": 32, "intermediate_size": 64,
                       "num_hidden_layers": 2, "num_attention_heads": 2, "image_size": 224, "patch_size": 32},
        text_config={"model_type": "llama", **_text_config(tokenizer)},
        image_token_index=tokenizer.convert_tokens_to_ids("<image>"),
        image_seq_length=49,
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
    )  # fmt: skip
    model = transformers.LlavaForConditionalGeneration(config)
    image_processor = CLIPImageProcessorPil(
        size={"shortest_edge": 224}, crop_size={"height": 224, "width": 224}
    )
    processor = transformers.LlavaProcessor(
        image_processor=image_processor, tokenizer=tokenizer, patch_size=32, vision_feature_select_strategy="default",
        num_additional_image_tokens=1, image_token="<image>", chat_template=tokenizer.chat_template,
    )  # fmt: skip
    return model, processor


def _idefics(family: str, tokenizer: Any) -> tuple[Any, Any]:
    import transformers

    vision = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
              "image_size": 128, "patch_size": 16}  # fmt: skip
    text = {"model_type": "llama", **_text_config(tokenizer)}
    image_token = tokenizer.convert_tokens_to_ids("<image>")
    if family == "idefics3":
        config = transformers.Idefics3Config(
            vision_config=vision, text_config=text, scale_factor=2, image_token_id=image_token
        )
        model = transformers.Idefics3ForConditionalGeneration(config)
        image_processor = transformers.Idefics3ImageProcessorPil(
            do_image_splitting=True, size={"longest_edge": 256}, max_image_size={"longest_edge": 128}
        )
        processor = transformers.Idefics3Processor(
            image_processor=image_processor,
            tokenizer=tokenizer,
            image_seq_len=16,
            chat_template=tokenizer.chat_template,
        )
        return model, processor
    from lmms_eval.models.hf.compat import register_no_video_processors

    config = transformers.SmolVLMConfig(
        vision_config=vision, text_config=text, scale_factor=2, image_token_id=image_token
    )
    model = transformers.SmolVLMForConditionalGeneration(config)
    image_processor = transformers.SmolVLMImageProcessorPil(
        do_image_splitting=True, size={"longest_edge": 256}, max_image_size={"longest_edge": 128}
    )
    processor = register_no_video_processors()["SmolVLMProcessor"](
        image_processor=image_processor,
        tokenizer=tokenizer,
        image_seq_len=16,
        chat_template=tokenizer.chat_template,
    )
    return model, processor


def build_tiny_vlm(
    family: str,
    folder: str,
    seed: int = 0,
    image_size: int = 224,
    corpus: Iterable[str] | None = None,
    tokenizer: Any = None,
) -> str:
    """Write a tiny random checkpoint of ``family`` to ``folder`` and return the folder."""
    import torch
    from transformers import GenerationConfig

    torch.manual_seed(seed)
    tokenizer = tokenizer or build_tokenizer(family, corpus)
    if family.startswith("qwen"):
        model, processor = _qwen(family, tokenizer, image_size)
    elif family == "llava":
        model, processor = _llava(tokenizer, image_size)
    elif family in ("idefics3", "smolvlm"):
        model, processor = _idefics(family, tokenizer)
    else:
        raise ValueError(f"unknown tiny model family '{family}'; choose from {', '.join(FAMILIES)}")
    model.generation_config = GenerationConfig(
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, do_sample=False
    )
    model.eval()
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


__all__ = ["FAMILIES", "build_tiny_vlm", "build_tokenizer", "default_corpus"]
