"""The shared engine of the transformers backends (``huggingface`` and the named families).

One class, :class:`HFVisionLanguageModel`, loads a checkpoint with :func:`load_processor` (works
without torchvision) and ``AutoModelForImageTextToText`` and answers all three request types for
both request layouts (chat: ``doc_to_messages``; simple: context string + ``doc_to_visual``). The
chat and simple classes in ``lmms_eval.models.chat`` / ``lmms_eval.models.simple`` only set
``is_simple`` and a default checkpoint.

Loading
    torch and transformers are imported through :mod:`lmms_eval.models.hf.runtime` (a one-line
    error naming ``pip install 'lmms_eval[hf]'`` without them; torch's thread count is set there),
    and ``pretrained`` is resolved by :func:`lmms_eval.models.hf.hub.resolve_checkpoint` (a local
    folder, a complete snapshot in the local Hugging Face cache, or the Hub after a short probe) so
    a checkpoint that cannot be had fails in seconds with one line.

Progress, budget and stop
    Before each batch the run's gate (``self.gate``) is asked; once it refuses (``--max_tokens``
    spent, circuit breaker open, Ctrl-C) the batch and the rest are answered with its
    ``RequestFailure(kind="not_sent")`` and not run. After each batch the gate is told each answer.

Generation (``generate_until``)
    Requests are grouped by identical ``gen_kwargs`` (and by whether they carry images), sorted by
    prompt length (longest first), run in left-padded batches of ``batch_size`` and returned in
    input order. ``until`` stop strings stop a row early (``stop_strings`` of ``generate``) and the
    decoded text is cut at the first one. ``temperature`` 0 (or unset) is greedy decoding;
    ``temperature > 0`` samples unless ``do_sample`` is false; ``top_p``, ``num_beams`` and
    ``max_new_tokens`` (default :data:`DEFAULT_MAX_NEW_TOKENS`) are passed on. Each result is a
    :class:`GenerationResult` whose ``latency_s`` is the wall time of its batch (encoding,
    generation, decoding), ``time_to_first_token_s`` the time from the batch start until the first
    new token's scores exist, ``input_tokens`` the row's non-padding prompt tokens (image tokens
    included) and ``output_tokens`` the tokens generated before EOS or padding.

Loglikelihood
    The context is the chat template applied with ``add_generation_prompt=True`` to the chat
    messages (or to the simple context with its visuals); the continuation is appended to that text
    as the start of the assistant's answer. The context length is measured with the processor
    (image tokens expand), the context ids must be a prefix of the context+continuation ids, and
    requests run in right-padded batches. Returns ``(sum of continuation log-probs, is_greedy)``.

Multi-round generation
    Chat: round 0 uses ``doc_to_messages(doc)``; round ``i > 0`` calls
    ``doc_to_messages(doc, round_idx=i, previous_output=[outputs so far])`` and appends the returned
    messages after the model's previous answer (the conversation accumulates). Rounds stop when
    the function returns ``None``, does not accept those arguments, returns the same messages as the
    round before, or after ``gen_kwargs['max_rounds']`` (default :data:`DEFAULT_MAX_ROUNDS`) rounds.
    The result is the last round's text, with token counts and latency summed over rounds. Simple
    requests fall back to one :meth:`generate_until` round.

Media
    Read by :mod:`lmms_eval.media`: images with :func:`~lmms_eval.media.load_image` (PIL images,
    paths, bytes, arrays, ``data:`` URIs, ``{"bytes"|"path": ...}`` dicts); videos (files, URLs,
    frame lists, frame folders) with :func:`~lmms_eval.media.decode_video`: ``max_num_frames``
    frames (default 32) sampled evenly (first and last included), or with ``fps`` that many frames
    per second up to ``max_num_frames``, inside the part's ``start_time`` / ``end_time``, scaled as
    decoded to at most ``video_max_pixels`` pixels each (default :data:`DEFAULT_VIDEO_MAX_PIXELS`).
    ``video_mode`` says how the model gets them: ``native`` as one video (``videos=`` with the
    frame indices and frame rate as ``video_metadata``, for the processors with a video processor:
    Qwen2-VL, Qwen2.5-VL, Qwen3-VL, InternVL, LLaVA-OneVision, SmolVLM; they need torchvision),
    ``frames`` as consecutive images (every family), ``auto`` (default) native when the processor
    has a video processor and the chat template renders a video part. Audio parts are read only by
    the audio backends (:mod:`lmms_eval.models.hf.qwen2_audio`); the others reject them.

    ``generate_until`` loads the media of the next batch while the model generates the current one
    (:func:`~lmms_eval.media.prefetch_batches`; ``LMMS_MEDIA_PREFETCH`` batches ahead, default 1,
    ``LMMS_MEDIA_WORKERS`` threads). A request whose image or video cannot be read (missing,
    corrupt, truncated, no frames: :class:`~lmms_eval.media.MediaError`) is answered with
    ``RequestFailure(kind="input")``: recorded, counted, not scored; the others run.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import logging
import os
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from lmms_eval.api.instance import GenerationResult, Instance, RequestFailure, TokenCounts
from lmms_eval.api.model import lmms, resolve_continuation
from lmms_eval.api.path_types import FileOrText, ModelPath
from lmms_eval.errors import LmmsEvalError, ModelArgsError
from lmms_eval.media import (
    DecodedVideo,
    FrameSelection,
    Loaded,
    MediaError,
    content_part,
    decode_video,
    is_video,
    load_image,
    media_failure,
    prefetch_batches,
)
from lmms_eval.models._common import apply_stop_strings, parse_batch_size
from lmms_eval.models.hf.hub import loading_errors, resolve_checkpoint
from lmms_eval.models.hf.runtime import fit_threads_to_model, import_torch, import_transformers
from lmms_eval.protocol import ChatMessages

logger = logging.getLogger(__name__)

T = TypeVar("T")

DEMO_NAME = "demo"
DEMO_FOLDER = Path(__file__).resolve().parents[2] / "demo" / "tiny_vlm"
DEFAULT_MAX_NEW_TOKENS = 256
DEFAULT_MAX_ROUNDS = 5
DTYPES = ("auto", "float32", "bfloat16", "float16")
IMAGE_PLACEHOLDER = "<image>"
# gen_kwargs keys the engine understands; others are logged once and ignored
GEN_KWARGS = ("until", "max_new_tokens", "temperature", "top_p", "do_sample", "num_beams", "max_rounds")
DEFAULT_VIDEO_MAX_PIXELS = 448 * 448  # per frame, as decoded; the processor may shrink it further
VIDEO_MODES = ("auto", "native", "frames")


# -- argument helpers --------------------------------------------------------------------------------


def resolve_pretrained(pretrained: str | None, default: str | None, model: str) -> str:
    """The checkpoint to load: ``pretrained``, else the class default; ``demo`` is the bundled model."""
    value = pretrained or default
    if not value:
        raise ModelArgsError(
            f"model '{model}' needs a checkpoint: pass --model_args pretrained=<hub id or local folder>"
        )
    if value == DEMO_NAME:
        if not (DEMO_FOLDER / "config.json").is_file():
            raise ModelArgsError(
                f"pretrained=demo: the bundled demo checkpoint is missing ({DEMO_FOLDER} has no "
                "config.json); reinstall lmms_eval or pass pretrained=<folder>"
            )
        return str(DEMO_FOLDER)
    return value


def resolve_device(device: str | None) -> str:
    """``device``, else ``cuda`` when torch sees a GPU, else ``cpu``. Launched as several processes
    (torchrun, accelerate, srun), ``cuda`` or nothing means this rank's GPU, ``cuda:LOCAL_RANK``: one
    replica of the model per rank (see :func:`lmms_eval.distributed.device_for_rank`)."""
    from lmms_eval.distributed import device_for_rank

    if device and device != "cuda":
        return device
    import torch

    return device_for_rank(device, bool(torch.cuda.is_available()))


def check_device_map(device_map: str | None, label: str) -> None:
    """``device_map`` spreads one model over every GPU of the machine: one process only."""
    from lmms_eval.distributed import launch_info

    launch = launch_info()
    if device_map and launch.local_world_size > 1:
        raise ModelArgsError(
            f"model '{label}': device_map={device_map} spreads one model over all local GPUs, but "
            f"{launch.local_world_size} processes run on this machine ({launch.launcher}); run one "
            "process per machine for device_map, or drop device_map for one replica per process"
        )


def resolve_dtype(torch_dtype: str | None) -> Any:
    """``"auto"`` or a ``torch.dtype`` for ``from_pretrained(dtype=...)``."""
    name = str(torch_dtype or "auto").removeprefix("torch.")
    if name not in DTYPES:
        raise ModelArgsError(f"torch_dtype={torch_dtype!r} is not supported; use one of {', '.join(DTYPES)}")
    if name == "auto":
        return "auto"
    import torch

    return getattr(torch, name)


def read_text_or_file(value: str | None) -> str | None:
    """``value`` itself, or the contents of the file it names."""
    if value and os.path.isfile(value):
        return Path(value).read_text(encoding="utf-8")
    return value


# -- request preparation -----------------------------------------------------------------------------


@dataclass(frozen=True)
class GenerationSettings:
    """The generation options of one request, normalised from its ``gen_kwargs``."""

    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS
    do_sample: bool = False
    temperature: float | None = None
    top_p: float | None = None
    num_beams: int = 1
    until: tuple[str, ...] = ()

    @classmethod
    def from_gen_kwargs(cls, gen_kwargs: dict[str, Any] | None) -> GenerationSettings:
        kwargs = dict(gen_kwargs or {})
        until = kwargs.get("until") or ()
        stops = tuple(s for s in ([until] if isinstance(until, str) else until) if s)
        temperature = kwargs.get("temperature")
        temperature = None if temperature is None else float(temperature)
        do_sample = kwargs.get("do_sample")
        sample = bool(temperature) if do_sample is None else bool(do_sample) and temperature != 0.0
        top_p = kwargs.get("top_p")
        return cls(
            max_new_tokens=int(kwargs.get("max_new_tokens") or DEFAULT_MAX_NEW_TOKENS),
            do_sample=sample,
            temperature=temperature if sample else None,
            top_p=None if top_p is None or not sample else float(top_p),
            num_beams=int(kwargs.get("num_beams") or 1),
            until=stops,
        )


@dataclass
class Prompt:
    """A rendered prompt: the text (one placeholder per image, native video and audio clip) and its
    images, native videos and audio clips (for the audio backends), in order."""

    text: str
    images: list[Any] = field(default_factory=list)
    videos: list[DecodedVideo] = field(default_factory=list)
    audios: list[Any] = field(default_factory=list)


@dataclass
class _Media:
    """The media of a prompt: images (video frames included in ``frames`` mode), native videos and
    audio clips."""

    images: list[Any] = field(default_factory=list)
    videos: list[DecodedVideo] = field(default_factory=list)
    audios: list[Any] = field(default_factory=list)


class FirstTokenTimer:
    """A logits processor that records when ``generate`` first scores a new token."""

    def __init__(self) -> None:
        self.first: float | None = None

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        if self.first is None:
            self.first = time.perf_counter()
        return scores


@contextlib.contextmanager
def _padding_side(tokenizer: Any, side: str) -> Iterator[None]:
    previous = tokenizer.padding_side
    tokenizer.padding_side = side
    try:
        yield
    finally:
        tokenizer.padding_side = previous


def _rounds_ignored(exc: TypeError) -> bool:
    text = str(exc)
    return "unexpected keyword argument" in text and ("round_idx" in text or "previous_output" in text)


# -- the engine ---------------------------------------------------------------------------------------


class HFVisionLanguageModel(lmms):
    """A transformers image-text-to-text checkpoint behind the lmms interface (see the module doc).

    Subclasses set ``is_simple``, ``default_pretrained`` (used when ``pretrained`` is not given)
    and ``model_types`` (the ``config.model_type`` values the family expects; another one is
    loaded anyway, with a warning).
    """

    is_simple = False
    model_id: ClassVar[str | None] = None  # the registry id named in errors (else the class name)
    default_pretrained: ClassVar[str | None] = None
    model_types: ClassVar[tuple[str, ...]] = ()
    model_class: ClassVar[str] = "AutoModelForImageTextToText"  # the transformers class that loads it
    # the family's prompt format, for checkpoints that ship no chat template (InstructBLIP, Fuyu)
    default_chat_template: ClassVar[str | None] = None

    def __init__(
        self,
        pretrained: ModelPath | None = None,
        device: str | None = None,
        device_map: str | None = None,
        torch_dtype: str | None = "auto",
        attn_implementation: str | None = None,
        max_pixels: int | None = None,
        min_pixels: int | None = None,
        max_num_frames: int = 32,
        fps: float | None = None,
        video_max_pixels: int | None = DEFAULT_VIDEO_MAX_PIXELS,
        video_mode: str = "auto",
        trust_remote_code: bool = False,
        batch_size: int | str = 1,
        system_prompt: FileOrText | None = None,
        chat_template: FileOrText | None = None,
    ) -> None:
        super().__init__()
        name = type(self).__name__
        label = self.model_id or name
        self.pretrained = resolve_pretrained(pretrained, self.default_pretrained, name)
        self.batch_size_per_gpu = parse_batch_size(batch_size, label)
        self.max_num_frames = int(max_num_frames)
        self.fps = None if fps is None else float(fps)
        self.video_max_pixels = None if video_max_pixels is None else int(video_max_pixels)
        if video_mode not in VIDEO_MODES:
            raise ModelArgsError(
                f"video_mode={video_mode!r} is not supported; use one of {', '.join(VIDEO_MODES)}"
            )
        self.system_prompt = self._resolve_system_prompt(system_prompt)
        import_torch(label)  # a one-line error without the hf extra; sets torch's thread count
        import_transformers(label)
        self.checkpoint = resolve_checkpoint(self.pretrained, label)
        check_device_map(device_map, label)
        self._device = resolve_device(device)
        self.processor = self._load_processor(trust_remote_code, chat_template, max_pixels, min_pixels)
        self.tokenizer: Any = getattr(self.processor, "tokenizer", self.processor)
        self.model: Any = self._load_model(device_map, torch_dtype, attn_implementation, trust_remote_code)
        has_video_processor = getattr(self.processor, "video_processor", None) is not None
        self.native_video = video_mode == "native" or (
            video_mode == "auto" and has_video_processor and self.template_shows_video()
        )
        self._warned_kwargs: set[str] = set()
        if not self.is_simple and not self.chat_template:
            raise LmmsEvalError(
                f"{name}: checkpoint '{self.pretrained}' has no chat template; pass chat_template=<file or "
                "Jinja text> in --model_args, or use a simple model"
            )
        logger.info(
            "%s: loaded %s (%s, %s) on %s, dtype %s, batch size %d",
            name,
            self.pretrained,
            type(self.model).__name__,
            {"local": "local folder", "cache": "local cache", "hub": "downloaded"}[self.checkpoint.source],
            self.device,
            self.model.dtype,
            self.batch_size_per_gpu,
        )

    # -- loading ----------------------------------------------------------------------------------

    def _load_processor(
        self,
        trust_remote_code: bool,
        chat_template: str | None,
        max_pixels: int | None,
        min_pixels: int | None,
    ) -> Any:
        from lmms_eval.models.hf.compat import load_processor

        with loading_errors(self.checkpoint, self.model_id or type(self).__name__):
            processor = load_processor(self.checkpoint.path, trust_remote_code=bool(trust_remote_code))
        override = read_text_or_file(chat_template)
        if override:
            processor.chat_template = override
        elif not getattr(processor, "chat_template", None):
            tokenizer_template = getattr(getattr(processor, "tokenizer", None), "chat_template", None)
            if isinstance(tokenizer_template, str):
                processor.chat_template = tokenizer_template
            elif self.default_chat_template:
                processor.chat_template = self.default_chat_template
        if max_pixels is not None or min_pixels is not None:
            self._set_pixel_budget(processor, max_pixels, min_pixels)
        return processor

    @staticmethod
    def _set_pixel_budget(processor: Any, max_pixels: int | None, min_pixels: int | None) -> None:
        """Pass ``max_pixels`` / ``min_pixels`` to an image processor that resizes by pixel count."""
        image_processor = getattr(processor, "image_processor", None)
        valid = getattr(getattr(image_processor, "valid_kwargs", None), "__annotations__", {})
        if image_processor is None or "max_pixels" not in valid:
            logger.warning(
                "max_pixels/min_pixels ignored: %s does not resize by pixel count",
                type(image_processor).__name__,
            )
            return
        size = image_processor.size
        shortest = (
            getattr(size, "shortest_edge", None) if not isinstance(size, dict) else size.get("shortest_edge")
        )
        longest = (
            getattr(size, "longest_edge", None) if not isinstance(size, dict) else size.get("longest_edge")
        )
        image_processor.size = {
            "shortest_edge": int(min_pixels) if min_pixels is not None else shortest,
            "longest_edge": int(max_pixels) if max_pixels is not None else longest,
        }

    def _load_model(
        self,
        device_map: str | None,
        torch_dtype: str | None,
        attn_implementation: str | None,
        trust_remote_code: bool,
    ) -> Any:
        import transformers
        from transformers import AutoConfig

        label = self.model_id or type(self).__name__
        with loading_errors(self.checkpoint, label):
            config = AutoConfig.from_pretrained(
                self.checkpoint.path, trust_remote_code=bool(trust_remote_code)
            )
        model_type = str(getattr(config, "model_type", ""))
        if self.model_types and model_type not in self.model_types:
            logger.warning(
                "%s expects a %s checkpoint, but '%s' is '%s'; loading it anyway",
                type(self).__name__,
                " / ".join(self.model_types),
                self.pretrained,
                model_type,
            )
        class_name, family_kwargs = self._loader_for(model_type)
        kwargs: dict[str, Any] = {
            **family_kwargs,
            "dtype": resolve_dtype(torch_dtype),
            "trust_remote_code": bool(trust_remote_code),
        }
        if attn_implementation:
            kwargs["attn_implementation"] = attn_implementation
        if device_map:
            kwargs["device_map"] = device_map
        auto_class: Any = getattr(transformers, class_name)
        with loading_errors(self.checkpoint, label):
            model = self._model_for_evaluation(auto_class.from_pretrained(self.checkpoint.path, **kwargs))
        if not device_map:
            model = model.to(self._device)
        if str(self._device).startswith("cpu"):
            fit_threads_to_model(import_torch(label), sum(p.numel() for p in model.parameters()))
        return model.eval()

    def _loader_for(self, model_type: str) -> tuple[str, dict[str, Any]]:
        """The transformers class that loads a checkpoint of ``model_type``, and the extra
        ``from_pretrained`` arguments of the family (``model_class`` and none here)."""
        return self.model_class, {}

    def _model_for_evaluation(self, loaded: Any) -> Any:
        """The module that generates and scores, out of what ``model_class`` loaded (itself here;
        a family whose checkpoint wraps more than one model picks its text model)."""
        return loaded

    # -- properties -------------------------------------------------------------------------------

    @property
    def device(self) -> Any:
        """Where inputs go (the model's first device under a ``device_map``)."""
        return self.model.device

    @property
    def chat_template(self) -> str | None:
        template = getattr(self.processor, "chat_template", None)
        return template if isinstance(template, str) else None

    def template_shows_video(self) -> bool:
        """Whether the chat template renders a video part as the processor's video token."""
        token = getattr(self.processor, "video_token", None)
        if not token or not self.chat_template:
            return False
        probe = [{"role": "user", "content": [{"type": "video"}, {"type": "text", "text": "?"}]}]
        try:
            text = self.processor.apply_chat_template(probe, tokenize=False, add_generation_prompt=True)
        except Exception:  # a template that cannot render a video part: frames it is
            return False
        return str(token) in str(text)

    @property
    def image_token(self) -> str:
        """The processor's image placeholder (used without a chat template)."""
        return str(getattr(self.processor, "image_token", None) or IMAGE_PLACEHOLDER)

    # -- prompts ----------------------------------------------------------------------------------

    def _convert_messages(
        self, messages: ChatMessages, load: bool = True
    ) -> tuple[list[dict[str, Any]], _Media]:
        """HF chat messages with bare image / video parts, and their media in order.

        With ``load=False`` nothing is read: the media are ``None`` and a video in ``frames`` mode
        stands for ``max_num_frames`` images (the estimate batching sorts by).
        """
        media = _Media()
        converted: list[dict[str, Any]] = []
        for message in messages.to_hf_messages():
            parts: list[dict[str, Any]] = []
            for part in message["content"]:
                kind = part["type"]
                if kind == "text":
                    parts.append({"type": "text", "text": part["text"]})
                elif kind == "image":
                    media.images.append(load_image(part["image"]) if load else None)
                    parts.append({"type": "image"})
                elif kind == "video":
                    parts.extend(self._video_parts(part, media, load))
                else:
                    parts.append(self._audio_part(part, media, load))
            converted.append({"role": message["role"], "content": parts})
        return self._apply_system_prompt(converted, self.system_prompt), media

    def _audio_part(self, part: dict[str, Any], media: _Media, load: bool) -> dict[str, Any]:
        """Read one audio part into ``media``; the message part that stands for it. The audio
        backends (:mod:`lmms_eval.models.hf.qwen2_audio`) override this."""
        raise LmmsEvalError(f"{type(self).__name__}: audio inputs are not supported")

    def _video_parts(self, part: dict[str, Any], media: _Media, load: bool) -> list[dict[str, Any]]:
        """Read one video part into ``media``; the message parts that stand for it."""
        if not load:  # the estimate: max_num_frames frames, whatever the mode
            media.images.extend([None] * self.max_num_frames)
            return [{"type": "video"}] if self.native_video else [{"type": "image"}] * self.max_num_frames
        video = self._read_video(part)
        if self.native_video:
            media.videos.append(video)
            return [{"type": "video"}]
        from PIL import Image

        media.images.extend(Image.fromarray(frame) for frame in video.frames)
        return [{"type": "image"} for _ in range(len(video.frames))]

    def _read_video(self, part: dict[str, Any]) -> DecodedVideo:
        """A video part's frames (module doc, "Media"); a broken video is a MediaError."""
        selection = FrameSelection(
            nframes=None if self.fps else self.max_num_frames,
            fps=self.fps,
            max_num_frames=self.max_num_frames,
            start_time=part.get("video_start"),
            end_time=part.get("video_end"),
            max_pixels=self.video_max_pixels,
        )
        return decode_video(part["video"], selection)

    def _render(self, messages: list[dict[str, Any]], media: _Media | list[Any]) -> Prompt:
        """The prompt for generation: the chat template with the generation prompt, or plain text."""
        media = media if isinstance(media, _Media) else _Media(images=list(media))
        if self.chat_template:
            text = self.processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
            return Prompt(str(text), media.images, media.videos, media.audios)
        pieces: list[str] = []
        for message in messages:
            for part in message["content"]:
                pieces.append(part["text"] if part["type"] == "text" else self.image_token)
        return Prompt("".join(pieces), media.images, media.videos, media.audios)

    def _simple_messages(self, context: str, visuals: Sequence[Any]) -> list[dict[str, Any]]:
        """A user message from a simple context: ``<image>`` placeholders are filled in order,
        remaining visuals (and all videos and audio clips) go first."""
        media: list[dict[str, Any]] = []
        for visual in visuals:
            if content_part(visual)["type"] == "audio":
                media.append({"type": "audio", "url": visual})
            else:
                media.append(
                    {"type": "video", "url": visual} if is_video(visual) else {"type": "image", "url": visual}
                )
        pieces = context.split(IMAGE_PLACEHOLDER)
        images = [m for m in media if m["type"] == "image"]
        slots = min(len(pieces) - 1, len(images))
        leading = [m for m in media if m["type"] != "image"] + images[: len(images) - slots]
        inline = images[len(images) - slots :]
        content: list[dict[str, Any]] = list(leading)
        for i, piece in enumerate(pieces):
            if piece:
                content.append({"type": "text", "text": piece})
            if i < len(inline):
                content.append(inline[i])
        return [{"role": "user", "content": content}]

    def _messages_for(self, request: Instance, doc: Any) -> ChatMessages:
        """The chat messages of a ``generate_until`` or ``loglikelihood`` request (no media read)."""
        first: Any = request.args[0]
        raw: Any
        if callable(first):
            raw = first(doc)
        else:
            visual_fn: Any = request.args[2] if len(request.args) > 2 else None
            produced: Any = visual_fn(doc) if callable(visual_fn) else None
            visuals = list(produced or [])
            raw = self._simple_messages(str(first), visuals)
        return ChatMessages.from_raw(raw)

    def _load_prompt(self, messages: ChatMessages) -> Prompt:
        """The prompt with its media read (the work :func:`prefetch_batches` does ahead)."""
        converted, media = self._convert_messages(messages)
        return self._render(converted, media)

    def _prompt_for(self, request: Instance, doc: Any) -> Prompt:
        """The generation prompt of a ``generate_until`` or ``loglikelihood`` request."""
        return self._load_prompt(self._messages_for(request, doc))

    # -- encoding ---------------------------------------------------------------------------------

    def _encode(
        self,
        texts: list[str],
        images: list[list[Any]],
        side: str,
        videos: list[list[DecodedVideo]] | None = None,
        audios: list[list[Any]] | None = None,
    ) -> Any:
        """Processor outputs for a batch (padded on ``side``), on the model's device and dtype."""
        kwargs: dict[str, Any] = {"text": texts, "return_tensors": "pt", "padding": True}
        if any(images):
            kwargs["images"] = images
        if videos and any(videos):
            kwargs.update(native_video_inputs([v for row in videos for v in row]))
        if audios and any(audios):
            kwargs.update(self._audio_inputs([a for row in audios for a in row]))
        with _padding_side(self.tokenizer, side):
            batch = self.processor(**kwargs)
        return batch.to(self.device).to(self.model.dtype)

    def _audio_inputs(self, audios: list[Any]) -> dict[str, Any]:
        """The processor arguments of a batch's audio clips (the audio backends override this)."""
        raise LmmsEvalError(f"{type(self).__name__}: audio inputs are not supported")

    def _length_key(self, prompt: Prompt) -> int:
        frames = sum(self.max_num_frames for _ in prompt.videos)
        return len(self.tokenizer(prompt.text, add_special_tokens=False)["input_ids"]) + 64 * (
            len(prompt.images) + frames
        )

    def _batches(self, keys: dict[int, Any], lengths: dict[int, int]) -> Iterator[list[int]]:
        """Indices grouped by key, longest first within a group, in chunks of ``batch_size``."""
        groups: dict[Any, list[int]] = defaultdict(list)
        for index, key in keys.items():
            groups[key].append(index)
        for members in groups.values():
            members.sort(key=lambda i: (-lengths[i], i))
            for begin in range(0, len(members), self.batch_size_per_gpu):
                yield members[begin : begin + self.batch_size_per_gpu]

    # -- generation -------------------------------------------------------------------------------

    def _settings(self, gen_kwargs: Any) -> GenerationSettings:
        kwargs = gen_kwargs if isinstance(gen_kwargs, dict) else {}
        unknown = sorted(set(kwargs) - set(GEN_KWARGS) - self._warned_kwargs)
        if unknown:
            self._warned_kwargs.update(unknown)
            logger.warning("%s ignores generation arguments: %s", type(self).__name__, ", ".join(unknown))
        return GenerationSettings.from_gen_kwargs(kwargs)

    def _generation_config(self, settings: GenerationSettings) -> Any:
        config = copy.deepcopy(self.model.generation_config)
        config.max_new_tokens = settings.max_new_tokens
        config.num_beams = settings.num_beams
        config.do_sample = settings.do_sample
        if settings.do_sample:
            if settings.temperature is not None:
                config.temperature = settings.temperature
            if settings.top_p is not None:
                config.top_p = settings.top_p
        else:
            config.temperature = None
            config.top_p = None
            config.top_k = None
        if config.pad_token_id is None:
            pad = self.tokenizer.pad_token_id
            config.pad_token_id = pad if pad is not None else self.tokenizer.eos_token_id
        return config

    def _stop_ids(self, config: Any) -> set[int]:
        eos = config.eos_token_id
        ids = set(eos if isinstance(eos, list) else [] if eos is None else [eos])
        if config.pad_token_id is not None:
            ids.add(int(config.pad_token_id))
        return ids

    def _generation_batches(
        self, prompts: Sequence[Prompt], settings: Sequence[GenerationSettings]
    ) -> Iterator[list[int]]:
        keys = {i: (settings[i], bool(p.images or p.videos or p.audios)) for i, p in enumerate(prompts)}
        lengths = {i: self._length_key(p) for i, p in enumerate(prompts)}
        return self._batches(keys, lengths)

    def generate_prompts(
        self,
        prompts: Sequence[Prompt],
        settings: Sequence[GenerationSettings],
        requests: Sequence[Instance] | None = None,
    ) -> Sequence[GenerationResult | RequestFailure]:
        """Generate for rendered prompts (batched as described in the module doc), in input order.

        With ``requests`` (one per prompt) the run's gate admits each batch and is told each answer
        (see :meth:`_run_batches`); without, every prompt is generated.
        """

        def run(batch: list[int]) -> list[GenerationResult]:
            return self._generate_batch([prompts[i] for i in batch], settings[batch[0]])

        if requests is not None:
            return self._run_batches(self._generation_batches(prompts, settings), len(prompts), run, requests)
        return self._generate_all(prompts, settings)

    def _generate_all(
        self, prompts: Sequence[Prompt], settings: Sequence[GenerationSettings]
    ) -> list[GenerationResult]:
        results: dict[int, GenerationResult] = {}
        for batch in self._generation_batches(prompts, settings):
            results.update(zip(batch, self._generate_batch([prompts[i] for i in batch], settings[batch[0]])))
        return [results[i] for i in range(len(prompts))]

    def _run_batches(
        self,
        batches: Iterable[list[int]],
        count: int,
        run: Callable[..., Sequence[T]],
        requests: Sequence[Instance],
        load: Callable[[int], Any] | None = None,
        preset: dict[int, RequestFailure] | None = None,
    ) -> list[T | RequestFailure]:
        """``run`` each batch of indices under the run's gate; the answers by index.

        Before each batch the gate is asked (:meth:`RequestGate.refusal`): once it refuses (budget
        spent, circuit breaker open, run stopped) that batch and all after it are not run and are
        answered with the refusal. After each batch the gate is told each answer, in batch order.
        With ``load``, each index's media are read ahead by :func:`prefetch_batches` and ``run``
        gets ``(batch, [Loaded, ...])``. ``preset`` answers (requests that failed before any batch,
        in no batch) are reported to the gate first.
        """
        results: dict[int, T | RequestFailure] = dict(preset or {})
        for index, failure in results.items():
            self.gate.done(failure, requests[index])
        listed = list(batches)
        loads = prefetch_batches(listed, load) if load is not None else None
        try:
            for batch in listed:
                refusal = self.gate.refusal()
                if refusal is not None:
                    return [results.get(i, refusal) for i in range(count)]
                outputs = run(batch, next(loads)) if loads is not None else run(batch)
                for index, output in zip(batch, outputs):
                    results[index] = output
                    self.gate.done(output, requests[index])
        finally:
            if loads is not None:
                loads.close()
        return [results[i] for i in range(count)]

    def _generate_batch(self, prompts: list[Prompt], settings: GenerationSettings) -> list[GenerationResult]:
        import torch
        from transformers import LogitsProcessorList

        started = time.perf_counter()
        timer = FirstTokenTimer()
        inputs = self._encode(
            [p.text for p in prompts],
            [p.images for p in prompts],
            "left",
            [p.videos for p in prompts],
            [p.audios for p in prompts],
        )
        config = self._generation_config(settings)
        extra: dict[str, Any] = {}
        if settings.until:  # rows stop early; the decoded text is cut below as well
            config.stop_strings = list(settings.until)
            extra["tokenizer"] = self.tokenizer
        with torch.inference_mode():
            output = self.model.generate(
                **inputs, generation_config=config, logits_processor=LogitsProcessorList([timer]), **extra
            )
        prompt_width = inputs["input_ids"].shape[1]
        stop_ids = self._stop_ids(config)
        rows: list[tuple[str, int, int]] = []
        for i, row in enumerate(output[:, prompt_width:].tolist()):
            count = next((k for k, token in enumerate(row) if token in stop_ids), len(row))
            text = self.tokenizer.decode(row[:count], skip_special_tokens=True)
            rows.append(
                (apply_stop_strings(text, settings.until), int(inputs["attention_mask"][i].sum()), count)
            )
        latency = time.perf_counter() - started
        first = None if timer.first is None else timer.first - started
        return [
            GenerationResult(
                text=text,
                token_counts=TokenCounts(input_tokens=n_in, output_tokens=n_out),
                latency_s=latency,
                time_to_first_token_s=first,
            )
            for text, n_in, n_out in rows
        ]

    def generate_until(self, requests: list[Instance]) -> list[str | GenerationResult | RequestFailure]:
        return self._generate_until(requests, requests)

    def _generate_until(
        self, requests: Sequence[Instance], report_as: Sequence[Instance]
    ) -> list[str | GenerationResult | RequestFailure]:
        """Generate for ``requests``; the gate hears the answers as those of ``report_as``.

        Batches are formed from the prompts without their media (a video counts as
        ``max_num_frames`` images); the media of each batch are read by :func:`prefetch_batches`,
        ahead of the model (module doc, "Media").
        """
        messages: list[ChatMessages] = []
        estimates: list[Prompt] = []
        settings: list[GenerationSettings] = []
        for request in requests:
            messages.append(self._messages_for(request, self.get_doc(request)))
            converted, media = self._convert_messages(messages[-1], load=False)
            estimates.append(self._render(converted, media))
            settings.append(self._settings(request.args[1]))
        batches = list(self._generation_batches(estimates, settings))

        def run(batch: list[int], loaded: list[Loaded[Prompt]]) -> list[GenerationResult | RequestFailure]:
            return self._generate_loaded(batch, loaded, settings[batch[0]])

        def load(index: int) -> Prompt:
            return self._load_prompt(messages[index])

        return list(self._run_batches(batches, len(requests), run, report_as, load=load))

    def _generate_loaded(
        self, batch: list[int], loaded: list[Loaded[Prompt]], settings: GenerationSettings
    ) -> list[GenerationResult | RequestFailure]:
        """Generate for the batch members whose media were read; the others fail as ``input``."""
        outputs: list[GenerationResult | RequestFailure] = [
            media_failure(item.error) if item.error is not None else GenerationResult(text="")
            for item in loaded
        ]
        ready = [k for k, item in enumerate(loaded) if item.error is None]
        if ready:
            results = self._generate_batch([loaded[k].get() for k in ready], settings)
            for k, result in zip(ready, results):
                outputs[k] = result
        return outputs

    # -- multi-round ------------------------------------------------------------------------------

    def generate_until_multi_round(
        self, requests: list[Instance]
    ) -> list[str | GenerationResult | RequestFailure]:
        """Multi-round generation (module doc); dialogues run ``batch_size`` at a time, in request
        order, all their rounds batched together; the gate admits each group and hears its answers."""
        if any(not callable(r.args[0]) for r in requests):
            return self._generate_until([self._as_single_round(r) for r in requests], requests)
        size = self.batch_size_per_gpu
        groups = (list(range(b, min(b + size, len(requests)))) for b in range(0, len(requests), size))

        def run(batch: list[int]) -> list[GenerationResult | RequestFailure]:
            try:
                return list(self._run_dialogues([requests[i] for i in batch]))
            except MediaError:  # run the group's dialogues one by one: only the broken ones fail
                return [self._run_dialogue(requests[i]) for i in batch]

        return list(self._run_batches(groups, len(requests), run, requests))

    def _run_dialogue(self, request: Instance) -> GenerationResult | RequestFailure:
        try:
            return self._run_dialogues([request])[0]
        except MediaError as exc:
            return media_failure(exc)

    def _run_dialogues(self, requests: Sequence[Instance]) -> list[GenerationResult]:
        """All rounds of these dialogues; each round's prompts are generated in batches."""
        states = [_Dialogue(request, self.get_doc(request)) for request in requests]
        for state in states:
            state.settings = self._settings(state.request.args[1])
            state.add_round(state.request.args[0](state.doc))
        round_idx = 0
        while True:
            active = [s for s in states if not s.done]
            if not active:
                break
            prompts = [self._load_prompt(ChatMessages.from_raw(state.conversation)) for state in active]
            outputs = self._generate_all(prompts, [s.settings for s in active])
            round_idx += 1
            for state, output in zip(active, outputs):
                state.record(output)
                if round_idx >= state.max_rounds:
                    state.done = True
                    continue
                state.add_round(self._next_round(state, round_idx))
        return [state.result() for state in states]

    @staticmethod
    def _as_single_round(request: Instance) -> Instance:
        context, gen_kwargs, visual_fn, _text_fn, doc_id, task, split = request.args
        return Instance(
            "generate_until",
            (context, gen_kwargs, visual_fn, doc_id, task, split),
            request.idx,
            request.metadata,
        )

    @staticmethod
    def _next_round(state: _Dialogue, round_idx: int) -> Any:
        try:
            return state.request.args[0](state.doc, round_idx=round_idx, previous_output=list(state.outputs))
        except TypeError as exc:
            if _rounds_ignored(exc):
                return None
            raise

    # -- loglikelihood ----------------------------------------------------------------------------

    def loglikelihood(self, requests: list[Instance]) -> list[Any]:
        """``(log-probability, is_greedy)`` per request, or the gate's refusal for requests not run."""
        contexts: list[Prompt] = []
        continuations: list[str] = []
        failed: dict[int, RequestFailure] = {}
        for i, request in enumerate(requests):
            doc = self.get_doc(request)
            try:
                contexts.append(self._prompt_for(request, doc))
            except MediaError as exc:  # this request fails as 'input'; the others run
                failed[i] = media_failure(exc)
                contexts.append(Prompt(""))
            continuations.append(resolve_continuation(request.args[1], doc))
        ok = [i for i in range(len(requests)) if i not in failed]
        keys = {i: bool(contexts[i].images or contexts[i].videos or contexts[i].audios) for i in ok}
        lengths = {
            i: self._length_key(Prompt(contexts[i].text + continuations[i], contexts[i].images)) for i in ok
        }

        def run(batch: list[int]) -> list[tuple[float, bool]]:
            return self._loglikelihood_batch([contexts[i] for i in batch], [continuations[i] for i in batch])

        batches = self._batches(keys, lengths)
        return list(self._run_batches(batches, len(requests), run, requests, preset=failed))

    def _loglikelihood_batch(
        self, contexts: list[Prompt], continuations: list[str]
    ) -> list[tuple[float, bool]]:
        import torch

        images = [p.images for p in contexts]
        videos = [p.videos for p in contexts]
        audios = [p.audios for p in contexts]
        context_inputs = self._encode([p.text for p in contexts], images, "right", videos, audios)
        full_inputs = self._encode(
            [p.text + c for p, c in zip(contexts, continuations)], images, "right", videos, audios
        )
        with torch.inference_mode():
            logits = self.model(**full_inputs).logits
        context_lengths = context_inputs["attention_mask"].sum(dim=1).tolist()
        full_lengths = full_inputs["attention_mask"].sum(dim=1).tolist()
        scores: list[tuple[float, bool]] = []
        for i, (n_ctx, n_full) in enumerate(zip(context_lengths, full_lengths)):
            context_ids = context_inputs["input_ids"][i, :n_ctx]
            full_ids = full_inputs["input_ids"][i, :n_full]
            if n_full < n_ctx or not torch.equal(full_ids[:n_ctx], context_ids):
                raise LmmsEvalError(
                    f"{type(self).__name__}: the tokens of the context are not a prefix of the tokens of "
                    f"context + continuation (continuation {continuations[i]!r}); the tokenizer merges "
                    "across the boundary, so the continuation's log-likelihood is not well defined"
                )
            if n_full == n_ctx:
                scores.append((0.0, True))
                continue
            log_probs = torch.log_softmax(logits[i, n_ctx - 1 : n_full - 1].float(), dim=-1)
            targets = full_ids[n_ctx:]
            total = log_probs.gather(-1, targets.unsqueeze(-1)).sum()
            greedy = bool(torch.equal(log_probs.argmax(dim=-1), targets))
            scores.append((float(total), greedy))
        return scores


def native_video_inputs(videos: Sequence[DecodedVideo]) -> dict[str, Any]:
    """The processor arguments of videos given natively: the frames, and as ``video_metadata``
    the frame rate, the frame count and the indices of the frames given (so the processor neither
    samples again nor guesses timestamps)."""
    from transformers.video_utils import VideoMetadata

    metadata = [
        VideoMetadata(
            total_num_frames=v.total_frames,
            fps=v.video_fps,
            width=int(v.frames.shape[2]),
            height=int(v.frames.shape[1]),
            duration=v.duration,
            video_backend=v.backend,
            frames_indices=list(v.indices),
        )
        for v in videos
    ]
    return {"videos": [v.frames for v in videos], "video_metadata": metadata, "do_sample_frames": False}


class _Dialogue:
    """The state of one multi-round request."""

    def __init__(self, request: Instance, doc: Any) -> None:
        self.request = request
        self.doc = doc
        self.settings = GenerationSettings()
        gen_kwargs = request.args[1] if isinstance(request.args[1], dict) else {}
        self.max_rounds = max(1, int(gen_kwargs.get("max_rounds") or DEFAULT_MAX_ROUNDS))
        self.conversation: list[dict[str, Any]] = []
        self.last_round: list[dict[str, Any]] | None = None
        self.outputs: list[str] = []
        self.results: list[GenerationResult] = []
        self.done = False

    def add_round(self, raw: Any) -> None:
        """Append a round's messages, or finish when there are none or they repeat the last round."""
        if raw is None:
            self.done = True
            return
        messages = [m.model_dump() for m in ChatMessages.from_raw(raw).messages]
        if self.last_round is not None and _same_messages(messages, self.last_round):
            self.done = True
            return
        self.last_round = messages
        self.conversation.extend(messages)

    def record(self, output: GenerationResult) -> None:
        self.outputs.append(output.text)
        self.results.append(output)
        self.conversation.append({"role": "assistant", "content": [{"type": "text", "text": output.text}]})

    def result(self) -> GenerationResult:
        if not self.results:
            return GenerationResult(text="")
        counts = [r.token_counts for r in self.results if r.token_counts is not None]
        return GenerationResult(
            text=self.results[-1].text,
            token_counts=TokenCounts(
                input_tokens=sum(c.input_tokens or 0 for c in counts),
                output_tokens=sum(c.output_tokens or 0 for c in counts),
            ),
            latency_s=sum(r.latency_s or 0.0 for r in self.results),
            time_to_first_token_s=self.results[0].time_to_first_token_s,
        )


def _same_messages(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> bool:
    """Equal messages, comparing images by their pixels."""

    def fingerprint(value: Any) -> str:
        if hasattr(value, "tobytes"):
            return f"{type(value).__name__}:{hashlib.sha1(value.tobytes()).hexdigest()}"
        return f"{type(value).__name__}:{value!r}"

    def key(messages: list[dict[str, Any]]) -> str:
        return json.dumps(messages, default=fingerprint, sort_keys=True)

    return key(a) == key(b)


__all__ = [
    "DEFAULT_MAX_NEW_TOKENS",
    "DEFAULT_MAX_ROUNDS",
    "DEMO_FOLDER",
    "FirstTokenTimer",
    "GenerationSettings",
    "HFVisionLanguageModel",
    "Prompt",
    "native_video_inputs",
    "resolve_pretrained",
]
