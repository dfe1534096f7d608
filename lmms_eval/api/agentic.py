"""``generate_until_agentic``: a tool-use loop between a model and a task's simulator.

A request's arguments are ``(context, gen_kwargs, doc_to_visual, doc_to_text, doc_id, task, split)``
(the published layout). Each round the model answers the current prompt through its ordinary
``generate_until``; the model emits ``<tool_call>{...}</tool_call>`` to use a tool or
``<submit>{...}</submit>`` to finish. The task's ``doc_to_text`` is the simulator: after round
``k`` (1-based) it is called as::

    doc_to_text(doc, lmms_eval_specific_kwargs, previous_output=outputs, round_idx=k,
                previous_round_info=info)

with ``outputs`` the model's answers so far and ``info`` what it returned last time (``None`` at
first), and returns ``(visuals, next_prompt, done, outputs, info)``. When ``done`` the answer of the
request is the last entry of the returned ``outputs`` (the task's own result payload). When the
rounds reach ``max_agentic_steps`` (a generation kwarg, default :data:`DEFAULT_MAX_STEPS`; it is not
passed on to the model) the answer is a JSON payload: the last round ``info``'s entries plus
``success: false``, ``error: "max_agentic_steps_reached"``, ``last_model_output`` and ``trace``
(every model answer). Requests advance round by round together, so backends still get batches.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lmms_eval.api.instance import (
    GenerationResult,
    Instance,
    RequestFailure,
    TokenCounts,
    split_generation_output,
)

if TYPE_CHECKING:
    from lmms_eval.api.model import lmms

logger = logging.getLogger(__name__)

DEFAULT_MAX_STEPS = 8
STEPS_EXHAUSTED = "max_agentic_steps_reached"

Answer = GenerationResult | RequestFailure


@dataclass
class _Episode:
    """One request's loop state."""

    request: Instance
    doc: Any
    prompt: str
    visual: Callable[..., Any] | None
    simulator: Callable[..., Any] | None
    gen_kwargs: dict[str, Any]
    max_steps: int
    outputs: list[str] = field(default_factory=list)
    info: Any = None
    counts: dict[str, int] = field(default_factory=dict)
    answer: Answer | None = None


def run_agentic(model: lmms, requests: Sequence[Instance]) -> list[Answer]:
    """Answer ``generate_until_agentic`` requests with ``model.generate_until`` (see the module docstring).

    Progress counts requests, not rounds: while the loop runs, the gate's progress listener is
    held back, and it hears the whole batch at the end if the backend reported its rounds.
    """
    gate = model.gate
    listener, gate.on_progress = gate.on_progress, None
    reported_before = gate.state().reported
    try:
        episodes = [_start(model, request) for request in requests]
        while active := [e for e in episodes if e.answer is None]:
            steps = [_step_request(model, e) for e in active]
            outputs = list(model.generate_until(steps))
            if len(outputs) != len(steps):
                raise RuntimeError(
                    f"model {type(model).__name__}.generate_until returned {len(outputs)} results for "
                    f"{len(steps)} requests"
                )
            for episode, output in zip(active, outputs):
                _advance(episode, output)
    finally:
        gate.on_progress = listener
    if listener is not None and gate.state().reported > reported_before:
        listener(len(requests))
    return [e.answer for e in episodes if e.answer is not None]


def _start(model: lmms, request: Instance) -> _Episode:
    args = request.args
    if len(args) != 7:
        raise ValueError(
            f"generate_until_agentic request of task '{request.task_name}' doc {request.doc_id} has "
            f"{len(args)} arguments; expected (context, gen_kwargs, doc_to_visual, doc_to_text, doc_id, task, split)"
        )
    context, gen_kwargs, visual, simulator = args[:4]
    kwargs = dict(gen_kwargs or {})
    steps = kwargs.pop("max_agentic_steps", DEFAULT_MAX_STEPS)
    return _Episode(
        request, model.get_doc(request), str(context), visual, simulator, kwargs, max(1, int(steps))
    )


def _step_request(model: lmms, episode: _Episode) -> Instance:
    """The ordinary ``generate_until`` request of the episode's next round."""
    request = episode.request
    meta = {**request.metadata, "repeats": 1}
    tail = (request.doc_id, request.task_name, request.split)
    if not model.is_simple:
        messages = _messages(episode.prompt, episode.visual, episode.doc)
        return Instance("generate_until", (lambda _doc: messages, dict(episode.gen_kwargs), *tail), 0, meta)
    return Instance(
        "generate_until", (episode.prompt, dict(episode.gen_kwargs), episode.visual, *tail), 0, meta
    )


def _messages(prompt: str, visual: Callable[..., Any] | None, doc: Any) -> list[dict[str, Any]]:
    visuals = visual(doc) if visual is not None else []
    parts: list[dict[str, Any]] = [{"type": "image", "url": v} for v in visuals or []]
    parts.append({"type": "text", "text": prompt})
    return [{"role": "user", "content": parts}]


def _advance(episode: _Episode, output: Any) -> None:
    text, counts = split_generation_output(output)
    for key in ("input_tokens", "output_tokens", "reasoning_tokens"):
        if counts and isinstance(counts.get(key), int):
            episode.counts[key] = episode.counts.get(key, 0) + int(counts[key])
    if isinstance(text, RequestFailure):
        episode.answer = text
        return
    episode.outputs.append(str(text))
    reply = _simulate(episode)
    if reply is None:
        return
    visuals, prompt, done, outputs, info = reply
    episode.info = info
    if done:
        final = outputs[-1] if outputs else None
        episode.answer = _finish(episode, final if isinstance(final, str) else _payload(episode, None))
        return
    episode.outputs = [str(o) for o in outputs] if outputs else episode.outputs
    episode.prompt = str(prompt)
    if visuals is not None:
        episode.visual = lambda _doc, shown=list(visuals): shown
    if len(episode.outputs) >= episode.max_steps:
        logger.debug(
            "task %s doc %d: no submit in %d steps",
            episode.request.task_name,
            episode.request.doc_id,
            episode.max_steps,
        )
        episode.answer = _finish(episode, _payload(episode, STEPS_EXHAUSTED))


def _simulate(episode: _Episode) -> tuple[Any, Any, bool, list[Any], Any] | None:
    """Call the task's ``doc_to_text`` for the next round; ``None`` when the episode ended."""
    if episode.simulator is None:
        episode.answer = _finish(episode, _payload(episode, "the task has no doc_to_text function"))
        return None
    reply = episode.simulator(
        episode.doc,
        previous_output=list(episode.outputs),
        round_idx=len(episode.outputs),
        previous_round_info=episode.info,
    )
    if isinstance(reply, str):  # a plain next prompt
        return None, reply, False, list(episode.outputs), episode.info
    if isinstance(reply, tuple) and len(reply) == 5:
        visuals, prompt, done, outputs, info = reply
        return visuals, prompt, bool(done) or prompt is None, list(outputs or []), info
    episode.answer = _finish(
        episode,
        _payload(
            episode,
            f"doc_to_text returned {type(reply).__name__}; expected (visuals, text, done, outputs, info)",
        ),
    )
    return None


def _payload(episode: _Episode, error: str | None) -> str:
    """The JSON answer of an episode the task did not close itself."""
    info = episode.info if isinstance(episode.info, dict) else {}
    body: dict[str, Any] = {**info, "success": False}
    if error is not None:
        body["error"] = error
    body["last_model_output"] = episode.outputs[-1] if episode.outputs else ""
    body["trace"] = list(episode.outputs)
    return json.dumps(body, ensure_ascii=False, default=_jsonable)


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return repr(value)


def _finish(episode: _Episode, text: str) -> GenerationResult:
    counts = TokenCounts(**episode.counts) if episode.counts else None
    return GenerationResult(text, counts)
