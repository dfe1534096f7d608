"""``dummy``: a deterministic model for tests, demos and pipeline benchmarks.

Answers are chosen without any randomness that depends on the process:

* ``response="A"`` answers every generation request with a fixed string (the default);
* ``answer_field=answer`` answers with ``str(doc["answer"])`` (an oracle), and with
  ``accuracy=0.7`` only a deterministic, hash-selected 70% of documents get the oracle answer
  while the rest get ``wrong_response``;
* ``echo=True`` answers with the prompt text;
* ``responses=path.jsonl`` answers from a file of ``{"task", "doc_id", "response"}`` records; a
  list ``response`` is a script: the document's requests get its entries in turn (the last one
  repeats), which drives multi-round and ``generate_until_agentic`` tasks (tool calls, then submit).

``pretrained=NAME`` only labels the run (it names the output folder, as a checkpoint path would).

``loglikelihood`` returns a hash-derived value that is highest for the continuation equal to the
oracle answer when ``answer_field`` is set. ``latency`` adds a sleep per request (for tests of
progress, caching and servers).

Requests are answered one at a time through the run's gate (:func:`answer_one_by_one`): each is
admitted first and reported after, so progress moves per request, and the ``--max_tokens`` budget
and Ctrl-C stop the rest.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from lmms_eval.api.instance import GenerationResult, Instance, RequestFailure, TokenCounts
from lmms_eval.api.model import lmms, resolve_continuation
from lmms_eval.api.path_types import DataPath, ModelPath
from lmms_eval.errors import ModelArgsError
from lmms_eval.models._common import apply_stop_strings
from lmms_eval.protocol import ChatMessages

logger = logging.getLogger(__name__)

T = TypeVar("T")


def answer_one_by_one(
    model: lmms, requests: Sequence[Instance], answer: Callable[[Instance], T], latency: float = 0.0
) -> list[T | RequestFailure]:
    """``answer`` each request in order under ``model.gate``.

    Before each request the gate is asked; once it refuses (budget spent, circuit breaker open, run
    stopped), that request and the rest are answered with the refusal and not run. ``latency``
    seconds are slept before each answer (cut short when the run stops). The gate is told each
    answer.
    """
    gate = model.gate
    outputs: list[T | RequestFailure] = []
    for position, request in enumerate(requests):
        refusal = gate.refusal()
        if refusal is None and latency > 0 and not gate.sleep(latency):
            refusal = gate.refusal() or RequestFailure("not sent: the run was stopped", 0, kind="not_sent")
        if refusal is not None:
            return outputs + [refusal] * (len(requests) - position)
        output = answer(request)
        gate.done(output, request)
        outputs.append(output)
    return outputs


def _unit_hash(*parts: Any) -> float:
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


class DummySimple(lmms):
    """Deterministic answers; see the module docstring for the arguments."""

    is_simple = True

    def __init__(
        self,
        response: str = "A",
        answer_field: str | None = None,
        accuracy: float | None = None,
        wrong_response: str = "[wrong]",
        echo: bool = False,
        responses: DataPath | None = None,
        latency: float = 0.0,
        seed: int = 0,
        pretrained: ModelPath | None = None,
        batch_size: int | str = 1,
        device: str | None = None,
        max_batch_size: int | None = None,
    ) -> None:
        super().__init__()
        if accuracy is not None and answer_field is None and not echo:
            logger.warning(
                "dummy model: accuracy=%s has no effect without answer_field=<the answer column>; "
                "every answer is %r",
                accuracy,
                response,
            )
        accuracy = 1.0 if accuracy is None else accuracy
        if not 0.0 <= float(accuracy) <= 1.0:
            raise ModelArgsError(f"dummy model: accuracy must be between 0 and 1, got {accuracy}")
        self.response = str(response)
        self.answer_field = answer_field
        self.accuracy = float(accuracy)
        self.wrong_response = wrong_response
        self.echo = bool(echo)
        self.latency = float(latency)
        self.seed = int(seed)
        self.pretrained = pretrained
        self.batch_size_per_gpu = int(batch_size) if str(batch_size).isdigit() else 1
        self.device = device or "cpu"
        self._table: dict[tuple[str, int], list[str]] = {}
        self._turns: dict[tuple[str, int], int] = {}
        if responses:
            self._table = self._load_table(responses)

    @staticmethod
    def _load_table(path: str) -> dict[tuple[str, int], list[str]]:
        table: dict[tuple[str, int], list[str]] = {}
        with open(path, encoding="utf-8") as handle:
            for line_no, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                    response = record["response"]
                    script = [str(r) for r in response] if isinstance(response, list) else [str(response)]
                    if not script:
                        raise ValueError("an empty response list")
                    table[(str(record["task"]), int(record["doc_id"]))] = script
                except (json.JSONDecodeError, KeyError, ValueError) as exc:
                    raise ModelArgsError(
                        f"{path}:{line_no}: expected a JSON object with task, doc_id, response ({exc})"
                    ) from None
        return table

    # -- answers ----------------------------------------------------------------------------------

    def _prompt_text(self, request: Instance) -> str:
        first = request.args[0]
        if callable(first):
            messages: Any = first(self.get_doc(request))
            return ChatMessages.from_raw(messages).text()
        return str(first)

    def _oracle(self, request: Instance) -> str | None:
        if not self.answer_field:
            return None
        doc = self.get_doc(request)
        if self.answer_field not in doc:
            raise ModelArgsError(
                f"dummy model: answer_field '{self.answer_field}' is not a field of task "
                f"'{request.task_name}' (fields: {', '.join(sorted(doc))})"
            )
        return str(doc[self.answer_field])

    def _knows(self, request: Instance) -> bool:
        return _unit_hash(self.seed, request.task_name, request.doc_id) < self.accuracy

    def _answer(self, request: Instance) -> str:
        key = (request.task_name, request.doc_id)
        if key in self._table:
            script, turn = self._table[key], self._turns.get(key, 0)
            self._turns[key] = turn + 1
            return script[min(turn, len(script) - 1)]
        if self.echo:
            return self._prompt_text(request)
        oracle = self._oracle(request)
        if oracle is not None:
            return oracle if self._knows(request) else self.wrong_response
        return self.response

    def _generate_one(self, request: Instance) -> GenerationResult:
        gen_kwargs = request.args[1] if isinstance(request.args[1], dict) else {}
        text = apply_stop_strings(self._answer(request), gen_kwargs.get("until"))
        prompt = self._prompt_text(request)
        counts = TokenCounts(input_tokens=len(prompt.split()), output_tokens=len(text.split()))
        return GenerationResult(text=text, token_counts=counts)

    def _loglikelihood_one(self, request: Instance) -> tuple[float, bool]:
        doc = self.get_doc(request)
        continuation = resolve_continuation(request.args[1], doc)
        oracle = self._oracle(request)
        if oracle is not None and self._knows(request):
            is_answer = continuation.strip() == oracle.strip()
            if is_answer:
                return -0.5, True
            return -5.0 - _unit_hash(self.seed, request.task_name, request.doc_id, continuation), False
        return -1.0 - 4.0 * _unit_hash(self.seed, request.task_name, request.doc_id, continuation), False

    def generate_until(self, requests: list[Instance]) -> list[str | GenerationResult | RequestFailure]:
        return list(answer_one_by_one(self, requests, self._generate_one, self.latency))

    def generate_until_multi_round(
        self, requests: list[Instance]
    ) -> list[str | GenerationResult | RequestFailure]:
        return self.generate_until(requests)

    def loglikelihood(self, requests: list[Instance]) -> list[Any]:
        """``(log-likelihood, is_greedy)`` per request, or the gate's refusal for requests not run."""
        return list(answer_one_by_one(self, requests, self._loglikelihood_one, self.latency))
