"""What an aggregation function may know about its run: where to write submission files.

An aggregation function that takes a second parameter, ``fn(items, context)`` (the published
package calls it ``args``), receives an :class:`AggregationContext`. Benchmarks whose test answers
are hidden use it to write the file their evaluation server takes::

    def aggregate_submission(items, context):
        context.write_json("mmmu_test_for_submission.json", {i["id"]: i["answer"] for i in items})
        return None  # no score: the answers are hidden

Files go to ``{output_path}/{model}/{run timestamp}_submissions/``, next to the run's results file,
and are listed in the results under ``output_files.submissions``. Without ``--output_path`` nothing
is written and a warning says so. An aggregation that writes files is called once: the error-bar
bootstrap resamples only aggregations known to be pure (``lmms_eval.stats.pure``), and their
resampled calls get a context that writes nothing.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

logger = logging.getLogger(__name__)


@dataclass
class AggregationContext:
    """Run information for aggregation functions (see the module docstring)."""

    task_name: str
    output_dir: str | None = None  # {output_path}/{model}/ of this run; None without --output_path
    run_stamp: str | None = None  # the timestamp that names this run's files
    dry: bool = False  # a bootstrap call: write nothing
    written: list[str] = field(default_factory=list)

    @property
    def output_path(self) -> str | None:
        """The run folder (the name the published package's ``args`` used)."""
        return self.output_dir

    def submission_path(self, filename: str) -> str | None:
        """Where to write submission file ``filename``; None when nothing may be written."""
        if self.dry:
            return None
        if self.output_dir is None:
            logger.warning(
                "task %s: submission file %s not written; pass --output_path to keep it",
                self.task_name,
                filename,
            )
            return None
        if os.path.basename(filename) != filename or filename in ("", ".", ".."):
            raise ValueError(f"submission file name must be a plain file name, got {filename!r}")
        folder = os.path.join(
            self.output_dir, f"{self.run_stamp}_submissions" if self.run_stamp else "submissions"
        )
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, filename)
        if path not in self.written:
            self.written.append(path)
        return path

    def write_text(self, filename: str, text: str) -> str | None:
        path = self.submission_path(filename)
        if path is not None:
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
            logger.info("task %s: submission file written to %s", self.task_name, path)
        return path

    def write_json(self, filename: str, data: Any) -> str | None:
        """Write ``data`` as indented JSON (non-ASCII kept as is)."""
        return self.write_text(filename, json.dumps(data, indent=2, ensure_ascii=False) + "\n")

    def write_jsonl(self, filename: str, rows: Iterable[Any]) -> str | None:
        return self.write_text(filename, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))

    def as_dry(self) -> AggregationContext:
        return AggregationContext(self.task_name, self.output_dir, self.run_stamp, dry=True)


def takes_context(fn: Callable[..., Any]) -> bool:
    """Whether an aggregation function has a second positional parameter for the context."""
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [
        p
        for p in parameters
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    return len(positional) >= 2 or any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters[1:])


def bind_context(fn: Callable[..., Any], context: AggregationContext) -> Callable[[list[Any]], Any]:
    """``fn`` as a one-argument aggregation (the context bound when ``fn`` takes one)."""
    if not takes_context(fn):
        return fn

    def bound(items: list[Any]) -> Any:
        return fn(items, context)

    bound.__name__ = getattr(fn, "__name__", "aggregation")
    return bound
