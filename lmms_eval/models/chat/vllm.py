"""``vllm``: chat models served in-process by the vLLM offline engine (``vllm.LLM``).

Model args:

* ``pretrained`` (alias ``model``): hub id or local folder (required);
* ``tensor_parallel_size`` (alias ``tp_size``, default 1), ``data_parallel_size`` (alias ``dp_size``,
  default 1): the engine's own parallelism over this machine's GPUs (run one lmms-eval process per
  machine; several machines split the documents between them as ranks of a torchrun launch),
  ``gpu_memory_utilization`` (default 0.8), ``trust_remote_code`` (default true), ``seed``
  (default 1; also the seed of every request's sampling);
* ``chat_template``: a Jinja file path or inline Jinja that replaces the checkpoint's template;
* ``max_new_tokens`` (default 4096; a task's ``gen_kwargs.max_new_tokens`` wins);
* ``max_frames_num`` (default 32): a video given as a list of frames or a folder of frame images is
  sampled evenly to this many frames and sent as images; a video file is sent as a ``video_url``
  (the engine decodes it; local files need the engine arg ``allowed_local_media_path``), or with
  ``decode_videos=true`` decoded here by :func:`lmms_eval.media.read_video` (the same frames as
  the other backends) and sent as images;
* ``batch_size`` (default 64): requests per ``LLM.chat`` call (the engine schedules within it);
* ``system_prompt``: text or a file path, prepended unless the conversation has a system message;
* ``image_format``: PNG (default), JPEG or WEBP for the base64 ``data:`` URIs of images;
* anything else is passed to ``vllm.LLM`` (``max_model_len``, ``dtype``, ``limit_mm_per_prompt``,
  ``enforce_eager``, ...); string values that look like JSON objects or lists are parsed.

Requests become OpenAI-style messages (:func:`build_vllm_messages`) and sampling arguments
(:func:`vllm_sampling_kwargs`): ``temperature`` 0 or ``do_sample=False`` is greedy decoding,
``until`` becomes ``stop``, ``max_new_tokens`` becomes ``max_tokens``. Results come back in request
order as :class:`GenerationResult` with prompt and output token counts, the wall time of the engine
call, and the time to first token when the engine reports it. A request whose media cannot be read
(a missing or broken video or image: :class:`~lmms_eval.media.MediaError`) is answered with
``RequestFailure(kind="input")`` and the rest of its batch runs. Loglikelihood is not supported.

The helpers here (:func:`sampling_settings`, :func:`request_chat_messages`,
:func:`expand_frame_videos`, :func:`import_engine`, ...) are pure and shared with the ``sglang``
backend.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from lmms_eval.api.instance import GenerationResult, Instance, RequestFailure, TokenCounts
from lmms_eval.api.model import lmms
from lmms_eval.api.path_types import FileOrText, ModelPath
from lmms_eval.errors import ConfigError, LmmsEvalError, ModelArgsError
from lmms_eval.media import (
    FrameSelection,
    MediaError,
    decode_video,
    is_frame_video,
    is_video,
    load_video_frames,
    media_failure,
)
from lmms_eval.media.video_decode import open_target
from lmms_eval.models._common import apply_stop_strings, parse_batch_size
from lmms_eval.models.hf.runtime import DependencyImportError, import_dependency
from lmms_eval.models.registry_v2 import INSTALL_VLLM as VLLM_INSTALL
from lmms_eval.protocol import ChatImageContent, ChatMessage, ChatMessages, ChatVideoContent

logger = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_MAX_NEW_TOKENS = 4096
DEFAULT_MAX_FRAMES_NUM = 32
DEFAULT_BATCH_SIZE = 64

# gen_kwargs keys the engine backends understand; others are logged once and ignored
ENGINE_GEN_KWARGS = frozenset({"until", "max_new_tokens", "temperature", "top_p", "do_sample"})


# -- engine import -----------------------------------------------------------------------------------

# An inference engine (vLLM, SGLang) that is not importable; the message says how to install it.
EngineNotInstalledError = DependencyImportError


def import_engine(module: str, install: str, purpose: str) -> Any:
    """``importlib.import_module(module)``, or :class:`EngineNotInstalledError` naming ``install``."""
    return import_dependency(module, install, purpose)


# -- arguments ---------------------------------------------------------------------------------------


def pick(model: str, name: str, value: Any, alias: str, alias_value: Any, default: Any = None) -> Any:
    """``value`` or its alias (an error when both are set to different values), else ``default``."""
    if value is not None and alias_value is not None and value != alias_value:
        raise ModelArgsError(
            f"model '{model}': pass either {name}={value!r} or {alias}={alias_value!r}, not both"
        )
    chosen = value if value is not None else alias_value
    return default if chosen is None else chosen


def read_chat_template(value: str | None) -> str | None:
    """A chat template given inline or as the path of a file holding it (``None`` stays ``None``)."""
    if not value:
        return None
    text = str(value)
    path = Path(text).expanduser()
    if "\n" not in text and len(text) < 4096 and path.is_file():
        return path.read_text(encoding="utf-8")
    if "{%" in text or "{{" in text:
        return text
    raise ModelArgsError(
        f"chat_template={value!r} is neither a file nor an inline Jinja template (no '{{%' or '{{{{' in it)"
    )


def positive_int(model: str, name: str, value: Any) -> int:
    """``value`` (an int, an integral float or a numeric string) as a positive int; ModelArgsError otherwise."""
    number = 0
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and value.strip().isdigit():
        number = int(value.strip())
    if number < 1:
        raise ModelArgsError(f"model '{model}': {name} must be a positive integer, got {value!r}")
    return number


def parse_engine_kwargs(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """Engine arguments with JSON-looking strings (``{...}``, ``[...]``) parsed."""
    out: dict[str, Any] = {}
    for key, value in kwargs.items():
        if isinstance(value, str) and value.strip()[:1] in ("{", "["):
            try:
                value = json.loads(value)
            except ValueError as exc:
                raise ModelArgsError(
                    f"engine argument {key}={value!r} looks like JSON but does not parse: {exc}"
                ) from None
        out[key] = value
    return out


# -- sampling ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SamplingSettings:
    """Engine-neutral sampling settings of one request."""

    max_new_tokens: int
    temperature: float = 0.0
    top_p: float = 1.0
    stop: tuple[str, ...] = ()

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0


def _number(name: str, value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"generation_kwargs.{name} must be a number, got {value!r}") from None


def sampling_settings(gen_kwargs: Mapping[str, Any] | None, default_max_new_tokens: int) -> SamplingSettings:
    """Sampling settings from a task's ``gen_kwargs``.

    ``max_new_tokens`` defaults to ``default_max_new_tokens``; ``temperature`` (default 0) of 0, or
    ``do_sample`` false, is greedy decoding (then ``top_p`` is 1); ``until`` (a string or a list)
    becomes the stop strings, empty ones dropped. Other keys are ignored here.
    """
    kwargs = dict(gen_kwargs or {})
    raw_max = kwargs.get("max_new_tokens")
    max_new_tokens = default_max_new_tokens if raw_max is None else int(_number("max_new_tokens", raw_max))
    if max_new_tokens < 1:
        raise ConfigError(f"generation_kwargs.max_new_tokens must be at least 1, got {raw_max!r}")
    temperature = _number("temperature", kwargs.get("temperature") or 0.0)
    if temperature < 0:
        raise ConfigError(f"generation_kwargs.temperature must be >= 0, got {temperature}")
    if kwargs.get("do_sample") is False:
        temperature = 0.0
    top_p = 1.0
    if temperature > 0 and kwargs.get("top_p") is not None:
        top_p = _number("top_p", kwargs["top_p"])
        if not 0.0 < top_p <= 1.0:
            raise ConfigError(f"generation_kwargs.top_p must be in (0, 1], got {top_p}")
    until = kwargs.get("until")
    stops = [until] if isinstance(until, str) else list(until or [])
    stop = tuple(str(s) for s in stops if isinstance(s, str) and s)
    return SamplingSettings(max_new_tokens=max_new_tokens, temperature=temperature, top_p=top_p, stop=stop)


def vllm_sampling_kwargs(settings: SamplingSettings, seed: int | None = None) -> dict[str, Any]:
    """Keyword arguments of ``vllm.SamplingParams`` for ``settings`` (one completion per request)."""
    kwargs: dict[str, Any] = {
        "n": 1,
        "max_tokens": settings.max_new_tokens,
        "temperature": settings.temperature,
        "top_p": settings.top_p,
    }
    if settings.stop:
        kwargs["stop"] = list(settings.stop)
    if seed is not None:
        kwargs["seed"] = int(seed)
    return kwargs


class UnknownGenKwargs:
    """Logs each ignored ``gen_kwargs`` key once per model instance."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.seen: set[str] = set()

    def check(self, gen_kwargs: Mapping[str, Any] | None) -> None:
        unknown = sorted(set(gen_kwargs or {}) - ENGINE_GEN_KWARGS - self.seen)
        if unknown:
            self.seen.update(unknown)
            logger.warning("%s ignores generation arguments: %s", self.model, ", ".join(unknown))


# -- messages ----------------------------------------------------------------------------------------


def _simple_layout_messages(context: str, visuals: Sequence[Any]) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = [
        {"type": "video" if is_video(v) else "image", "url": v} for v in visuals if v is not None
    ]
    content.append({"type": "text", "text": context})
    return [{"role": "user", "content": content}]


def request_chat_messages(request: Instance, doc: Any) -> ChatMessages:
    """The conversation of a request: ``doc_to_messages(doc)``, or (simple layout) visuals + context."""
    first: Any = request.args[0]
    if callable(first):
        raw: Any = first(doc)
        return ChatMessages.from_raw(raw)
    visual_fn: Any = request.args[2] if len(request.args) > 2 and callable(request.args[2]) else None
    visuals: list[Any] = list(visual_fn(doc) or []) if visual_fn is not None else []
    return ChatMessages.from_raw(_simple_layout_messages(str(first), visuals))


def expand_frame_videos(
    messages: ChatMessages, max_frames_num: int | None, decode_files: bool = False
) -> ChatMessages:
    """Videos given as frame lists or frame folders become ``max_frames_num`` evenly sampled images
    (:func:`lmms_eval.media.load_video_frames`, first and last frame included); with
    ``decode_files`` so do video files (:func:`lmms_eval.media.decode_video`, same rule).

    Other videos (files, URLs) are left as video parts.
    """
    changed = False
    out: list[ChatMessage] = []
    for message in messages.messages:
        parts: list[Any] = []
        for part in message.content:
            if isinstance(part, ChatVideoContent) and (decode_files or is_frame_video(part.url)):
                parts.extend(ChatImageContent(url=frame) for frame in _video_images(part, max_frames_num))
                changed = True
            else:
                parts.append(part)
        out.append(ChatMessage(role=message.role, content=parts))
    return ChatMessages(messages=out) if changed else messages


def _video_images(part: ChatVideoContent, max_frames_num: int | None) -> list[Any]:
    if is_frame_video(part.url):
        return load_video_frames(part.url, max_frames_num)
    selection = FrameSelection(
        nframes=0 if max_frames_num is None else max_frames_num,
        start_time=part.start_time,
        end_time=part.end_time,
    )
    return list(decode_video(part.url, selection).frames)


def with_system_prompt(messages: list[dict[str, Any]], system_prompt: str | None) -> list[dict[str, Any]]:
    """``messages`` with a leading ``{"role": "system", "content": system_prompt}`` unless one exists."""
    if not system_prompt or (messages and messages[0].get("role") == "system"):
        return messages
    return [{"role": "system", "content": system_prompt}, *messages]


def build_vllm_messages(
    messages: ChatMessages,
    system_prompt: str | None = None,
    max_frames_num: int | None = DEFAULT_MAX_FRAMES_NUM,
    image_format: str | None = None,
    decode_videos: bool = False,
) -> list[dict[str, Any]]:
    """OpenAI-style messages for ``LLM.chat``: images as ``data:`` URIs, frame videos (and with
    ``decode_videos`` video files) as images, video files as ``video_url``, the system prompt first."""
    expanded = expand_frame_videos(messages, max_frames_num, decode_videos)
    for url in expanded.extract_media()[1]:
        if isinstance(url, (str, Path)):
            open_target(url)  # a missing local file is this request's MediaError, not the engine's
    converted = expanded.to_openai_messages(pass_video_url=True, image_format=image_format)
    return with_system_prompt(converted, system_prompt)


# -- outputs -----------------------------------------------------------------------------------------


def _length(value: Any) -> int | None:
    try:
        return len(value) if value is not None else None
    except TypeError:
        return None


def vllm_result(output: Any, latency_s: float, stop: Sequence[str]) -> GenerationResult:
    """A :class:`GenerationResult` from a vLLM ``RequestOutput`` (first completion)."""
    completions = getattr(output, "outputs", None) or []
    first = completions[0] if completions else None
    text = str(getattr(first, "text", "") or "")
    counts = TokenCounts(
        input_tokens=_length(getattr(output, "prompt_token_ids", None)),
        output_tokens=_length(getattr(first, "token_ids", None)),
    )
    ttft: float | None = None
    metrics = getattr(output, "metrics", None)
    arrival, first_token = getattr(metrics, "arrival_time", None), getattr(metrics, "first_token_time", None)
    if isinstance(arrival, (int, float)) and isinstance(first_token, (int, float)) and first_token >= arrival:
        ttft = float(first_token - arrival)
    has_counts = counts.input_tokens is not None or counts.output_tokens is not None
    return GenerationResult(
        text=apply_stop_strings(text, list(stop)),
        token_counts=counts if has_counts else None,
        latency_s=latency_s,
        time_to_first_token_s=ttft,
    )


def chunks(count: int, size: int) -> Iterator[range]:
    """``range(count)`` in consecutive pieces of at most ``size``."""
    for begin in range(0, count, size):
        yield range(begin, min(begin + size, count))


# -- the model ---------------------------------------------------------------------------------------


def check_one_engine_per_machine(engine: str) -> None:
    """The engines parallelise over the machine's GPUs themselves (tensor and data parallel sizes):
    several evaluator processes on one machine would each claim every GPU."""
    from lmms_eval.distributed import launch_info

    launch = launch_info()
    if launch.local_world_size > 1:
        raise ModelArgsError(
            f"model '{engine}': {launch.local_world_size} processes run on this machine "
            f"({launch.launcher}), but the {engine} engine uses the machine's GPUs itself; start one "
            "process per machine (torchrun --nproc_per_node 1) and set tensor_parallel_size / "
            "data_parallel_size in --model_args"
        )


class EngineChatModel(lmms):
    """Argument handling shared by the in-process engine backends (``vllm``, ``sglang``)."""

    is_simple = False
    engine_label = "engine"

    def _setup_common(
        self,
        pretrained: str | None,
        model: str | None,
        tensor_parallel_size: int | None,
        tp_size: int | None,
        chat_template: str | None,
        max_new_tokens: int,
        max_frames_num: int | None,
        trust_remote_code: bool,
        batch_size: int | str | None,
        seed: int | None,
        system_prompt: str | None,
        device: str | None,
        max_batch_size: int | None,
        engine_kwargs: Mapping[str, Any],
    ) -> None:
        name = type(self).__name__
        check_one_engine_per_machine(self.engine_label)
        checkpoint = pick(name, "pretrained", pretrained, "model", model)
        if not checkpoint:
            raise ModelArgsError(
                f"model '{name}' needs a checkpoint: pass --model_args pretrained=<hub id or folder>"
            )
        self.pretrained = str(checkpoint)
        tp = pick(name, "tensor_parallel_size", tensor_parallel_size, "tp_size", tp_size, 1)
        self.tensor_parallel_size = positive_int(name, "tensor_parallel_size", tp)
        self.chat_template = read_chat_template(chat_template)
        self.max_new_tokens = positive_int(name, "max_new_tokens", max_new_tokens)
        self.max_frames_num = (
            None if max_frames_num is None else positive_int(name, "max_frames_num", max_frames_num)
        )
        self.trust_remote_code = bool(trust_remote_code)
        self.batch_size_per_gpu = parse_batch_size(batch_size, name, auto=DEFAULT_BATCH_SIZE)
        self.seed = None if seed is None else int(seed)
        self.system_prompt = self._resolve_system_prompt(system_prompt)
        self.engine_kwargs = parse_engine_kwargs(engine_kwargs)
        if device is not None or max_batch_size is not None:
            logger.debug("%s: device / max_batch_size are decided by the engine; ignoring them", name)
        if self.engine_kwargs:
            logger.info("%s: passing to the engine: %s", name, ", ".join(sorted(self.engine_kwargs)))
        self._gen_kwargs_check = UnknownGenKwargs(name)

    def settings(self, request: Instance) -> SamplingSettings:
        """The sampling settings of ``request`` (its ``gen_kwargs`` over the model's defaults)."""
        gen_kwargs = request.args[1] if len(request.args) > 1 and isinstance(request.args[1], Mapping) else {}
        self._gen_kwargs_check.check(gen_kwargs)
        return sampling_settings(gen_kwargs, self.max_new_tokens)

    def answer_in_batches(
        self,
        requests: Sequence[Instance],
        answer_batch: Callable[[list[Instance]], Sequence[GenerationResult | RequestFailure]],
    ) -> list[str | GenerationResult | RequestFailure]:
        """``answer_batch`` consecutive batches of ``batch_size`` requests under the run's gate.

        Before each batch the gate is asked; once it refuses (budget spent, circuit breaker open,
        run stopped) that batch and the rest are answered with the refusal and not sent. After
        each batch the gate is told each answer, in request order.
        """
        results: list[str | GenerationResult | RequestFailure] = []
        for piece in chunks(len(requests), self.batch_size_per_gpu):
            refusal = self.gate.refusal()
            if refusal is not None:
                return results + [refusal] * (len(requests) - piece.start)
            batch = [requests[i] for i in piece]
            answers = answer_batch(batch)
            for request, answer in zip(batch, answers):
                self.gate.done(answer, request)
            results.extend(answers)
        return results

    @staticmethod
    def build_each(requests: Sequence[Instance], build: Callable[[Instance], T]) -> list[T | RequestFailure]:
        """``build(request)`` for each request; a request whose media cannot be read
        (:class:`~lmms_eval.media.MediaError`) gets its ``input`` failure instead."""
        built: list[T | RequestFailure] = []
        for request in requests:
            try:
                built.append(build(request))
            except MediaError as exc:
                built.append(media_failure(exc))
        return built

    def loglikelihood(self, requests: list[Instance]) -> list[tuple[float, bool]]:
        raise NotImplementedError(
            f"the '{self.engine_label}' chat backend does not compute loglikelihoods; it cannot run "
            "loglikelihood or multiple_choice tasks (use the 'huggingface' backend for those)"
        )


class VLLM(EngineChatModel):
    """vLLM offline engine; see the module docstring for the arguments."""

    engine_label = "vllm"

    def __init__(
        self,
        pretrained: ModelPath | None = None,
        model: ModelPath | None = None,
        tensor_parallel_size: int | None = None,
        tp_size: int | None = None,
        data_parallel_size: int | None = None,
        dp_size: int | None = None,
        gpu_memory_utilization: float = 0.8,
        chat_template: FileOrText | None = None,
        max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
        max_frames_num: int | None = DEFAULT_MAX_FRAMES_NUM,
        trust_remote_code: bool = True,
        batch_size: int | str | None = DEFAULT_BATCH_SIZE,
        seed: int | None = 1,
        system_prompt: FileOrText | None = None,
        image_format: str | None = None,
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
        dp = pick(name, "data_parallel_size", data_parallel_size, "dp_size", dp_size, 1)
        self.data_parallel_size = positive_int(name, "data_parallel_size", dp)
        if not 0.0 < float(gpu_memory_utilization) <= 1.0:
            raise ModelArgsError(
                f"model '{name}': gpu_memory_utilization must be in (0, 1], got {gpu_memory_utilization}"
            )
        self.gpu_memory_utilization = float(gpu_memory_utilization)
        self.image_format = image_format
        self.decode_videos = bool(decode_videos)
        vllm = import_engine("vllm", VLLM_INSTALL, "model 'vllm'")
        self._sampling_params_cls = vllm.SamplingParams
        self.llm = vllm.LLM(**self.engine_arguments())

    def engine_arguments(self) -> dict[str, Any]:
        """Keyword arguments of ``vllm.LLM``."""
        args: dict[str, Any] = {
            "model": self.pretrained,
            "tensor_parallel_size": self.tensor_parallel_size,
            "gpu_memory_utilization": self.gpu_memory_utilization,
            "trust_remote_code": self.trust_remote_code,
        }
        if self.data_parallel_size > 1:
            args["data_parallel_size"] = self.data_parallel_size
        if self.seed is not None:
            args["seed"] = self.seed
        return {**args, **self.engine_kwargs}

    def build_messages(self, request: Instance) -> list[dict[str, Any]]:
        """The OpenAI-style messages sent for ``request``."""
        chat = request_chat_messages(request, self.get_doc(request))
        return build_vllm_messages(
            chat, self.system_prompt, self.max_frames_num, self.image_format, self.decode_videos
        )

    def generate_until(self, requests: list[Instance]) -> list[str | GenerationResult | RequestFailure]:
        return self.answer_in_batches(requests, self._generate_batch)

    def _generate_batch(self, batch: list[Instance]) -> list[GenerationResult | RequestFailure]:
        built = self.build_each(batch, self.build_messages)
        answers: dict[int, GenerationResult | RequestFailure] = {
            i: b for i, b in enumerate(built) if isinstance(b, RequestFailure)
        }
        ready = [i for i in range(len(batch)) if i not in answers]
        if ready:
            conversations = [b for b in built if not isinstance(b, RequestFailure)]
            settings = [self.settings(batch[i]) for i in ready]
            params = [self._sampling_params_cls(**vllm_sampling_kwargs(s, self.seed)) for s in settings]
            started = time.perf_counter()
            outputs = self.llm.chat(
                conversations, sampling_params=params, chat_template=self.chat_template, use_tqdm=False
            )
            latency = time.perf_counter() - started
            if len(outputs) != len(ready):
                raise LmmsEvalError(f"vLLM returned {len(outputs)} outputs for {len(ready)} requests")
            answers.update(zip(ready, (vllm_result(o, latency, s.stop) for o, s in zip(outputs, settings))))
        return [answers[i] for i in range(len(batch))]

    def clean(self) -> None:
        """Drop the engine (frees its GPU memory once collected)."""
        if "llm" in vars(self):
            delattr(self, "llm")
        super().clean()


__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_MAX_FRAMES_NUM",
    "DEFAULT_MAX_NEW_TOKENS",
    "VLLM",
    "VLLM_INSTALL",
    "EngineChatModel",
    "EngineNotInstalledError",
    "SamplingSettings",
    "build_vllm_messages",
    "expand_frame_videos",
    "import_engine",
    "parse_engine_kwargs",
    "read_chat_template",
    "request_chat_messages",
    "sampling_settings",
    "vllm_result",
    "vllm_sampling_kwargs",
    "with_system_prompt",
]
