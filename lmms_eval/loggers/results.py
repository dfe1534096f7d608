"""Writers for ``{timestamp}_results.json`` and ``{timestamp}_samples_{task}.jsonl``.

Sample lines are appended and flushed as each document is scored; the results file is replaced
atomically after every task, so a crash loses nothing already scored.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from typing import IO, Any

from lmms_eval.utils import file_timestamp, redact

RESULTS_SCHEMA_VERSION = "1.0"


def _json_default(obj: Any) -> Any:
    if hasattr(obj, "item") and callable(obj.item):
        return obj.item()
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    if callable(obj):
        return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"
    if hasattr(obj, "size") and hasattr(obj, "mode"):
        return f"<image {getattr(obj, 'size', '')}>"
    if isinstance(obj, bytes):
        return f"<{len(obj)} bytes>"
    return repr(obj)


def _finite(obj: Any) -> Any:
    """NaN and infinity are not JSON: write them as null."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def dumps(obj: Any, indent: int | None = None) -> str:
    return json.dumps(_finite(obj), indent=indent, ensure_ascii=False, default=_json_default)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class OutputWriter:
    """Files of one run under ``{output_path}/{model_name_sanitized}/``."""

    def __init__(self, output_path: str, model_name_sanitized: str, timestamp: str | None = None) -> None:
        output_path = os.path.expanduser(output_path)
        if output_path.endswith((".json", ".jsonl")):
            output_path = os.path.dirname(output_path) or "."
        self.directory = (
            os.path.join(output_path, model_name_sanitized) if model_name_sanitized else output_path
        )
        os.makedirs(self.directory, exist_ok=True)
        self.timestamp = self._unique_stamp(timestamp or file_timestamp())
        self._samples: dict[str, IO[str]] = {}

    def _unique_stamp(self, stamp: str) -> str:
        """``stamp``, or ``stamp_2``, ``stamp_3``... when a run in the same second already wrote files."""
        taken = {name.split("_results.json")[0].split("_samples_")[0] for name in os.listdir(self.directory)}
        candidate, n = stamp, 1
        while candidate in taken:
            n += 1
            candidate = f"{stamp}_{n}"
        # claim the stamp right away so a concurrent run in this second picks another one
        try:
            with open(
                os.path.join(self.directory, f"{candidate}_results.json"), "x", encoding="utf-8"
            ) as handle:
                handle.write('{"status": "starting"}')
        except FileExistsError:
            return self._unique_stamp(stamp)
        return candidate

    @property
    def results_path(self) -> str:
        return os.path.join(self.directory, f"{self.timestamp}_results.json")

    def samples_path(self, task_name: str) -> str:
        safe = task_name.replace("/", "__")
        return os.path.join(self.directory, f"{self.timestamp}_samples_{safe}.jsonl")

    def write_sample(self, task_name: str, record: dict[str, Any]) -> None:
        handle = self._samples.get(task_name)
        if handle is None:
            handle = open(self.samples_path(task_name), "w", encoding="utf-8")  # noqa: SIM115 - kept open for the run
            self._samples[task_name] = handle
        handle.write(dumps(redact(record)) + "\n")
        handle.flush()

    def close_samples(self, task_name: str | None = None) -> None:
        names = [task_name] if task_name else list(self._samples)
        for name in names:
            handle = self._samples.pop(name, None)
            if handle is not None:
                handle.close()

    def write_results(self, results: dict[str, Any]) -> str:
        """Atomically (re)write the results file."""
        payload = dumps(redact(results), indent=2)
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".results-", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(payload)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600; results are as readable as samples
        os.replace(tmp, self.results_path)
        return self.results_path

    def close(self) -> None:
        self.close_samples()
