"""The output files of a run, as one versioned, typed contract (see ``docs/results.md``).

* :mod:`~lmms_eval.results.schema`: :class:`ResultsFile` (``{stamp}_results.json``) and its parts;
* :mod:`~lmms_eval.results.samples`: :class:`SampleRecord` (a line of ``{stamp}_samples_{task}.jsonl``)
  and :func:`read_samples`;
* :mod:`~lmms_eval.results.docs`: the ``doc`` of a sample line, media replaced by references;
* :mod:`~lmms_eval.results.layout`: file names, and finding runs in folders;
* :mod:`~lmms_eval.results.writer`: :class:`OutputWriter`, which writes them during a run;
* :mod:`~lmms_eval.results.versions`: the version history and the upgrade of older files.

Read by the CLI, ``compare``, the ``from_log`` model, the server and the viewer alike. This package
imports pydantic, never torch, ``datasets`` or anything above it.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lmms_eval.results.docs import DocRecorder, doc_for_record, doc_hash
    from lmms_eval.results.encoding import dumps
    from lmms_eval.results.layout import RunFiles, find_runs, parse_name, run_of
    from lmms_eval.results.samples import SampleRecord, read_samples
    from lmms_eval.results.schema import MetricRow, ResultsFile, TaskResults, json_schema
    from lmms_eval.results.versions import SCHEMA_VERSION
    from lmms_eval.results.writer import OutputWriter, check_output_path

# imported on first use, so ``lmms_eval.results.layout`` alone (CLI help texts) costs no pydantic models
_LAZY = {
    "DocRecorder": "docs",
    "doc_for_record": "docs",
    "doc_hash": "docs",
    "dumps": "encoding",
    "RunFiles": "layout",
    "find_runs": "layout",
    "parse_name": "layout",
    "run_of": "layout",
    "SampleRecord": "samples",
    "read_samples": "samples",
    "MetricRow": "schema",
    "ResultsFile": "schema",
    "TaskResults": "schema",
    "json_schema": "schema",
    "SCHEMA_VERSION": "versions",
    "OutputWriter": "writer",
    "check_output_path": "writer",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(f"lmms_eval.results.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'lmms_eval.results' has no attribute {name!r}")


__all__ = [
    "SCHEMA_VERSION",
    "DocRecorder",
    "MetricRow",
    "OutputWriter",
    "ResultsFile",
    "RunFiles",
    "SampleRecord",
    "TaskResults",
    "check_output_path",
    "doc_for_record",
    "doc_hash",
    "dumps",
    "find_runs",
    "json_schema",
    "parse_name",
    "read_samples",
    "run_of",
]
