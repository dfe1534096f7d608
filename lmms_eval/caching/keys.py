"""Response-cache keys, and which responses may be cached.

A key is the sha256 of the canonical JSON of everything that decides a model's answer:

* the request type, task name, split, doc id, choice index (``Instance.idx``) and repeat index;
* the canonical generation kwargs (every key; integral floats written as integers, ``until`` as a
  list), for generation requests;
* a hash of the prompt content: the context string or the chat messages, the loglikelihood
  continuation, and the media, each medium replaced by a stable reference (a path or URL as given,
  or a sha256 of the bytes of a PIL image, numpy array or ``bytes`` value);
* the task fingerprint (:meth:`ConfigurableTask.fingerprint`) and the model fingerprint
  (:func:`model_fingerprint`: model id and canonical model args, without ``batch_size``,
  ``max_batch_size`` and ``device``; secret values are redacted so rotating an API key keeps the
  cache; plus the model's content fingerprint, :mod:`lmms_eval.caching.content`: sizes, mtimes and
  small-file hashes of a local checkpoint or log, the commit of a cached Hub snapshot).

Changing any of them gives a different key, so the old answer is never reused. ``KEY_VERSION``
stays 1: keys of models without content (API models) are what they were, and keys written before
content fingerprints existed simply never match a model that has one (misses, never wrong hits).
"""

from __future__ import annotations

import hashlib
import math
import numbers
import os
from collections.abc import Mapping
from typing import Any

from lmms_eval.api.instance import GenerationResult, Instance, TokenCounts, split_generation_output
from lmms_eval.api.model import resolve_continuation
from lmms_eval.utils import canonical_json, hash_string, redact

KEY_VERSION = 1
# model args that change how fast a model answers, not what it answers
MODEL_ARGS_IGNORED = frozenset({"batch_size", "max_batch_size", "device"})
_COUNT_KEYS = ("input_tokens", "output_tokens", "reasoning_tokens")
_SAMPLE_COUNT_KEYS = ("n", "best_of", "num_return_sequences")


def _canonical_value(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        number = float(value)
        return int(number) if math.isfinite(number) and number == int(number) else number
    if isinstance(value, Mapping):
        return {str(k): _canonical_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical_value(v) for v in value]
    return repr(value)


def canonical_gen_kwargs(gen_kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
    """Generation kwargs in one canonical form: ``0.0`` and ``0`` agree, ``until`` is a list."""
    out = _canonical_value(dict(gen_kwargs or {}))
    if isinstance(out.get("until"), str):
        out["until"] = [out["until"]]
    return out


def is_deterministic(request_type: str, gen_kwargs: Mapping[str, Any] | None) -> bool:
    """Loglikelihood always; generation when greedy (temperature 0 or unset, no do_sample, one answer)."""
    if request_type == "loglikelihood":
        return True
    kwargs = gen_kwargs or {}
    temperature = kwargs.get("temperature")
    if temperature is not None:
        try:
            if float(temperature) > 0:
                return False
        except (TypeError, ValueError):
            return False
    if kwargs.get("do_sample"):
        return False
    for key in _SAMPLE_COUNT_KEYS:
        count = kwargs.get(key)
        if count is not None and not (isinstance(count, numbers.Real) and count <= 1):
            return False
    return True


def model_fingerprint(model_id: str, model_args: Mapping[str, Any] | None, content: str = "") -> str:
    """sha256[:16] of the model id, its canonical args (without batch size and device) and the
    model's content fingerprint (:func:`~lmms_eval.caching.content.model_content_fingerprint`).

    An empty ``content`` (a model known by name only, like an API model) leaves the value as it was
    before content fingerprints existed, so such caches stay valid.
    """
    args = {k: v for k, v in (model_args or {}).items() if k not in MODEL_ARGS_IGNORED}
    described: dict[str, Any] = {"model": model_id, "args": _canonical_value(redact(args))}
    if content:
        described["content"] = content
    return hash_string(canonical_json(described))[:16]


def _sha(*chunks: bytes) -> str:
    digest = hashlib.sha256()
    for chunk in chunks:
        digest.update(chunk)
    return digest.hexdigest()


def media_reference(value: Any) -> Any:
    """A JSON-ready stand-in for a medium (or a structure holding media) that is stable across runs.

    Paths and URLs stay as given; PIL images, numpy arrays and bytes become a sha256 of their
    content (with size, mode, dtype and shape). Other objects are described by their ``repr``,
    which at worst makes a key that never matches again (a miss, never a wrong hit).
    """
    if value is None or isinstance(value, (bool, str, int, float)):
        return value
    if isinstance(value, Mapping):
        return {str(k): media_reference(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [media_reference(v) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"bytes_sha256": _sha(bytes(value))}
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if hasattr(value, "mode") and hasattr(value, "size") and hasattr(value, "tobytes"):  # PIL image
        header = f"{value.mode}|{tuple(value.size)}".encode()
        return {"image_sha256": _sha(header, value.tobytes())}
    if hasattr(value, "dtype") and hasattr(value, "shape") and hasattr(value, "tobytes"):  # numpy array
        header = f"{value.dtype}|{tuple(value.shape)}".encode()
        return {"array_sha256": _sha(header, value.tobytes())}
    if hasattr(value, "model_dump"):  # pydantic content parts, ChatMessages
        return media_reference(value.model_dump())
    return {"object": type(value).__qualname__, "repr": repr(value)}


def _messages(value: Any) -> Any:
    if hasattr(value, "messages"):  # a ChatMessages object
        return [m.model_dump() for m in value.messages]
    return value


def prompt_content(request: Instance, doc: Any) -> dict[str, Any]:
    """What the model is shown for ``request``, with media as stable references."""
    args = request.args
    first = args[0]
    content: dict[str, Any] = {}
    content["prompt"] = media_reference(_messages(first(doc)) if callable(first) else first)
    if request.request_type == "loglikelihood":
        content["continuation"] = resolve_continuation(args[1], doc)
        visual = args[2] if len(args) > 2 else None
    else:
        visual = None if callable(first) else (args[2] if len(args) > 2 else None)
    if callable(visual):
        content["media"] = media_reference(visual(doc))
    return content


def content_hash(request: Instance, doc: Any) -> str:
    """sha256 of :func:`prompt_content`."""
    return hash_string(canonical_json(prompt_content(request, doc)))


def request_gen_kwargs(request: Instance) -> dict[str, Any] | None:
    """The generation kwargs of a generation request (``None`` for loglikelihood)."""
    if request.request_type == "loglikelihood" or len(request.args) < 2:
        return None
    value = request.args[1]
    return dict(value) if isinstance(value, Mapping) else {}


def request_key(request: Instance, repeat: int, content: str, task_fingerprint: str, model_fp: str) -> str:
    """The cache key of one answer to ``request`` (see the module docstring)."""
    gen_kwargs = request_gen_kwargs(request)
    return hash_string(
        canonical_json(
            {
                "v": KEY_VERSION,
                "type": request.request_type,
                "task": request.task_name,
                "split": request.split,
                "doc": request.doc_id,
                "idx": request.idx,
                "repeat": repeat,
                "gen": None if gen_kwargs is None else canonical_gen_kwargs(gen_kwargs),
                "content": content,
                "task_fp": task_fingerprint,
                "model_fp": model_fp,
            }
        )
    )


# -- responses ----------------------------------------------------------------------------------


def encode_response(request_type: str, output: Any) -> dict[str, Any] | None:
    """The JSON record to store for a model output, or ``None`` when it must not be cached.

    Failures (:class:`RequestFailure`, ``None``), empty or whitespace-only texts and malformed
    loglikelihood results are never cached. Token counts are kept (timings are not).
    """
    value, counts = split_generation_output(output)
    if request_type == "loglikelihood":
        if not isinstance(value, (tuple, list)) or len(value) != 2:
            return None
        logprob, greedy = value
        if isinstance(logprob, bool) or not isinstance(logprob, numbers.Real):
            return None
        if not math.isfinite(float(logprob)) or type(greedy).__name__ not in ("bool", "bool_"):
            return None
        return {"loglikelihood": float(logprob), "is_greedy": bool(greedy)}
    if not isinstance(value, str) or not value.strip():
        return None
    record: dict[str, Any] = {"text": value}
    kept = {k: int(counts[k]) for k in _COUNT_KEYS if counts and isinstance(counts.get(k), int)}
    if kept:
        record["token_counts"] = kept
    return record


def decode_response(request_type: str, record: Any) -> Any:
    """The model output a stored record stands for, or ``None`` when the record is malformed."""
    if not isinstance(record, dict):
        return None
    if request_type == "loglikelihood":
        logprob, greedy = record.get("loglikelihood"), record.get("is_greedy")
        if isinstance(logprob, (int, float)) and not isinstance(logprob, bool) and isinstance(greedy, bool):
            return (float(logprob), greedy)
        return None
    text = record.get("text")
    if not isinstance(text, str) or not text.strip():
        return None
    counts = record.get("token_counts")
    if isinstance(counts, dict) and counts:
        known = {k: int(v) for k, v in counts.items() if k in _COUNT_KEYS and isinstance(v, int)}
        return GenerationResult(text, TokenCounts(**known))
    return text


__all__ = [
    "KEY_VERSION",
    "MODEL_ARGS_IGNORED",
    "canonical_gen_kwargs",
    "content_hash",
    "decode_response",
    "encode_response",
    "is_deterministic",
    "media_reference",
    "model_fingerprint",
    "prompt_content",
    "request_gen_kwargs",
    "request_key",
]
