"""``from_log``: replay responses from samples JSONL files, so a run can be re-scored without inference.

``--model from_log --model_args logs=PATH`` where PATH is a ``*_samples_<task>.jsonl`` file, or a
folder holding such files (searched recursively; for a task logged several times the newest file
wins). Responses are matched by task name and doc id; each instance of a doc (e.g. each choice of a
multiple-choice question) and each repeat gets the response logged for it. Requests are answered
one at a time through the run's gate (per-request progress; the rest stop on Ctrl-C).
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path
from typing import Any

from lmms_eval.api.instance import Instance, RequestFailure
from lmms_eval.api.model import lmms
from lmms_eval.api.path_types import OutputPath
from lmms_eval.errors import LmmsEvalError, ModelArgsError
from lmms_eval.models.simple.dummy import answer_one_by_one
from lmms_eval.results.layout import file_safe, latest_samples, parse_name, samples_files_under
from lmms_eval.results.samples import read_samples


def _sample_files(path: str) -> dict[str, str]:
    """``{file-safe task name: newest samples file}`` under ``path`` (a file or a folder)."""
    if os.path.isfile(path):
        parsed = parse_name(os.path.basename(path))
        if parsed is None or parsed.kind != "samples":
            raise ModelArgsError(
                f"from_log: '{path}' is not a samples file (expected '<timestamp>_samples_<task>.jsonl')"
            )
        files = [Path(path)]
    elif os.path.isdir(path):
        files = samples_files_under(path)
    else:
        raise ModelArgsError(f"from_log: logs path '{path}' does not exist")
    newest = latest_samples(files)
    if not newest:
        raise ModelArgsError(f"from_log: no '*_samples_<task>.jsonl' files under '{path}'")
    return {task: str(file) for task, file in newest.items()}


def _read(file: str) -> dict[int, list[list[Any]]]:
    """``{doc_id: resps}``: the raw responses of each doc (one record per filter; the same in each)."""
    by_doc: dict[int, list[list[Any]]] = {}
    try:
        for record in read_samples(file):
            if record.resps is not None:
                by_doc.setdefault(record.doc_id, record.resps)
    except LmmsEvalError as exc:
        raise ModelArgsError(f"from_log: {exc}") from None
    return by_doc


class FromLog(lmms):
    """Answers every request with the response recorded in earlier samples files."""

    is_simple = True

    def __init__(
        self, logs: OutputPath, batch_size: int | str = 1, device: str | None = None, **kwargs: Any
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
            if file_safe(task) not in self._files:
                raise ModelArgsError(
                    f"from_log: no samples for task '{task}' under '{self.logs}' (logged tasks: {', '.join(sorted(self._files))})"
                )
            self._cache[task] = _read(self._files[file_safe(task)])
        return self._cache[task]

    def _next(self, request: Instance) -> Any:
        logged = self._responses(request.task_name).get(request.doc_id)
        if logged is None or request.idx >= len(logged):
            raise ModelArgsError(
                f"from_log: no logged response for task '{request.task_name}' doc {request.doc_id} "
                f"(instance {request.idx}) in {self._files[file_safe(request.task_name)]}"
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
