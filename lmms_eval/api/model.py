"""The ``lmms`` base class every model backend subclasses."""

from __future__ import annotations

import abc
import gc
import inspect
import logging
import math
import os
import sys
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

from lmms_eval.api.gate import RequestGate
from lmms_eval.api.instance import GenerationResult, Instance, RequestFailure
from lmms_eval.errors import ModelArgsError, did_you_mean
from lmms_eval.secrets import is_secret_name
from lmms_eval.settings import show_value
from lmms_eval.utils import parse_arg_string

logger = logging.getLogger(__name__)

T = TypeVar("T", bound="lmms")


class CacheHook:
    """No-op stand-in for the published package's per-request cache hook.

    Model code ported from the published package calls ``self.cache_hook.add_partial(...)``; response
    caching lives in :mod:`lmms_eval.caching`, in front of the model, so this records nothing.
    """

    def add_partial(self, attr: str, req: Any, res: Any) -> None:
        """Accept and ignore a partial result."""


class lmms(abc.ABC):
    """Base class of all models.

    Chat models set ``is_simple = False`` and receive ``doc_to_messages`` in their requests;
    simple models (the default) receive a context string and ``doc_to_visual``.
    Subclasses implement :meth:`generate_until` and, for multiple-choice tasks,
    :meth:`loglikelihood`. Results must be returned in the order of the requests.

    Before inference the evaluator fills :attr:`task_dict` as ``{task: {split: docs}}``; a model
    reads the document of a request with ``self.task_dict[task][split][doc_id]``.
    """

    is_simple: bool = True
    # how a chat model's generate_until requests are laid out: "guide" (5 elements, the model
    # guide), "published" (6, the published package) or None (read from how generate_until
    # unpacks them; see lmms_eval.api.chat_layout)
    chat_request_layout: str | None = None

    def __init__(self) -> None:
        self._rank = 0
        self._world_size = 1
        self.task_dict: dict[str, dict[str, Any]] = {}
        self.batch_size_per_gpu: int = 1
        self.cache_hook = CacheHook()
        self._model_name: str | None = None

    # -- request methods -----------------------------------------------------------------------

    @abc.abstractmethod
    def generate_until(self, requests: list[Instance]) -> Sequence[str | GenerationResult | RequestFailure]:
        """Generate text for each request; ``gen_kwargs['until']`` lists stop strings."""

    def loglikelihood(self, requests: list[Instance]) -> Sequence[tuple[float, bool] | RequestFailure]:
        """Return ``(log-probability of the continuation, is_greedy)`` for each request."""
        raise NotImplementedError(
            f"model '{type(self).__name__}' does not implement loglikelihood; it cannot run "
            "loglikelihood or multiple_choice tasks"
        )

    def generate_until_multi_round(
        self, requests: list[Instance]
    ) -> Sequence[str | GenerationResult | RequestFailure]:
        """Multi-turn generation; the model drives rounds through ``doc_to_messages``."""
        raise NotImplementedError(
            f"model '{type(self).__name__}' does not implement generate_until_multi_round"
        )

    def generate_until_agentic(self, requests: list[Instance]) -> Sequence[GenerationResult | RequestFailure]:
        """Tool-use loops: each round goes through :meth:`generate_until` and the task's
        ``doc_to_text`` simulator (:mod:`lmms_eval.api.agentic`). Override only to run the loop
        another way; the answer is the task's result payload (JSON text)."""
        from lmms_eval.api.agentic import run_agentic

        return run_agentic(self, requests)

    def generate_visual_cot(
        self, requests: list[Instance]
    ) -> Sequence[str | GenerationResult | RequestFailure]:
        """Generation that draws intermediate images (visual chain of thought); needs an
        image-generating model."""
        raise NotImplementedError(
            f"model '{type(self).__name__}' does not support generate_visual_cot: the task needs a model "
            "that generates images (it must implement generate_visual_cot)"
        )

    def clean(self) -> None:
        """Release accelerator memory before judges run.

        Drops the attributes that hold ``torch.nn.Module`` objects (only when torch is already
        imported), collects garbage and empties the CUDA cache. The model cannot answer requests
        afterwards.
        """
        torch: Any = sys.modules.get("torch")
        if torch is not None:
            module_type = torch.nn.Module
            for name, value in list(vars(self).items()):
                if isinstance(value, module_type):
                    delattr(self, name)
        gc.collect()
        if torch is not None and torch.cuda.is_available():
            torch.cuda.empty_cache()

    @property
    def gate(self) -> RequestGate:
        """The run's :class:`~lmms_eval.api.gate.RequestGate`: ask :meth:`RequestGate.admit` before a
        request, report each answer with :meth:`RequestGate.done`. An open gate outside a run."""
        gate: RequestGate | None = getattr(self, "_gate", None)  # also when __init__ was not called
        if gate is None:
            gate = self._gate = RequestGate(breaker_after=None)
        return gate

    @gate.setter
    def gate(self, gate: RequestGate) -> None:
        self._gate = gate

    # -- construction ---------------------------------------------------------------------------

    @classmethod
    def create_from_arg_string(
        cls: type[T],
        arg_string: str | Mapping[str, Any] | None,
        additional_config: Mapping[str, Any] | None = None,
    ) -> T:
        """Build the model from ``"k=v,k=v"`` (values typed; JSON objects and lists kept whole).

        ``additional_config`` (``batch_size``, ``device``, ``max_batch_size``, ...) fills in keys that
        the argument string does not set; ``None`` values are dropped, and so are keys the
        constructor does not take (unless it takes ``**kwargs``). Unknown keys of the argument
        string are a :class:`ModelArgsError` naming the key and the closest accepted one, unless
        the constructor takes ``**kwargs``; so is a missing required argument, and a value that
        does not fit the parameter's annotation (see :func:`check_arg_types`).
        """
        args = parse_arg_string(arg_string)
        extra = {k: v for k, v in (additional_config or {}).items() if v is not None and k not in args}
        signature = inspect.signature(cls.__init__)
        params = [p for name, p in signature.parameters.items() if name != "self"]
        takes_var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
        if not takes_var_kw:
            accepted = [
                p.name
                for p in params
                if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
            ]
            for key in args:
                if key not in accepted:
                    raise ModelArgsError(
                        f"model '{cls.__name__}' does not accept argument '{key}'."
                        f"{did_you_mean(key, accepted)} Accepted: {', '.join(sorted(accepted)) or '(none)'}"
                    )
            dropped = sorted(k for k in extra if k not in accepted)
            if dropped:
                logger.debug("model %s does not take %s; not passing them", cls.__name__, ", ".join(dropped))
            extra = {k: v for k, v in extra.items() if k in accepted}
        args = check_arg_types(cls, args)
        kwargs = {**args, **extra}
        missing = [
            p.name
            for p in params
            if p.default is inspect.Parameter.empty
            and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
            and p.name not in kwargs
        ]
        if missing:
            raise ModelArgsError(
                f"model '{cls.__name__}' needs argument(s) {', '.join(repr(m) for m in missing)}; "
                f"pass them in --model_args, e.g. {missing[0]}=..."
            )
        return cls(**kwargs)

    # -- distributed properties ---------------------------------------------------------------------

    @property
    def rank(self) -> int:
        """This process's index among the data-parallel workers (0 when not distributed)."""
        return self._rank

    @property
    def world_size(self) -> int:
        """The number of data-parallel workers (1 when not distributed)."""
        return self._world_size

    @property
    def batch_size(self) -> int:
        """Requests per forward pass on one device."""
        return self.batch_size_per_gpu

    # -- helpers for subclasses --------------------------------------------------------------------

    def get_doc(self, request: Instance) -> Any:
        """The dataset document a request refers to (``task_dict[task][split][doc_id]``)."""
        splits = self.task_dict.get(request.task_name)
        if splits is None:
            raise LookupError(
                f"task '{request.task_name}' is not in {type(self).__name__}.task_dict "
                f"(tasks: {', '.join(sorted(self.task_dict)) or 'none'}); the evaluator fills it "
                "before inference"
            )
        split = request.split if request.split is not None else next(iter(splits), "")
        return splits[split][request.doc_id]

    @staticmethod
    def _resolve_system_prompt(value: str | None) -> str | None:
        """A system prompt given literally or as a path to a text file."""
        if value and os.path.isfile(value):
            with open(value, encoding="utf-8") as handle:
                return handle.read()
        return value

    @staticmethod
    def _apply_system_prompt(messages: list[dict[str, Any]], prompt: str | None) -> list[dict[str, Any]]:
        """Prepend a system message unless the messages already start with one."""
        if not prompt or (messages and messages[0].get("role") == "system"):
            return messages
        return [{"role": "system", "content": [{"type": "text", "text": prompt}]}, *messages]


# -- typed --model_args ---------------------------------------------------------------------------------

_UNKNOWN = object()  # an annotation this check cannot judge (a class of its own, a TYPE_CHECKING import)
_NO = object()  # the value does not fit the annotation
_SEQUENCES = (list, tuple, set, frozenset)


def constructor_hints(cls: type, extras: bool = False) -> dict[str, Any]:
    """The evaluated annotations of ``cls.__init__``; one that cannot be evaluated is left out.

    With ``extras`` the ``Annotated`` metadata is kept (the path kinds of
    :mod:`lmms_eval.api.path_types`)."""
    init = cls.__init__
    try:
        return typing.get_type_hints(init, include_extras=extras)
    except Exception:  # a name only imported under TYPE_CHECKING, a typo in a plugin
        pass
    hints: dict[str, Any] = {}
    globalns = getattr(init, "__globals__", {})
    for name, annotation in getattr(init, "__annotations__", {}).items():
        shim = types.SimpleNamespace(__annotations__={name: annotation})
        try:
            hints.update(typing.get_type_hints(shim, globalns=globalns, include_extras=extras))
        except Exception:  # unjudgeable: the value passes unchecked
            continue
    return hints


def _is_union(hint: Any) -> bool:
    return get_origin(hint) in (Union, types.UnionType)


def _fit_scalar(value: Any, hint: Any, loose: bool) -> Any:
    """``value`` fitted to ``int``/``float``/``bool``/``str``/``None``; ``_NO`` when it does not fit,
    ``_UNKNOWN`` for other annotations. Loose fits convert: ``2.0`` -> int, ``3`` -> float, ``16`` -> str."""
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is type(None):
        return None if value is None else _NO
    if hint is bool:
        if isinstance(value, bool):
            return value
        return bool(value) if loose and is_number and value in (0, 1) else _NO
    if hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        whole = loose and isinstance(value, float) and math.isfinite(value) and value == int(value)
        return int(value) if whole else _NO
    if hint is float:
        if isinstance(value, float):
            return value
        return float(value) if loose and is_number else _NO
    if hint is str:
        if isinstance(value, str):
            return value
        return str(value) if loose and is_number else _NO  # `response=16` means the text "16"
    return _UNKNOWN


def _fit(value: Any, hint: Any, loose: bool) -> Any:
    """``value`` fitted to ``hint`` (converted where ``loose``), ``_NO``, or the value unchanged when
    the annotation cannot be judged here."""
    if hint is Any or hint is object:
        return value
    if _is_union(hint):
        for mode in (False, True) if loose else (False,):
            for member in get_args(hint):
                fitted = _fit(value, member, mode)
                if fitted is not _NO:
                    return fitted
        return _NO
    origin = get_origin(hint)
    if origin is Literal:
        for allowed in get_args(hint):
            if type(allowed) is type(value) and allowed == value:
                return value
            if loose and isinstance(allowed, str) and not isinstance(value, str) and str(value) == allowed:
                return allowed
        return _NO
    container = origin or hint
    if container in _SEQUENCES:
        return value if isinstance(value, (list, tuple)) else _NO
    if container is dict:
        return value if isinstance(value, dict) else _NO
    fitted = _fit_scalar(value, hint, loose)
    return value if fitted is _UNKNOWN else fitted


def _describe(hint: Any) -> str:
    """What a value of type ``hint`` is, for an error message (``int | None`` -> ``an integer``)."""
    if _is_union(hint):
        parts = [_describe(m) for m in get_args(hint) if m is not type(None)]
        return " or ".join(dict.fromkeys(p for p in parts if p)) or "none"
    if get_origin(hint) is Literal:
        return "one of " + ", ".join(show_value(a) for a in get_args(hint))
    container = get_origin(hint) or hint
    names = {int: "an integer", float: "a number", bool: "true or false", str: "a string", dict: "a mapping"}
    if container in _SEQUENCES:
        return "a list"
    return names.get(container, "")


def _mismatch(cls: type, key: str, value: Any, hint: Any) -> ModelArgsError:
    secret = is_secret_name(key)
    got = (
        f"a {type(value).__name__} (value not shown: '{key}' holds a secret)" if secret else show_value(value)
    )
    message = f"model '{cls.__name__}': argument '{key}' must be {_describe(hint)}, got {got}"
    if secret:
        return ModelArgsError(message)
    if get_origin(hint) is Literal and isinstance(value, str):
        suggestion = did_you_mean(value, [str(a) for a in get_args(hint)])
        message += f".{suggestion}" if suggestion else ""
    elif _describe(hint) == "a string" and (value is None or isinstance(value, (bool, list, dict))):
        message += f" (quote it to pass it as text: {key}='...')"
    return ModelArgsError(message)


def check_arg_types(cls: type, args: Mapping[str, Any]) -> dict[str, Any]:
    """``args`` checked against the annotations of ``cls.__init__`` (and lightly converted).

    Ints are accepted where floats are wanted and whole floats where ints are; numbers where text
    is wanted become text; ``None`` is accepted where the parameter's default is ``None``.
    Unannotated parameters and annotations of other classes accept anything. A mismatch is a
    :class:`ModelArgsError` naming the model, the argument, what it takes and the value (never the
    value of a secret-looking argument).
    """
    hints = constructor_hints(cls)
    parameters = inspect.signature(cls.__init__).parameters
    out: dict[str, Any] = {}
    for key, value in args.items():
        hint = hints.get(key, Any)
        parameter = parameters.get(key)
        if value is None and parameter is not None and parameter.default is None:
            out[key] = value
            continue
        fitted = _fit(value, hint, False)
        if fitted is _NO:
            fitted = _fit(value, hint, True)
        if fitted is _NO:
            raise _mismatch(cls, key, value, hint)
        out[key] = fitted
    return out


def resolve_continuation(continuation: str | Callable[..., Any], doc: Any) -> str:
    """Loglikelihood continuation: a string, or the task's ``doc_to_target`` called on the doc."""
    if callable(continuation):
        value = continuation(doc)
        if isinstance(value, list):
            value = value[0]
        return str(value)
    return continuation


def warn_unused_kwargs(model: str, kwargs: Mapping[str, Any]) -> None:
    """Log (once per call) the constructor arguments a model ignores."""
    if kwargs:
        logger.warning("model %s ignores unknown arguments: %s", model, ", ".join(sorted(kwargs)))
