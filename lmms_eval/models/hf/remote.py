"""Remote-code checkpoints: the checkpoint's own classes and its documented ``chat`` interface.

Checkpoints such as InternVL 2 / 3 / 3.5 and MiniCPM-V 2.6 / 4 / 4.5 ship their model code in the
checkpoint folder (``modeling_*.py``, named by ``auto_map`` in ``config.json``). With
``trust_remote_code=true`` transformers imports that code (**it runs Python code from the
checkpoint**: use checkpoints you trust) and the family hook calls the interface the checkpoint
documents, instead of a processor and ``generate``:

* InternVL (``internvl2``, ``internvl3``, ``internvl3_5``): ``model.chat(tokenizer, pixel_values,
  question, generation_config)`` and, for a batch of one-image prompts, ``model.batch_chat(...,
  num_patches_list=...)``. Images are cut into at most ``max_tiles`` tiles of the model's input
  size (the grid closest to the image's aspect ratio, plus a thumbnail when there is more than one
  tile), normalised with the ImageNet mean and deviation, as the InternVL model cards do; the
  question carries one ``<image>`` per image (``Image-k: <image>`` when there are several).
* MiniCPM-V (``minicpm_v`` with ``trust_remote_code=true``): ``model.chat(msgs=[{"role": "user",
  "content": [images..., question]}], tokenizer=..., sampling=..., max_new_tokens=...)``.
* Phi-3 / Phi-3.5-vision (``phi3v``): no ``chat``; the checkpoint's ``AutoProcessor`` (``num_crops``)
  over the tokenizer's chat template with ``<|image_k|>`` placeholders, then ``model.generate``, as
  its model card documents (:class:`Phi3Vision`, one prompt at a time).

The rest is the engine's (:mod:`lmms_eval.models.hf.backend`): requests, media, the run's gate,
stop strings (cut client-side), timing and token counts (prompt tokens counted with the tokenizer,
output tokens by re-encoding the answer). Log-likelihoods need the model's forward pass and are not
offered (``phi3v`` scores them with its forward pass). Arguments: those of ``huggingface`` plus
``max_tiles`` (InternVL, default 6) and ``num_crops`` (Phi-3.5-vision, the processor's default).
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

from lmms_eval.api.instance import GenerationResult, Instance, TokenCounts
from lmms_eval.api.path_types import FileOrText, ModelPath
from lmms_eval.errors import LmmsEvalError, ModelArgsError
from lmms_eval.models._common import apply_stop_strings
from lmms_eval.models.hf.backend import (
    GenerationSettings,
    HFVisionLanguageModel,
    Prompt,
    _Media,
    read_text_or_file,
)

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def require_trust_remote_code(model_id: str | None, trust_remote_code: bool) -> None:
    """One line unless ``trust_remote_code`` is on: these hooks run the checkpoint's own code."""
    if not trust_remote_code:
        raise ModelArgsError(
            f"model '{model_id}' runs the checkpoint's own Python code: pass "
            "trust_remote_code=true in --model_args (or --trust_remote_code) for a checkpoint you trust"
        )


class RemoteChatModel(HFVisionLanguageModel):
    """The engine over a remote-code checkpoint whose ``chat`` method answers; subclasses implement
    :meth:`_chat` (one batch of prompts -> answers)."""

    model_class: ClassVar[str] = "AutoModel"

    def __init__(
        self,
        pretrained: ModelPath | None = None,
        device: str | None = None,
        device_map: str | None = None,
        torch_dtype: str | None = "auto",
        attn_implementation: str | None = None,
        max_num_frames: int = 32,
        trust_remote_code: bool = False,
        batch_size: int | str = 1,
        system_prompt: FileOrText | None = None,
        max_tiles: int = 6,
    ) -> None:
        require_trust_remote_code(self.model_id, trust_remote_code)
        self.max_tiles = int(max_tiles)
        super().__init__(
            pretrained=pretrained,
            device=device,
            device_map=device_map,
            torch_dtype=torch_dtype,
            attn_implementation=attn_implementation,
            max_num_frames=max_num_frames,
            video_mode="frames",
            trust_remote_code=True,
            batch_size=batch_size,
            system_prompt=system_prompt,
        )

    def _load_processor(
        self,
        trust_remote_code: bool,
        chat_template: str | None,
        max_pixels: int | None,
        min_pixels: int | None,
    ) -> Any:
        from transformers import AutoTokenizer

        from lmms_eval.models.hf.hub import loading_errors

        with loading_errors(self.checkpoint, str(self.model_id)):
            return AutoTokenizer.from_pretrained(self.checkpoint.path, trust_remote_code=True)

    @property
    def chat_template(self) -> str | None:
        return "the checkpoint's chat()"  # the prompt format is the checkpoint's own

    def template_shows_video(self) -> bool:
        return False

    def _render(self, messages: list[dict[str, Any]], media: _Media | list[Any]) -> Prompt:
        """The question: the text parts of the conversation (the checkpoint places the images)."""
        media = media if isinstance(media, _Media) else _Media(images=list(media))
        texts = [
            part["text"] for message in messages for part in message["content"] if part["type"] == "text"
        ]
        return Prompt("\n".join(texts), media.images)

    def loglikelihood(self, requests: list[Instance]) -> list[Any]:
        raise LmmsEvalError(
            f"{self.model_id}: log-likelihoods are not available through the checkpoint's chat() interface; "
            "use a generate_until task"
        )

    def _generate_batch(self, prompts: list[Prompt], settings: GenerationSettings) -> list[GenerationResult]:
        started = time.perf_counter()
        config: dict[str, Any] = {"max_new_tokens": settings.max_new_tokens, "do_sample": settings.do_sample}
        if settings.do_sample and settings.temperature is not None:
            config["temperature"] = settings.temperature
        if settings.do_sample and settings.top_p is not None:
            config["top_p"] = settings.top_p
        if settings.num_beams > 1:
            config["num_beams"] = settings.num_beams
        answers = self._chat(prompts, config)
        latency = time.perf_counter() - started
        results = []
        for prompt, answer in zip(prompts, answers):
            text = apply_stop_strings(str(answer), settings.until)
            counts = TokenCounts(
                input_tokens=len(self.tokenizer(prompt.text, add_special_tokens=False)["input_ids"]),
                output_tokens=len(self.tokenizer(text, add_special_tokens=False)["input_ids"]),
            )
            results.append(GenerationResult(text=text, token_counts=counts, latency_s=latency))
        return results

    def _chat(self, prompts: list[Prompt], config: dict[str, Any]) -> list[str]:
        raise NotImplementedError


class InternVLChat(RemoteChatModel):
    """InternVL 2 / 2.5 / 3 / 3.5 (remote code): ``chat`` and ``batch_chat``."""

    model_id: ClassVar[str | None] = "internvl2"
    default_pretrained: ClassVar[str | None] = "OpenGVLab/InternVL2-2B"
    model_types: ClassVar[tuple[str, ...]] = ("internvl_chat",)

    def _chat(self, prompts: list[Prompt], config: dict[str, Any]) -> list[str]:
        import torch

        tiles = [[self._tiles(image) for image in prompt.images] for prompt in prompts]
        dtype = self.model.dtype
        if len(prompts) > 1 and all(len(t) == 1 for t in tiles):
            pixels = torch.cat([t[0] for t in tiles]).to(self.device, dtype)
            questions = ["<image>\n" + p.text for p in prompts]
            return list(
                self.model.batch_chat(
                    self.tokenizer, pixels, num_patches_list=[t[0].shape[0] for t in tiles],
                    questions=questions, generation_config=config,
                )
            )  # fmt: skip
        answers = []
        for prompt, own in zip(prompts, tiles):
            pixels = torch.cat(own).to(self.device, dtype) if own else None
            if len(own) > 1:
                question = "".join(f"Image-{k + 1}: <image>\n" for k in range(len(own))) + prompt.text
                answer = self.model.chat(
                    self.tokenizer, pixels, question, config, num_patches_list=[t.shape[0] for t in own]
                )
            else:
                question = ("<image>\n" if own else "") + prompt.text
                answer = self.model.chat(self.tokenizer, pixels, question, config)
            answers.append(str(answer))
        return answers

    def _tiles(self, image: Any) -> Any:
        """One image as InternVL's tiles: (tiles, 3, size, size), normalised."""
        import numpy as np
        import torch

        size = int(
            getattr(self.model.config, "force_image_size", None) or self.model.config.vision_config.image_size
        )
        image = image.convert("RGB")
        columns, rows = closest_grid(image.width, image.height, self.max_tiles)
        resized = image.resize((size * columns, size * rows))
        pieces = [
            resized.crop((c * size, r * size, (c + 1) * size, (r + 1) * size))
            for r in range(rows)
            for c in range(columns)
        ]
        if len(pieces) > 1:
            pieces.append(image.resize((size, size)))
        mean, std = np.array(IMAGENET_MEAN), np.array(IMAGENET_STD)
        arrays = [((np.asarray(p, dtype=np.float32) / 255.0 - mean) / std).transpose(2, 0, 1) for p in pieces]
        return torch.tensor(np.stack(arrays), dtype=torch.float32)


def closest_grid(width: int, height: int, max_tiles: int) -> tuple[int, int]:
    """The (columns, rows) grid of at most ``max_tiles`` tiles whose aspect ratio is closest to
    the image's; ties go to the larger grid when the image has the pixels for it."""
    aspect = width / height
    best, best_diff = (1, 1), float("inf")
    for count in range(1, max_tiles + 1):
        for columns in range(1, count + 1):
            if count % columns:
                continue
            rows = count // columns
            diff = abs(aspect - columns / rows)
            if diff < best_diff or (diff == best_diff and width * height > 0.5 * 448 * 448 * columns * rows):
                best, best_diff = (columns, rows), diff
    return best


class InternVL3Chat(InternVLChat):
    model_id: ClassVar[str | None] = "internvl3"
    default_pretrained: ClassVar[str | None] = "OpenGVLab/InternVL3-2B"


class InternVL3_5Chat(InternVLChat):
    model_id: ClassVar[str | None] = "internvl3_5"
    default_pretrained: ClassVar[str | None] = "OpenGVLab/InternVL3_5-2B"


class MiniCPMVChat(RemoteChatModel):
    """MiniCPM-V 2.6 / 4 / 4.5 (remote code): ``chat(msgs=..., tokenizer=...)``, one prompt at a time."""

    model_id: ClassVar[str | None] = "minicpm_v"
    default_pretrained: ClassVar[str | None] = "openbmb/MiniCPM-V-2_6"
    model_types: ClassVar[tuple[str, ...]] = ("minicpmv",)

    def _chat(self, prompts: list[Prompt], config: dict[str, Any]) -> list[str]:
        options = {"sampling": bool(config.pop("do_sample")), **config}
        answers = []
        for prompt in prompts:
            content = [image.convert("RGB") for image in prompt.images] + [prompt.text]
            answer = self.model.chat(
                image=None, msgs=[{"role": "user", "content": content}], tokenizer=self.tokenizer, **options
            )
            answers.append(str(answer))
        return answers


class Phi3Vision(HFVisionLanguageModel):
    """Phi-3 / Phi-3.5-vision (remote code): the checkpoint's processor and ``generate``.

    The prompt is the tokenizer's chat template over string contents, each image part replaced by
    ``<|image_k|>`` and a newline (numbered through the conversation); the processor takes one
    prompt with its images, so requests run one at a time (generation and log-likelihoods).
    """

    model_id: ClassVar[str | None] = "phi3v"
    default_pretrained: ClassVar[str | None] = "microsoft/Phi-3.5-vision-instruct"
    model_types: ClassVar[tuple[str, ...]] = ("phi3_v",)
    model_class: ClassVar[str] = "AutoModelForCausalLM"

    def __init__(
        self,
        pretrained: ModelPath | None = None,
        device: str | None = None,
        device_map: str | None = None,
        torch_dtype: str | None = "auto",
        attn_implementation: str | None = None,
        max_num_frames: int = 32,
        trust_remote_code: bool = False,
        batch_size: int | str = 1,
        system_prompt: FileOrText | None = None,
        chat_template: FileOrText | None = None,
        num_crops: int | None = None,
    ) -> None:
        require_trust_remote_code(self.model_id, trust_remote_code)
        self.num_crops = None if num_crops is None else int(num_crops)
        super().__init__(
            pretrained=pretrained,
            device=device,
            device_map=device_map,
            torch_dtype=torch_dtype,
            attn_implementation=attn_implementation,
            max_num_frames=max_num_frames,
            video_mode="frames",
            trust_remote_code=True,
            batch_size=batch_size,
            system_prompt=system_prompt,
            chat_template=chat_template,
        )

    def _load_processor(
        self,
        trust_remote_code: bool,
        chat_template: str | None,
        max_pixels: int | None,
        min_pixels: int | None,
    ) -> Any:
        from transformers import AutoProcessor

        from lmms_eval.models.hf.hub import loading_errors

        extra = {} if self.num_crops is None else {"num_crops": self.num_crops}
        with loading_errors(self.checkpoint, str(self.model_id)):
            processor = AutoProcessor.from_pretrained(self.checkpoint.path, trust_remote_code=True, **extra)
        override = read_text_or_file(chat_template)
        if override:
            processor.tokenizer.chat_template = override
        return processor

    @property
    def chat_template(self) -> str | None:
        template = getattr(self.tokenizer, "chat_template", None)
        return template if isinstance(template, str) else None

    def template_shows_video(self) -> bool:
        return False

    def _render(self, messages: list[dict[str, Any]], media: _Media | list[Any]) -> Prompt:
        media = media if isinstance(media, _Media) else _Media(images=list(media))
        count = 0
        turns = []
        for message in messages:
            pieces = []
            for part in message["content"]:
                if part["type"] == "text":
                    pieces.append(part["text"])
                else:  # an image (video frames come as images)
                    count += 1
                    pieces.append(f"<|image_{count}|>\n")
            turns.append({"role": message["role"], "content": "".join(pieces)})
        text = self.tokenizer.apply_chat_template(turns, tokenize=False, add_generation_prompt=True)
        return Prompt(str(text), media.images)

    def _encode(
        self,
        texts: list[str],
        images: list[list[Any]],
        side: str,
        videos: list[list[Any]] | None = None,
        audios: list[list[Any]] | None = None,
    ) -> Any:
        """The processor's inputs for one prompt (the only batch it takes)."""
        if len(texts) != 1:
            raise LmmsEvalError(f"{self.model_id}: the checkpoint's processor encodes one prompt at a time")
        batch = self.processor(texts[0], images[0] or None, return_tensors="pt")
        return batch.to(self.device).to(self.model.dtype)

    def _generate_batch(self, prompts: list[Prompt], settings: GenerationSettings) -> list[GenerationResult]:
        generate = super()._generate_batch  # one prompt per call
        return [result for prompt in prompts for result in generate([prompt], settings)]

    def _loglikelihood_batch(
        self, contexts: list[Prompt], continuations: list[str]
    ) -> list[tuple[float, bool]]:
        score = super()._loglikelihood_batch  # one context per call
        return [value for c, k in zip(contexts, continuations) for value in score([c], [k])]


class InternVLChatSimple(InternVLChat):
    is_simple = True


class InternVL3ChatSimple(InternVL3Chat):
    is_simple = True


class InternVL3_5ChatSimple(InternVL3_5Chat):
    is_simple = True


class MiniCPMVChatSimple(MiniCPMVChat):
    is_simple = True


class Phi3VisionSimple(Phi3Vision):
    is_simple = True


__all__ = [
    "InternVL3Chat",
    "InternVL3_5Chat",
    "InternVLChat",
    "MiniCPMVChat",
    "Phi3Vision",
    "RemoteChatModel",
    "closest_grid",
    "require_trust_remote_code",
]
