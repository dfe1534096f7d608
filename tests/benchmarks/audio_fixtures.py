"""Synthetic audio for the audio tests: speech spoken by espeak-ng at test time, tones, and a tiny
random Whisper checkpoint built offline.

``speak(text)`` returns ``{"array", "sampling_rate"}`` of espeak-ng's voice (None when espeak-ng is
not installed); ``tone(hz)`` a sine; ``build_tiny_whisper(folder)`` writes a randomly initialised
Whisper model (a few hundred kB), its feature extractor and a byte-level BPE tokenizer with the
Whisper special tokens, in the layout ``AutoProcessor`` / ``WhisperForConditionalGeneration`` load.
``write_audio_split`` writes one split of a Hub dataset with an ``Audio`` column under
``--dataset_root``.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

LANGUAGES = ("en", "fr", "de")
SPECIAL = [
    "<|endoftext|>",
    "<|startoftranscript|>",
    *[f"<|{code}|>" for code in LANGUAGES],
    "<|translate|>",
    "<|transcribe|>",
    "<|startoflm|>",
    "<|startofprev|>",
    "<|nospeech|>",
    "<|notimestamps|>",
]
CORPUS = [
    "the cat sat on the mat",
    "hello world this is a test",
    "one two three four five six seven eight nine ten",
    "mister smith has twenty one colours",
    "speech recognition with a tiny model",
] * 20


def tone(hz: float, seconds: float = 1.0, rate: int = 16000) -> dict[str, Any]:
    import numpy as np

    t = np.arange(round(seconds * rate)) / rate
    return {"array": (0.5 * np.sin(2 * np.pi * hz * t)).astype(np.float32), "sampling_rate": rate}


def speak(text: str) -> dict[str, Any] | None:
    """``text`` spoken by espeak-ng (22.05 kHz WAV), or None without espeak-ng."""
    from lmms_eval.media import load_audio

    binary = shutil.which("espeak-ng")
    if binary is None:
        return None
    wav = subprocess.run([binary, "--stdout", text], check=True, capture_output=True).stdout
    return load_audio(wav).as_dict()


def wav_clip(hz: float, seconds: float = 0.5, rate: int = 16000) -> dict[str, Any]:
    """A tone as the ``{"bytes", "path"}`` storage of an ``Audio`` cell (16-bit WAV)."""
    from lmms_eval.media import encode_wav

    audio = tone(hz, seconds, rate)
    return {"bytes": encode_wav(audio["array"], audio["sampling_rate"]), "path": f"{hz:g}hz.wav"}


def write_audio_split(
    dataset_root: Path, repo: str, config: str | None, split: str, rows: list[dict[str, Any]]
) -> Path:
    """One split in the Hub layout (``<repo>/<config>/<split>-00000-of-00001.parquet``), its
    ``audio`` column an ``Audio`` feature and every other column a string. The audio is written as
    its ``{"bytes", "path"}`` storage and cast (encoding through ``datasets`` needs torchcodec)."""
    import datasets

    text = datasets.Value("string")
    storage = {"bytes": datasets.Value("binary"), "path": text}
    features = datasets.Features({key: storage if key == "audio" else text for key in rows[0]})
    table = datasets.Dataset.from_list(rows, features=features).cast_column("audio", datasets.Audio())
    folder = dataset_root / repo / (config or "data")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{split}-00000-of-00001.parquet"
    table.to_parquet(str(path))
    return path


def _tokenizer() -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import WhisperTokenizer

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(CORPUS, trainer=trainer)
    return WhisperTokenizer(
        tokenizer_object=tokenizer,
        unk_token="<|endoftext|>",
        bos_token="<|endoftext|>",
        eos_token="<|endoftext|>",
        pad_token="<|endoftext|>",
        extra_special_tokens=SPECIAL[1:],
    )


def build_tiny_whisper(folder: str, seed: int = 0) -> str:
    """Write a tiny random Whisper checkpoint (processor included) to ``folder``."""
    import torch
    from transformers import (
        GenerationConfig,
        WhisperConfig,
        WhisperFeatureExtractor,
        WhisperForConditionalGeneration,
        WhisperProcessor,
    )

    torch.manual_seed(seed)
    tokenizer = _tokenizer()
    ids = {token: tokenizer.convert_tokens_to_ids(token) for token in SPECIAL}
    eos = ids["<|endoftext|>"]
    config = WhisperConfig(
        vocab_size=len(tokenizer),
        num_mel_bins=80,
        d_model=16,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=32,
        decoder_ffn_dim=32,
        max_source_positions=1500,
        max_target_positions=64,
        pad_token_id=eos,
        bos_token_id=eos,
        eos_token_id=eos,
        decoder_start_token_id=ids["<|startoftranscript|>"],
        suppress_tokens=[],
        begin_suppress_tokens=[],
    )
    model = WhisperForConditionalGeneration(config).eval()
    model.generation_config = GenerationConfig(
        decoder_start_token_id=ids["<|startoftranscript|>"],
        eos_token_id=eos,
        pad_token_id=eos,
        is_multilingual=True,
        lang_to_id={f"<|{code}|>": ids[f"<|{code}|>"] for code in LANGUAGES},
        task_to_id={"transcribe": ids["<|transcribe|>"], "translate": ids["<|translate|>"]},
        no_timestamps_token_id=ids["<|notimestamps|>"],
        prev_sot_token_id=ids["<|startofprev|>"],
        suppress_tokens=[],
        begin_suppress_tokens=[],
        do_sample=False,
    )
    model.save_pretrained(folder)
    WhisperProcessor(
        feature_extractor=WhisperFeatureExtractor(feature_size=80), tokenizer=tokenizer
    ).save_pretrained(folder)
    return folder


QWEN_AUDIO_SPECIAL = ["<|AUDIO|>", "<|audio_bos|>", "<|audio_eos|>"]
QWEN_AUDIO_TEMPLATE = (
    "{% set audio_count = namespace(value=0) %}{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'audio' %}{% set audio_count.value = audio_count.value + 1 %}"
    "Audio {{ audio_count.value }}: <|audio_bos|><|AUDIO|><|audio_eos|>\n"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _qwen_tokenizer(extra: list[str], template: str) -> Any:
    """The tiny Qwen byte-level BPE tokenizer of :mod:`lmms_eval.models.hf.tiny` plus ``extra`` tokens."""
    from lmms_eval.models.hf.tiny import build_tokenizer

    tokenizer = build_tokenizer("qwen2_vl", CORPUS, vocab_size=400)
    tokenizer.add_special_tokens({"additional_special_tokens": extra}, replace_extra_special_tokens=False)
    tokenizer.chat_template = template
    return tokenizer


def build_tiny_qwen2_audio(folder: str, seed: int = 0) -> str:
    """Write a tiny random Qwen2-Audio checkpoint (processor included) to ``folder``."""
    import torch
    from transformers import (
        GenerationConfig,
        Qwen2AudioConfig,
        Qwen2AudioForConditionalGeneration,
        Qwen2AudioProcessor,
        WhisperFeatureExtractor,
    )

    torch.manual_seed(seed)
    tokenizer = _qwen_tokenizer(QWEN_AUDIO_SPECIAL, QWEN_AUDIO_TEMPLATE)
    config = Qwen2AudioConfig(
        audio_config={"d_model": 16, "encoder_layers": 1, "encoder_attention_heads": 2,
                      "encoder_ffn_dim": 32, "num_mel_bins": 80, "max_source_positions": 1500},
        text_config={"vocab_size": len(tokenizer), "hidden_size": 32, "intermediate_size": 64,
                     "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
                     "max_position_embeddings": 2048, "pad_token_id": tokenizer.pad_token_id,
                     "eos_token_id": tokenizer.eos_token_id},
        audio_token_index=tokenizer.convert_tokens_to_ids("<|AUDIO|>"),
    )  # fmt: skip
    model = Qwen2AudioForConditionalGeneration(config).eval()
    model.generation_config = GenerationConfig(
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, do_sample=False
    )
    model.save_pretrained(folder)
    Qwen2AudioProcessor(
        feature_extractor=WhisperFeatureExtractor(feature_size=80),
        tokenizer=tokenizer,
        chat_template=QWEN_AUDIO_TEMPLATE,
    ).save_pretrained(folder)
    return folder


# Qwen2.5-Omni's named special tokens (its processor reads them from the tokenizer) and the parts
# of its chat template that matter here: audio, image and video between their begin/end tokens.
OMNI_TOKENS = {
    "image_token": "<|IMAGE|>",
    "audio_token": "<|AUDIO|>",
    "video_token": "<|VIDEO|>",
    "vision_bos_token": "<|vision_bos|>",
    "vision_eos_token": "<|vision_eos|>",
    "audio_bos_token": "<|audio_bos|>",
    "audio_eos_token": "<|audio_eos|>",
}
OMNI_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'audio' %}<|audio_bos|><|AUDIO|><|audio_eos|>"
    "{% elif part['type'] == 'image' %}<|vision_bos|><|IMAGE|><|vision_eos|>"
    "{% elif part['type'] == 'video' %}<|vision_bos|><|VIDEO|><|vision_eos|>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def build_tiny_qwen2_5_omni(folder: str, seed: int = 0) -> str:
    """Write a tiny random Qwen2.5-Omni checkpoint to ``folder`` in the released layout: the thinker
    (audio and vision encoders, a one-layer language model), the talker and its vocoder, an empty
    speaker table, and the processor (without its video processor)."""
    import torch
    from transformers import (
        AutoTokenizer,
        GenerationConfig,
        Qwen2_5OmniConfig,
        Qwen2_5OmniForConditionalGeneration,
        Qwen2VLImageProcessorPil,
        WhisperFeatureExtractor,
    )

    from lmms_eval.models.hf.compat import register_no_video_processors

    _qwen_tokenizer([], OMNI_TEMPLATE).save_pretrained(folder)
    tokenizer = AutoTokenizer.from_pretrained(folder, extra_special_tokens=OMNI_TOKENS)
    ids = {name: tokenizer.convert_tokens_to_ids(token) for name, token in OMNI_TOKENS.items()}
    torch.manual_seed(seed)
    text = {
        "vocab_size": len(tokenizer),
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "max_position_embeddings": 4096,
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3]},
        "pad_token_id": tokenizer.pad_token_id,
        "eos_token_id": tokenizer.eos_token_id,
    }
    thinker = {
        "audio_config": {"d_model": 16, "encoder_layers": 1, "encoder_attention_heads": 2, "encoder_ffn_dim": 32,
                         "num_mel_bins": 128, "max_source_positions": 1500, "output_dim": 32},
        "vision_config": {"depth": 1, "hidden_size": 16, "intermediate_size": 32, "num_heads": 2,
                          "out_hidden_size": 32, "fullatt_block_indexes": [0]},
        "text_config": text,
        "audio_token_index": ids["audio_token"], "image_token_index": ids["image_token"],
        "video_token_index": ids["video_token"], "audio_start_token_id": ids["audio_bos_token"],
        "audio_end_token_id": ids["audio_eos_token"],
    }  # fmt: skip
    talker = {
        "vocab_size": 64,
        "embedding_size": 32,
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "head_dim": 16,
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3]},
    }
    token2wav = {
        "dit_config": {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "head_dim": 16,
                       "emb_dim": 16, "enc_emb_dim": 16, "enc_dim": 32, "enc_channels": [32, 32, 32, 32, 64],
                       "enc_attention_channels": 16, "enc_se_channels": 16, "num_embeds": 64, "mel_dim": 16},
        "bigvgan_config": {"mel_dim": 16, "upsample_initial_channel": 32, "upsample_rates": [2, 2],
                           "upsample_kernel_sizes": [4, 4], "resblock_kernel_sizes": [3],
                           "resblock_dilation_sizes": [[1, 3, 5]]},
    }  # fmt: skip
    config = Qwen2_5OmniConfig(thinker_config=thinker, talker_config=talker, token2wav_config=token2wav)
    thinker_config: Any = config.thinker_config
    thinker_config.vision_start_token_id = ids["vision_bos_token"]
    model = Qwen2_5OmniForConditionalGeneration(config).eval()
    model.generation_config = GenerationConfig(
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, do_sample=False
    )
    model.save_pretrained(folder)
    torch.save({}, Path(folder) / "spk_dict.pt")  # from_pretrained reads the talker's speakers
    processor = register_no_video_processors()["Qwen2_5OmniProcessor"]
    processor(
        image_processor=Qwen2VLImageProcessorPil(),
        feature_extractor=WhisperFeatureExtractor(feature_size=128),
        tokenizer=tokenizer,
        chat_template=OMNI_TEMPLATE,
    ).save_pretrained(folder)
    return folder


def texts(outputs: list[Any]) -> list[Any]:
    """Each answer's text, or the failure kind of a request that failed."""
    from lmms_eval.api.instance import GenerationResult

    return [o.text if isinstance(o, GenerationResult) else o.kind for o in outputs]


def check_batched_equals_single(make: Any, requests: list[Any], max_new_tokens: int) -> None:
    """``make(batch_size)`` builds a model: batch size 3 gives the answers of one request at a time,
    request 3 (broken audio) fails alone as an ``input`` failure, the others stay within
    ``max_new_tokens``."""
    from lmms_eval.api.instance import GenerationResult, RequestFailure

    batched = make(3).generate_until(requests)
    single_model = make(1)
    single = [single_model.generate_until([r])[0] for r in requests]
    assert texts(batched) == texts(single)
    assert isinstance(batched[3], RequestFailure) and batched[3].kind == "input"
    ok = [o for o in batched if isinstance(o, GenerationResult)]
    assert len(ok) == len(requests) - 1
    assert all(o.token_counts and (o.token_counts.output_tokens or 0) <= max_new_tokens for o in ok)
