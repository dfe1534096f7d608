"""Requests sent to models, and the results they may return."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Literal, get_args

OutputType = Literal[
    "loglikelihood",
    "multiple_choice",
    "generate_until",
    "generate_until_multi_round",
    "generate_until_agentic",
    "generate_visual_cot",
]
RequestType = Literal[
    "loglikelihood",
    "generate_until",
    "generate_until_multi_round",
    "generate_until_agentic",
    "generate_visual_cot",
]
# why a request has no answer: ``error`` (the model or API failed, after retries), ``not_sent``
# (the token budget was spent, the task's circuit breaker opened or the run was stopped),
# ``refusal`` (the model declined: an API reply with ``content: null`` and a refusal), ``filtered``
# (a provider's content filter withheld the answer), ``input`` (the document or its media could not
# be turned into a request)
FailureKind = Literal["error", "not_sent", "refusal", "filtered", "input"]
FAILURE_KINDS: tuple[str, ...] = get_args(FailureKind)
REQUEST_TYPES: tuple[str, ...] = get_args(RequestType)


@dataclass
class TokenCounts:
    """Token usage of one model call."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None

    def to_dict(self) -> dict[str, int]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


@dataclass
class GenerationResult:
    """A generation with optional token counts and timing; models may return this instead of ``str``."""

    text: str
    token_counts: TokenCounts | None = None
    latency_s: float | None = None
    time_to_first_token_s: float | None = None


@dataclass(frozen=True)
class RequestFailure:
    """A request that still failed after the model's own retries.

    Models return it in place of an answer. The evaluator records it in the samples file, leaves
    the document out of scoring, counts it in the results and makes the run exit non-zero, so a
    failure is never scored as if it were the model's answer.
    """

    error: str
    attempts: int = 1
    retryable: bool = True
    token_counts: TokenCounts | None = None
    kind: FailureKind = "error"

    def __str__(self) -> str:
        if self.kind == "error":
            return f"request failed after {self.attempts} attempt(s): {self.error}"
        return f"{self.kind}: {self.error}"


@dataclass
class Instance:
    """One request to a model.

    ``arguments`` (read through :attr:`args`) has the layouts of the model guide:

    * chat ``generate_until`` and ``generate_until_multi_round``:
      ``(doc_to_messages, gen_kwargs, doc_id, task, split)``
    * simple ``generate_until``: ``(context, gen_kwargs, doc_to_visual, doc_id, task, split)``
    * simple ``generate_until_multi_round``, and ``generate_until_agentic`` for every model:
      ``(context, gen_kwargs, doc_to_visual, doc_to_text, doc_id, task, split)`` (the agentic
      loop is :mod:`lmms_eval.api.agentic`; ``gen_kwargs`` holds ``max_agentic_steps``)
    * ``generate_visual_cot``: the ``generate_until`` layouts
    * ``loglikelihood``: ``(context, continuation, doc_to_visual, doc_id, task, split)`` where the
      continuation is a string (one request per choice of a ``multiple_choice`` task), or the
      task's ``doc_to_target`` callable; for chat models the first element is the
      ``doc_to_messages`` callable instead of the context string.

    Instances carry no media: models fetch the doc with ``self.task_dict[task][split][doc_id]``.
    ``task_name``, ``doc_id``, ``repeats`` and ``split`` are read from ``metadata``.
    """

    request_type: RequestType
    arguments: tuple[Any, ...]
    idx: int
    metadata: dict[str, Any] = field(default_factory=dict)
    resps: list[Any] = field(default_factory=list)
    filtered_resps: dict[str, Any] = field(default_factory=dict)
    raw_filtered_resps: dict[str, Any] = field(default_factory=dict)
    # with repeats > 1: each filter's output for each response on its own (for stability metrics)
    repeat_filtered_resps: dict[str, list[Any]] = field(default_factory=dict)
    token_counts: list[dict[str, Any] | None] = field(default_factory=list)
    # errors of responses that failed (RequestFailure); a doc with any failure is not scored
    failures: list[str] = field(default_factory=list)

    task_name: str = field(init=False, default="")
    doc_id: int = field(init=False, default=-1)
    repeats: int = field(init=False, default=1)
    split: str | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        if self.request_type not in REQUEST_TYPES:
            raise ValueError(
                f"unknown request_type {self.request_type!r}; expected one of {', '.join(REQUEST_TYPES)}"
            )
        if not isinstance(self.arguments, tuple):
            self.arguments = tuple(self.arguments)
        self.task_name = str(self.metadata.get("task", ""))
        self.doc_id = int(self.metadata.get("doc_id", -1))
        self.repeats = int(self.metadata.get("repeats", 1))
        self.split = self.metadata.get("split")

    @property
    def args(self) -> tuple[Any, ...]:
        """The request payload (see the class docstring for layouts)."""
        return self.arguments


def unwrap_generation_output(output: Any) -> tuple[Any, TokenCounts | None]:
    """Split a model output into ``(value, TokenCounts | None)``, as the published function does.

    Accepts what :func:`split_generation_output` accepts; a ``(text, dict)`` pair's dict becomes
    a :class:`TokenCounts` of its token fields. Timing is dropped (see
    :func:`split_generation_output`, which the evaluator uses, for counts with timing).
    """
    if isinstance(output, (GenerationResult, RequestFailure)):
        value = output.text if isinstance(output, GenerationResult) else output
        return value, output.token_counts
    if isinstance(output, tuple) and len(output) == 2 and isinstance(output[0], str):
        text, extra = output
        if isinstance(extra, TokenCounts):
            return text, extra
        if isinstance(extra, dict):
            names = [f.name for f in fields(TokenCounts)]
            return text, TokenCounts(**{k: extra[k] for k in names if k in extra})
        if extra is None:
            return text, None
    return output, None


def split_generation_output(output: Any) -> tuple[Any, dict[str, Any] | None]:
    """Split a model output into ``(value, token_counts_dict)``.

    Accepts ``str``, :class:`GenerationResult`, :class:`RequestFailure`, the published
    ``(text, TokenCounts)`` pair (also ``(text, dict)`` and ``(text, None)``), and loglikelihood
    ``(float, bool)`` pairs, which pass through unchanged. The value is never the pair itself, so a
    model's token counts are never scored as part of its answer. The counts are a dict
    (:meth:`TokenCounts.to_dict`), which for a :class:`GenerationResult` also carries its timing
    (``latency_s``, ``time_to_first_token_s``) when the model measured it.
    """
    if isinstance(output, RequestFailure):
        return output, output.token_counts.to_dict() if output.token_counts else None
    if isinstance(output, GenerationResult):
        counts: dict[str, Any] = output.token_counts.to_dict() if output.token_counts else {}
        if output.latency_s is not None:
            counts["latency_s"] = output.latency_s
        if output.time_to_first_token_s is not None:
            counts["time_to_first_token_s"] = output.time_to_first_token_s
        return output.text, counts or None
    if isinstance(output, tuple) and len(output) == 2 and isinstance(output[0], str):
        text, extra = output
        if isinstance(extra, TokenCounts):
            return text, extra.to_dict() or None
        if isinstance(extra, dict):
            return text, dict(extra) or None
        if extra is None:
            return text, None
    return output, None
