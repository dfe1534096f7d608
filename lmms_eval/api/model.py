"""The ``lmms`` base class every model backend subclasses."""

from __future__ import annotations

import abc
import inspect
import os
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from lmms_eval.api.instance import GenerationResult, Instance
from lmms_eval.errors import ModelArgsError
from lmms_eval.utils import eval_logger, parse_arg_string

T = TypeVar("T", bound="lmms")


class lmms(abc.ABC):
    """Base class of all models.

    Chat models set ``is_simple = False`` and receive ``doc_to_messages`` in their requests;
    simple models (the default) receive a context string and ``doc_to_visual``.
    Subclasses implement :meth:`generate_until` and, for multiple-choice tasks,
    :meth:`loglikelihood`. Results must be returned in the order of the requests.
    """

    is_simple: bool = True

    def __init__(self) -> None:
        self._rank = 0
        self._world_size = 1
        self.task_dict: dict[str, dict[str, Any]] = {}
        self.batch_size_per_gpu: int = 1
        self._model_name: str | None = None

    # -- request methods -----------------------------------------------------------------------

    @abc.abstractmethod
    def generate_until(self, requests: list[Instance]) -> list[str | GenerationResult]:
        """Generate text for each request; ``gen_kwargs['until']`` lists stop strings."""

    def loglikelihood(self, requests: list[Instance]) -> list[tuple[float, bool]]:
        """Return ``(log-probability of the continuation, is_greedy)`` for each request."""
        raise NotImplementedError(
            f"model '{type(self).__name__}' does not implement loglikelihood; it cannot run "
            "loglikelihood or multiple_choice tasks"
        )

    def generate_until_multi_round(self, requests: list[Instance]) -> list[str | GenerationResult]:
        """Multi-turn generation; the model drives rounds through ``doc_to_messages``."""
        raise NotImplementedError(
            f"model '{type(self).__name__}' does not implement generate_until_multi_round"
        )

    def clean(self) -> None:  # noqa: B027 - optional hook, deliberately empty
        """Release accelerator memory before judges run (no-op by default)."""

    # -- construction ---------------------------------------------------------------------------

    @classmethod
    def create_from_arg_string(
        cls: type[T],
        arg_string: str | Mapping[str, Any] | None,
        additional_config: Mapping[str, Any] | None = None,
    ) -> T:
        """Build the model from ``"k=v,k=v"`` (values typed; JSON objects and lists kept whole).

        ``additional_config`` (``batch_size``, ``device``, ...) fills in keys that the argument string
        does not set; ``None`` values are dropped. Unknown keyword arguments are an error naming the
        key and the closest accepted one, unless the constructor takes ``**kwargs``.
        """
        args = parse_arg_string(arg_string)
        extra = {k: v for k, v in (additional_config or {}).items() if v is not None and k not in args}
        params = inspect.signature(cls.__init__).parameters
        takes_var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        if not takes_var_kw:
            accepted = {
                n for n, p in params.items() if n != "self" and p.kind is not inspect.Parameter.VAR_POSITIONAL
            }
            from lmms_eval.errors import did_you_mean

            for key in args:
                if key not in accepted:
                    raise ModelArgsError(
                        f"model '{cls.__name__}' does not accept argument '{key}'."
                        f"{did_you_mean(key, accepted)} Accepted: {', '.join(sorted(accepted))}"
                    )
            extra = {k: v for k, v in extra.items() if k in accepted}
        try:
            return cls(**args, **extra)
        except TypeError as exc:
            raise ModelArgsError(f"could not build model '{cls.__name__}' from {args}: {exc}") from exc

    # -- distributed properties ---------------------------------------------------------------------

    @property
    def rank(self) -> int:
        return self._rank

    @property
    def world_size(self) -> int:
        return self._world_size

    @property
    def batch_size(self) -> int:
        return self.batch_size_per_gpu

    # -- helpers for subclasses --------------------------------------------------------------------

    def get_doc(self, request: Instance) -> Any:
        """The dataset document a request refers to (``task_dict[task][split][doc_id]``)."""
        return self.task_dict[request.task_name][request.split or ""][request.doc_id]

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


def resolve_continuation(continuation: str | Callable[..., Any], doc: Any) -> str:
    """Loglikelihood continuation: a string, or the task's ``doc_to_target`` called on the doc."""
    if callable(continuation):
        value = continuation(doc)
        if isinstance(value, list):
            value = value[0]
        return str(value)
    return continuation


def warn_unused_kwargs(model: str, kwargs: Mapping[str, Any]) -> None:
    if kwargs:
        eval_logger.warning("model %s ignores unknown arguments: %s", model, ", ".join(sorted(kwargs)))
