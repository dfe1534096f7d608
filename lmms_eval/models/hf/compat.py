"""Processor loading that works without torchvision.

In transformers 5, the Qwen2-VL / Qwen2.5-VL / Qwen3-VL / Qwen3.5 / Qwen2.5-Omni, SmolVLM, InternVL,
LLaVA-OneVision, LLaVA-NeXT-Video, Video-LLaVA, GLM-4V and MiniCPM-V 4.6 processors insist on a
video processor, and every video processor needs torchvision; without it
``AutoProcessor`` either raises or silently returns only the tokenizer. These subclasses drop the video processor (images still use
the PIL image processors) and are registered with ``AutoProcessor`` so folders saved with them load.
:func:`load_processor` tries the normal route first and falls back to them with a clear message.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
from typing import Any

from lmms_eval.errors import LmmsEvalError

logger = logging.getLogger(__name__)

_REGISTERED = False
_SHIMS: dict[str, type] = {}
# processors given their base's signature minus the video processor (and the config they serve)
_BY_NAME = {
    "LlavaOnevisionProcessor": "LlavaOnevisionConfig",
    "LlavaNextVideoProcessor": "LlavaNextVideoConfig",
    "VideoLlavaProcessor": "VideoLlavaConfig",
    "Glm4vProcessor": "Glm4vConfig",
    "MiniCPMV4_6Processor": "MiniCPMV4_6Config",
}
_OMNI_TOKENS = (
    *(f"{kind}_token{suffix}" for kind in ("image", "audio", "video") for suffix in ("", "_id")),
    *(f"{kind}_{edge}_token" for kind in ("vision", "audio") for edge in ("bos", "eos")),
)


def torchvision_available() -> bool:
    """Whether torchvision imports (the CUDA wheels crash on CPU torch, so really import it)."""
    if importlib.util.find_spec("torchvision") is None:
        return False
    try:
        importlib.import_module("torchvision")
    except Exception:  # a broken install (e.g. 'torchvision::nms does not exist') counts as missing
        return False
    return True


def _no_video(base: type, extra: dict[str, Any] | None = None, seq_arg: str | None = None) -> type:
    """A subclass of processor ``base`` whose constructor takes no video processor.

    ``ProcessorMixin`` reads the saved attributes from the constructor's signature, so arguments
    that must survive a save/load round trip (SmolVLM's ``image_seq_len``, InternVL's
    ``image_seq_length``, Qwen2.5-Omni's ``feature_extractor``) are named explicitly.
    """

    def __init__(
        self: Any,
        image_processor: Any = None,
        tokenizer: Any = None,
        chat_template: Any = None,
        **kwargs: Any,
    ) -> None:
        kwargs.pop("video_processor", None)
        init: Any = base.__init__
        init(self, image_processor, tokenizer, None, chat_template=chat_template, **kwargs)

    def __init_seq_len__(  # SmolVLM
        self: Any,
        image_processor: Any = None,
        tokenizer: Any = None,
        image_seq_len: int = 169,
        chat_template: Any = None,
        **kwargs: Any,
    ) -> None:
        __init__(self, image_processor, tokenizer, chat_template, image_seq_len=image_seq_len, **kwargs)

    def __init_seq_length__(  # InternVL
        self: Any,
        image_processor: Any = None,
        tokenizer: Any = None,
        image_seq_length: int = 256,
        chat_template: Any = None,
        **kwargs: Any,
    ) -> None:
        __init__(self, image_processor, tokenizer, chat_template, image_seq_length=image_seq_length, **kwargs)

    def __init_audio__(  # Qwen2.5-Omni: (image, video, feature extractor, tokenizer, template)
        self: Any,
        image_processor: Any = None,
        feature_extractor: Any = None,
        tokenizer: Any = None,
        chat_template: Any = None,
        **kwargs: Any,
    ) -> None:
        # the base passes its four parts on by position, which would shift them here: set them
        # directly, then the tokenizer's named tokens the base constructor copies
        parent: Any = super(base, self).__init__
        parent(image_processor, feature_extractor, tokenizer, chat_template=chat_template)
        for name in _OMNI_TOKENS:
            setattr(self, name, getattr(self.tokenizer, name))

    inits = {
        None: __init__,
        "image_seq_len": __init_seq_len__,
        "image_seq_length": __init_seq_length__,
        "feature_extractor": __init_audio__,
    }
    namespace: dict[str, Any] = {"__init__": inits[seq_arg], "__module__": __name__}
    namespace.update(extra or {})
    return type(f"{base.__name__}NoVideo", (base,), namespace)


def _no_video_by_name(base: type) -> type:
    """A subclass of processor ``base`` whose constructor takes ``base``'s arguments without the
    video processor: every other argument (``num_image_tokens``, ``patch_size``...) is saved and
    loaded as the base saves it, and the video processor is always ``None``.

    ``ProcessorMixin`` reads the constructor's arguments from its code object, so the constructor
    is generated with the base's argument names and defaults.
    """
    import inspect

    parameters = inspect.signature(base.__init__).parameters
    names = [
        name
        for name, p in parameters.items()
        if name not in ("self", "video_processor") and p.kind is p.POSITIONAL_OR_KEYWORD
    ]
    defaults = {
        n: None if parameters[n].default is inspect.Parameter.empty else parameters[n].default for n in names
    }
    base_attributes: Any = base.get_attributes
    check: Any = base.check_argument_for_proper_class

    def construct(self: Any, named: dict[str, Any], extra: dict[str, Any]) -> None:
        extra.pop("video_processor", None)
        # the base hands ProcessorMixin its parts by position, video processor included: while it
        # runs, this instance lists the base's parts and lets the video processor be None
        self.get_attributes = base_attributes
        self.check_argument_for_proper_class = lambda name, arg: (
            None if arg is None else check(self, name, arg)
        )
        try:
            init: Any = base.__init__
            init(self, video_processor=None, **named, **extra)
        finally:
            del self.get_attributes, self.check_argument_for_proper_class

    arguments = ", ".join(f"{n}=_defaults[{n!r}]" for n in names)
    collected = ", ".join(f"{n!r}: {n}" for n in names)
    source = f"def __init__(self, {arguments}, **kwargs):\n    _construct(self, {{{collected}}}, kwargs)\n"
    scope: dict[str, Any] = {"_defaults": defaults, "_construct": construct}
    exec(source, scope)
    namespace: dict[str, Any] = {"__init__": scope["__init__"], "__module__": __name__}
    return type(f"{base.__name__}NoVideo", (base,), namespace)


def _smolvlm_apply_chat_template(self: Any, *args: Any, **kwargs: Any) -> Any:
    from transformers.processing_utils import ProcessorMixin

    return ProcessorMixin.apply_chat_template(self, *args, **kwargs)


def register_no_video_processors() -> dict[str, type]:
    """Create and register the no-video processor classes (once); returns them by base name."""
    global _REGISTERED
    import transformers

    classes: dict[str, type] = {}
    pairs = [
        ("Qwen2VLProcessor", "Qwen2VLConfig", None),
        ("Qwen2_5_VLProcessor", "Qwen2_5_VLConfig", None),
        ("Qwen3VLProcessor", "Qwen3VLConfig", None),
        ("SmolVLMProcessor", "SmolVLMConfig", {"apply_chat_template": _smolvlm_apply_chat_template}),
        ("InternVLProcessor", "InternVLConfig", None),
        ("Qwen2_5OmniProcessor", "Qwen2_5OmniConfig", None),
        *((name, config, None) for name, config in _BY_NAME.items()),
    ]
    for processor_name, config_name, extra in pairs:
        base = getattr(transformers, processor_name, None)
        config = getattr(transformers, config_name, None)
        if base is None or config is None:
            continue
        if processor_name in _SHIMS:
            classes[processor_name] = _SHIMS[processor_name]
            continue
        seq_arg = {
            "SmolVLMProcessor": "image_seq_len",
            "InternVLProcessor": "image_seq_length",
            "Qwen2_5OmniProcessor": "feature_extractor",
        }.get(processor_name)
        shim = _no_video_by_name(base) if processor_name in _BY_NAME else _no_video(base, extra, seq_arg)
        _SHIMS[processor_name] = shim
        setattr(transformers, shim.__name__, shim)  # so saved processor_config.json names resolve
        classes[processor_name] = shim
        if not _REGISTERED:
            try:
                transformers.AutoProcessor.register(config, shim, exist_ok=True)
            except TypeError:  # older signature without exist_ok
                transformers.AutoProcessor.register(config, shim)
    _REGISTERED = True
    return classes


def fix_fuyu_patchify(processor: Any) -> None:
    """Give a Fuyu processor's PIL image processor a working ``patchify_image``.

    transformers' torchvision-free Fuyu image processor fails on its own patch split (``transpose()
    takes 2 positional arguments``); this one cuts the same patches: row by row, each patch
    flattened as (height, width, channels), as the torchvision path does.
    """
    import numpy as np

    image_processor = getattr(processor, "image_processor", None)
    if image_processor is None or not type(image_processor).__name__.endswith("Pil"):
        return
    default = image_processor.patch_size

    def patchify_image(image: Any, patch_size: Any = None) -> Any:
        size = patch_size or default
        height = int(size["height"] if isinstance(size, dict) else size.height)
        width = int(size["width"] if isinstance(size, dict) else size.width)
        tensor = hasattr(image, "detach")  # the processor passes tensors, the image processor arrays
        array = image.detach().cpu().numpy() if tensor else np.asarray(image)
        single = array.ndim == 3
        array = array[np.newaxis] if single else array
        batch, channels, rows, columns = array.shape
        down, across = rows // height, columns // width
        patches = (
            array[:, :, : down * height, : across * width]
            .reshape(batch, channels, down, height, across, width)
            .transpose(0, 2, 4, 3, 5, 1)
            .reshape(batch, down * across, height * width * channels)
        )
        patches = patches[0] if single else patches
        if tensor:
            import torch

            return torch.from_numpy(np.ascontiguousarray(patches)).to(image.device)
        return patches

    image_processor.patchify_image = patchify_image


def load_processor(path: str, **kwargs: Any) -> Any:
    """A full multimodal processor for ``path`` (never just a tokenizer).

    Without torchvision, the no-video processors are used for the families that need them.
    """
    import transformers
    from transformers.processing_utils import ProcessorMixin

    shims = register_no_video_processors()
    error: Exception | None = None
    try:
        processor = transformers.AutoProcessor.from_pretrained(path, **kwargs)
        if isinstance(processor, ProcessorMixin):
            return processor
    except Exception as exc:  # retried below with the no-video processors
        error = exc
    config = transformers.AutoConfig.from_pretrained(
        path, trust_remote_code=kwargs.get("trust_remote_code", False)
    )
    wanted = _processor_class_for(config)
    if wanted in shims:
        processor = shims[wanted].from_pretrained(path, **kwargs)
        if not torchvision_available():
            logger.info("torchvision is not installed: %s loaded without video support", wanted)
        return processor
    hint = "" if torchvision_available() else " torchvision is not installed, which some processors need."
    raise LmmsEvalError(
        f"could not build a multimodal processor for '{path}'"
        + (f": {type(error).__name__}: {error}" if error else " (AutoProcessor returned only a tokenizer)")
        + f".{hint}"
    )


def _processor_class_for(config: Any) -> str:
    names = {
        "qwen2_vl": "Qwen2VLProcessor",
        "qwen2_5_vl": "Qwen2_5_VLProcessor",
        "qwen3_vl": "Qwen3VLProcessor",
        "smolvlm": "SmolVLMProcessor",
        "internvl": "InternVLProcessor",
        "qwen2_5_omni": "Qwen2_5OmniProcessor",
        "qwen2_5_omni_thinker": "Qwen2_5OmniProcessor",
        "qwen3_5": "Qwen3VLProcessor",
        "qwen3_5_moe": "Qwen3VLProcessor",
        "llava_onevision": "LlavaOnevisionProcessor",
        "llava_next_video": "LlavaNextVideoProcessor",
        "video_llava": "VideoLlavaProcessor",
        "glm4v": "Glm4vProcessor",
        "minicpmv4_6": "MiniCPMV4_6Processor",
    }
    return names.get(getattr(config, "model_type", ""), "")
