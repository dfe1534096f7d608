"""``from_log``: replay responses from samples JSONL files, so a run can be re-scored without inference.

``--model from_log --model_args logs=PATH`` where PATH is a ``*_samples_<task>.jsonl`` file, or a
folder holding such files (searched recursively; for a task logged several times the newest file
wins). Responses are matched by task name and doc id; each instance of a doc (e.g. each choice of a
multiple-choice question) and each repeat gets the response logged for it. Requests are answered
one at a time through the run's gate (per-request progress; the rest stop on Ctrl-C).
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from typing import Any

from lmms_eval.api.instance import Instance, RequestFailure
from lmms_eval.api.model import lmms
from lmms_eval.errors import ModelArgsError
from lmms_eval.models.simple.dummy import answer_one_by_one

SAMPLES_MARKER = "_samples_"


def _sample_files(path: str) -> dict[str, str]:
    """``{task: newest samples file}`` under ``path`` (a file or a folder)."""
    if os.path.isfile(path):
        files = [path]
    elif os.path.isdir(path):
        files = [
            os.path.join(root, name)
            for root, _, names in os.walk(path)
            for name in names
            if SAMPLES_MARKER in name and name.endswith(".jsonl")
        ]
    else:
        raise ModelArgsError(f"from_log: logs path '{path}' does not exist")
    newest: dict[str, str] = {}
    for file in sorted(files, key=os.path.basename):  # timestamps prefix the names: later sorts last
        name = os.path.basename(file)
        if SAMPLES_MARKER not in name:
            raise ModelArgsError(
                f"from_log: '{file}' is not a samples file (expected '<timestamp>_samples_<task>.jsonl')"
            )
        task = name.split(SAMPLES_MARKER, 1)[1][: -len(".jsonl")]
        newest[task] = file
    if not newest:
        raise ModelArgsError(f"from_log: no '*_samples_<task>.jsonl' files under '{path}'")
    return newest


def _read(file: str) -> dict[int, list[list[Any]]]:
    by_doc: dict[int, list[list[Any]]] = {}
    with open(file, encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                doc_id = int(record["doc_id"])
                resps = record["resps"]
            except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                raise ModelArgsError(f"from_log: {file}:{line_no}: not a samples record ({exc})") from None
            by_doc.setdefault(doc_id, resps)  # one record per filter; the raw responses are the same
    return by_doc


class FromLog(lmms):
    """Answers every request with the response recorded in earlier samples files."""

    is_simple = True

    def __init__(
        self, logs: str, batch_size: int | str = 1, device: str | None = None, **kwargs: Any
    ) -> None:
        super().__init__()
        if kwargs:
            raise ModelArgsError(
                f"from_log does not accept argument(s) {', '.join(sorted(kwargs))}; accepted: logs"
            )
        self.logs = os.path.expanduser(str(logs))
        self._files = _sample_files(self.logs)
        self._cache: dict[str, dict[int, list[list[Any]]]] = {}
        self._served: dict[tuple[str, int, int], int] = defaultdict(int)

    def _responses(self, task: str) -> dict[int, list[list[Any]]]:
        if task not in self._cache:
            if task not in self._files:
                raise ModelArgsError(
                    f"from_log: no samples for task '{task}' under '{self.logs}' (logged tasks: {', '.join(sorted(self._files))})"
                )
            self._cache[task] = _read(self._files[task])
        return self._cache[task]

    def _next(self, request: Instance) -> Any:
        logged = self._responses(request.task_name).get(request.doc_id)
        if logged is None or request.idx >= len(logged):
            raise ModelArgsError(
                f"from_log: no logged response for task '{request.task_name}' doc {request.doc_id} "
                f"(instance {request.idx}) in {self._files[request.task_name]}"
            )
        repeats = logged[request.idx]
        if not isinstance(repeats, list):
            repeats = [repeats]
        key = (request.task_name, request.doc_id, request.idx)
        served = self._served[key]
        self._served[key] = served + 1
        if served >= len(repeats):
            raise ModelArgsError(
                f"from_log: task '{request.task_name}' doc {request.doc_id} was logged with {len(repeats)} "
                "repeat(s); the run asks for more"
            )
        return repeats[served]

    def _text(self, request: Instance) -> str:
        return str(self._next(request))

    def _pair(self, request: Instance) -> tuple[float, bool]:
        value = self._next(request)
        if not (isinstance(value, (list, tuple)) and len(value) == 2):
            raise ModelArgsError(
                f"from_log: expected a logged [log-likelihood, is_greedy] pair, got {value!r}"
            )
        return float(value[0]), bool(value[1])

    def generate_until(self, requests: list[Instance]) -> list[str | RequestFailure]:
        return answer_one_by_one(self, requests, self._text)

    def generate_until_multi_round(self, requests: list[Instance]) -> list[str | RequestFailure]:
        return self.generate_until(requests)

    def loglikelihood(self, requests: list[Instance]) -> list[Any]:
        """The logged ``(log-likelihood, is_greedy)`` per request, or the gate's refusal."""
        return list(answer_one_by_one(self, requests, self._pair))
