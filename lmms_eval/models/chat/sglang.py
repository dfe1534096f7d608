"""``sglang``: chat models served in-process by the SGLang offline engine (``sglang.Engine``).

Model args:

* ``pretrained`` (alias ``model``): hub id or local folder (required);
* ``tp_size`` (alias ``tensor_parallel_size``, default 1), ``dp_size`` (alias ``data_parallel_size``,
  default 1): the engine's own parallelism over this machine's GPUs (one lmms-eval process per
  machine), ``mem_fraction_static`` (alias
  ``gpu_memory_utilization``; unset lets SGLang choose), ``trust_remote_code`` (default true),
  ``seed`` (default 1; the engine's ``random_seed``);
* ``chat_template``: a Jinja file path or inline Jinja that replaces the checkpoint's template;
* ``max_new_tokens`` (default 4096; a task's ``gen_kwargs.max_new_tokens`` wins);
* ``max_frames_num`` (default 32): videos given as frame lists or frame folders are sampled evenly
  to this many frames and sent as images; so are video files with ``decode_videos=true``
  (decoded here by :func:`lmms_eval.media.read_video`; without it a video file is an error);
* ``batch_size`` (default 64): requests per ``Engine.generate`` call;
* ``system_prompt``: text or a file path, prepended unless the conversation has a system message;
* anything else is passed to ``sglang.Engine`` (``context_length``, ``dtype``, ...); string values
  that look like JSON objects or lists are parsed.

The prompt is the checkpoint's chat template (from its ``transformers`` processor, else its
tokenizer) applied to the conversation with image placeholders; the images go to the engine as
``image_data`` in order (:func:`build_sglang_prompt`). Sampling parameters are built per request
(:func:`sglang_sampling_params`): ``temperature`` 0 is greedy, ``until`` becomes ``stop``. Results
come back in request order with the engine's prompt and completion token counts and the wall time
of the engine call. A request whose media cannot be read (:class:`~lmms_eval.media.MediaError`) is
answered with ``RequestFailure(kind="input")``. Loglikelihood is not supported.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lmms_eval.api.instance import GenerationResult, Instance, RequestFailure, TokenCounts
from lmms_eval.api.path_types import FileOrText, ModelPath
from lmms_eval.errors import LmmsEvalError, ModelArgsError
from lmms_eval.media import load_image
from lmms_eval.models._common import apply_stop_strings
from lmms_eval.models.chat.vllm import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_MAX_FRAMES_NUM,
    DEFAULT_MAX_NEW_TOKENS,
    EngineChatModel,
    SamplingSettings,
    expand_frame_videos,
    import_engine,
    pick,
    positive_int,
    request_chat_messages,
)
from lmms_eval.models.registry_v2 import INSTALL_SGLANG as SGLANG_INSTALL
from lmms_eval.protocol import (
    ChatAudioContent,
    ChatImageContent,
    ChatMessages,
    ChatTextContent,
    ChatVideoContent,
)

logger = logging.getLogger(__name__)


Renderer = Callable[[list[dict[str, Any]]], str]


@dataclass(frozen=True)
class SGLangPrompt:
    """A rendered prompt and the images its placeholders refer to, in order."""

    text: str
    images: list[Any] = field(default_factory=list)


def sglang_sampling_params(settings: SamplingSettings) -> dict[str, Any]:
    """The ``sampling_params`` dict of ``Engine.generate`` for ``settings``."""
    params: dict[str, Any] = {
        "max_new_tokens": settings.max_new_tokens,
        "temperature": settings.temperature,
        "top_p": settings.top_p,
    }
    if settings.stop:
        params["stop"] = list(settings.stop)
    return params


def image_data_item(source: Any) -> Any:
    """An ``image_data`` entry: paths, URLs and ``data:`` URIs as strings, anything else as a PIL image."""
    if isinstance(source, os.PathLike):
        return os.fspath(source)
    if isinstance(source, str):
        return source
    return load_image(source)


def build_hf_chat(
    messages: ChatMessages,
    system_prompt: str | None = None,
    max_frames_num: int | None = DEFAULT_MAX_FRAMES_NUM,
    decode_videos: bool = False,
) -> tuple[list[dict[str, Any]], list[Any]]:
    """Chat-template messages (``{"type": "image"}`` placeholders; text-only content as a string)
    and the ``image_data`` items in placeholder order; videos become frames (module doc)."""
    expanded = expand_frame_videos(messages, max_frames_num, decode_videos)
    images: list[Any] = []
    out: list[dict[str, Any]] = []
    for message in expanded.messages:
        parts: list[dict[str, Any]] = []
        for part in message.content:
            if isinstance(part, ChatTextContent):
                parts.append({"type": "text", "text": part.text})
            elif isinstance(part, ChatImageContent):
                images.append(image_data_item(part.url))
                parts.append({"type": "image"})
            elif isinstance(part, ChatVideoContent):
                raise LmmsEvalError(
                    f"sglang backend: video {part.url!r} is not a frame list or a frame folder; "
                    "pass --model_args decode_videos=true to decode video files into frames"
                )
            elif isinstance(part, ChatAudioContent):
                raise LmmsEvalError("sglang backend: audio inputs are not supported")
        if all(p["type"] == "text" for p in parts):
            out.append({"role": message.role, "content": "\n".join(p["text"] for p in parts)})
        else:
            out.append({"role": message.role, "content": parts})
    if system_prompt and not (out and out[0]["role"] == "system"):
        out.insert(0, {"role": "system", "content": system_prompt})
    return out, images


def build_sglang_prompt(
    messages: ChatMessages,
    render: Renderer,
    system_prompt: str | None = None,
    max_frames_num: int | None = DEFAULT_MAX_FRAMES_NUM,
    decode_videos: bool = False,
) -> SGLangPrompt:
    """The prompt text (``render`` applies the chat template) and its images."""
    hf_messages, images = build_hf_chat(messages, system_prompt, max_frames_num, decode_videos)
    return SGLangPrompt(text=render(hf_messages), images=images)


def sglang_result(output: Mapping[str, Any], latency_s: float, stop: Sequence[str]) -> GenerationResult:
    """A :class:`GenerationResult` from one ``Engine.generate`` output dict."""
    meta = output.get("meta_info") or {}
    prompt_tokens, completion_tokens = meta.get("prompt_tokens"), meta.get("completion_tokens")
    counts = TokenCounts(
        input_tokens=int(prompt_tokens) if isinstance(prompt_tokens, int) else None,
        output_tokens=int(completion_tokens) if isinstance(completion_tokens, int) else None,
    )
    has_counts = counts.input_tokens is not None or counts.output_tokens is not None
    return GenerationResult(
        text=apply_stop_strings(str(output.get("text") or ""), list(stop)),
        token_counts=counts if has_counts else None,
        latency_s=latency_s,
    )


def _has_chat_template(processor: Any) -> bool:
    tokenizer = getattr(processor, "tokenizer", None)
    return bool(getattr(processor, "chat_template", None) or getattr(tokenizer, "chat_template", None))


class SGLang(EngineChatModel):
    """SGLang offline engine; see the module docstring for the arguments."""

    engine_label = "sglang"

    def __init__(
        self,
        pretrained: ModelPath | None = None,
        model: ModelPath | None = None,
        tp_size: int | None = None,
        tensor_parallel_size: int | None = None,
        dp_size: int | None = None,
        data_parallel_size: int | None = None,
        mem_fraction_static: float | None = None,
        gpu_memory_utilization: float | None = None,
        chat_template: FileOrText | None = None,
        max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
        max_frames_num: int | None = DEFAULT_MAX_FRAMES_NUM,
        trust_remote_code: bool = True,
        batch_size: int | str | None = DEFAULT_BATCH_SIZE,
        seed: int | None = 1,
        system_prompt: FileOrText | None = None,
        decode_videos: bool = False,
        device: str | None = None,
        max_batch_size: int | None = None,
        **engine_kwargs: Any,
    ) -> None:
        super().__init__()
        self._setup_common(
            pretrained,
            model,
            tensor_parallel_size,
            tp_size,
            chat_template,
            max_new_tokens,
            max_frames_num,
            trust_remote_code,
            batch_size,
            seed,
            system_prompt,
            device,
            max_batch_size,
            engine_kwargs,
        )
        name = type(self).__name__
        dp = pick(name, "dp_size", dp_size, "data_parallel_size", data_parallel_size, 1)
        self.data_parallel_size = positive_int(name, "dp_size", dp)
        fraction = pick(
            name, "mem_fraction_static", mem_fraction_static, "gpu_memory_utilization", gpu_memory_utilization
        )
        if fraction is not None and not 0.0 < float(fraction) <= 1.0:
            raise ModelArgsError(f"model '{name}': mem_fraction_static must be in (0, 1], got {fraction}")
        self.mem_fraction_static = None if fraction is None else float(fraction)
        self.decode_videos = bool(decode_videos)
        sglang = import_engine("sglang", SGLANG_INSTALL, "model 'sglang'")
        self.processor = self._load_template_source()
        self.engine = sglang.Engine(**self.engine_arguments())

    def engine_arguments(self) -> dict[str, Any]:
        """Keyword arguments of ``sglang.Engine``."""
        args: dict[str, Any] = {
            "model_path": self.pretrained,
            "tp_size": self.tensor_parallel_size,
            "trust_remote_code": self.trust_remote_code,
        }
        if self.data_parallel_size > 1:
            args["dp_size"] = self.data_parallel_size
        if self.mem_fraction_static is not None:
            args["mem_fraction_static"] = self.mem_fraction_static
        if self.seed is not None:
            args["random_seed"] = self.seed
        return {**args, **self.engine_kwargs}

    def _load_template_source(self) -> Any:
        """The checkpoint's processor (or tokenizer) whose ``apply_chat_template`` renders prompts."""
        transformers = import_engine("transformers", "pip install transformers", "model 'sglang'")
        try:
            return transformers.AutoProcessor.from_pretrained(
                self.pretrained, trust_remote_code=self.trust_remote_code
            )
        except Exception as exc:
            logger.info("no processor for %s (%s); using its tokenizer", self.pretrained, type(exc).__name__)
            return transformers.AutoTokenizer.from_pretrained(
                self.pretrained, trust_remote_code=self.trust_remote_code
            )

    def render(self, messages: list[dict[str, Any]]) -> str:
        """The chat template (``chat_template`` if given, else the checkpoint's) with the generation prompt."""
        kwargs: dict[str, Any] = {"tokenize": False, "add_generation_prompt": True}
        if self.chat_template:
            kwargs["chat_template"] = self.chat_template
        elif not _has_chat_template(self.processor):
            raise ModelArgsError(
                f"sglang: {self.pretrained} has no chat template; pass --model_args chat_template=<file or Jinja>"
            )
        return str(self.processor.apply_chat_template(messages, **kwargs))

    def build_prompt(self, request: Instance) -> SGLangPrompt:
        """The prompt and images sent for ``request``."""
        chat = request_chat_messages(request, self.get_doc(request))
        return build_sglang_prompt(
            chat, self.render, self.system_prompt, self.max_frames_num, self.decode_videos
        )

    def _generate(self, prompts: list[SGLangPrompt], params: list[dict[str, Any]]) -> list[Mapping[str, Any]]:
        kwargs: dict[str, Any] = {"prompt": [p.text for p in prompts], "sampling_params": params}
        if any(p.images for p in prompts):
            kwargs["image_data"] = [p.images for p in prompts]
        outputs = self.engine.generate(**kwargs)
        if isinstance(outputs, Mapping):
            outputs = [outputs]
        outputs = list(outputs)
        if len(outputs) != len(prompts):
            raise LmmsEvalError(f"SGLang returned {len(outputs)} outputs for {len(prompts)} requests")
        return outputs

    def generate_until(self, requests: list[Instance]) -> list[str | GenerationResult | RequestFailure]:
        return self.answer_in_batches(requests, self._generate_batch)

    def _generate_batch(self, batch: list[Instance]) -> list[GenerationResult | RequestFailure]:
        built = self.build_each(batch, self.build_prompt)
        answers: dict[int, GenerationResult | RequestFailure] = {
            i: b for i, b in enumerate(built) if isinstance(b, RequestFailure)
        }
        prompts = {i: b for i, b in enumerate(built) if not isinstance(b, RequestFailure)}
        settings = {i: self.settings(batch[i]) for i in prompts}
        params = {i: sglang_sampling_params(s) for i, s in settings.items()}
        # requests with and without images go in separate calls (image_data is all or nothing)
        for wants_images in (True, False):
            members = [i for i, p in prompts.items() if bool(p.images) == wants_images]
            if not members:
                continue
            started = time.perf_counter()
            outputs = self._generate([prompts[i] for i in members], [params[i] for i in members])
            latency = time.perf_counter() - started
            for i, output in zip(members, outputs):
                answers[i] = sglang_result(output, latency, settings[i].stop)
        return [answers[i] for i in range(len(batch))]

    def clean(self) -> None:
        """Shut the engine down (frees its GPU memory and worker processes)."""
        engine = vars(self).get("engine")
        if engine is not None:
            shutdown = getattr(engine, "shutdown", None)
            if callable(shutdown):
                shutdown()
            delattr(self, "engine")
        super().clean()


__all__ = [
    "SGLANG_INSTALL",
    "SGLang",
    "SGLangPrompt",
    "build_hf_chat",
    "build_sglang_prompt",
    "image_data_item",
    "sglang_result",
    "sglang_sampling_params",
]
