"""Samples files as pages: each file is indexed once (the byte offset of every line, cached by path,
modification time and size), and a page is read by seeking to its lines.

Filters need a look at every line; they parse the file once into :class:`Facts` (per line: doc id,
filter chain, failed or not, the metric values and the short scalar fields of the document), kept
with the index. Full-text search scans the raw lines (case-insensitive) without parsing them. The
lines themselves are read with :class:`lmms_eval.results.SampleRecord` (:func:`parse_record`).

Only regular files are opened (:func:`lmms_eval.ui.runs.open_regular`). A line that is not a samples
record (not JSON, not UTF-8, nested too deep, wrong fields) is a row marked ``unreadable`` with the
reason in a page, a 422 naming the file and line when opened alone, and ``failed`` for the filters.
"""

from __future__ import annotations

import logging
import math
import os
import threading
from array import array
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from lmms_eval.results.samples import SampleRecord
from lmms_eval.ui.media import sample_row
from lmms_eval.ui.runs import number, open_regular, parse_json
from lmms_eval.ui.security import Refused

logger = logging.getLogger(__name__)

Status = Literal["all", "correct", "wrong", "failed"]
STATUSES: tuple[str, ...] = ("all", "correct", "wrong", "failed")
CHUNK = 8 * 1024 * 1024
FIELD_CHARS = 80  # doc fields longer than this are not offered as filters
MAX_FIELD_VALUES = 50  # nor fields with more distinct values
CORRECT_AT = 0.5  # a main score >= this counts as correct


def scan_lines(path: Path) -> tuple[array[int], array[int]]:
    """(start, end) byte offsets of every non-blank line of ``path``."""
    starts: array[int] = array("q")
    ends: array[int] = array("q")
    position = 0
    line_start = 0
    tail = b""
    with open_regular(path) as handle:
        while chunk := handle.read(CHUNK):
            data = tail + chunk
            base = position - len(tail)
            index = 0
            while (newline := data.find(b"\n", index)) >= 0:
                if data[index:newline].strip():
                    starts.append(base + index)
                    ends.append(base + newline)
                index = newline + 1
            line_start = base + index
            tail = data[index:]
            position += len(chunk)
    if tail.strip():
        starts.append(line_start)
        ends.append(line_start + len(tail))
    return starts, ends


def parse_record(text: bytes, path: Path, line: int) -> SampleRecord:
    """Line ``line`` (0-based) of a samples file as a record; :class:`Refused` 422 (one line) if it is not one."""
    try:
        data = parse_json(text)
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        return SampleRecord.from_dict(data)
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
        reason = " ".join(str(exc).split())[:200] or type(exc).__name__
        raise Refused(422, f"{path.name}: line {line + 1} is not a samples record ({reason})") from None


def page_row(task: str, path: Path, line: int, text: bytes, metric: str | None) -> dict[str, Any]:
    """One row of a samples page (:func:`~lmms_eval.ui.media.sample_row`); a line that is not a
    record is a row marked ``unreadable`` with the reason in ``error``."""
    try:
        record = parse_record(text, path, line)
    except Refused as exc:
        return {"line": line, "status": "unreadable", "error": exc.message, "scores": {}, "media": []}
    return sample_row(task, line, record, status_of(bool(record.failed), record_scores(record), metric))


def status_of(failed: bool, scores: dict[str, float], metric: str | None) -> str:
    """``failed``, ``correct`` (main score >= 0.5), ``wrong``, or ``unscored``."""
    if failed:
        return "failed"
    value = scores.get(metric) if metric else next(iter(scores.values()), None)
    if value is None or math.isnan(value):
        return "unscored"
    return "correct" if value >= CORRECT_AT else "wrong"


def record_scores(record: SampleRecord) -> dict[str, float]:
    return {k: v for k, value in record.scores().items() if (v := number(value)) is not None}


@dataclass
class Facts:
    """What filters need of every line, parsed once."""

    doc_ids: list[int] = field(default_factory=list)
    filters: list[str] = field(default_factory=list)
    failed: list[bool] = field(default_factory=list)
    scores: list[dict[str, float]] = field(default_factory=list)
    fields: list[dict[str, str]] = field(default_factory=list)

    def add(self, record: SampleRecord) -> None:
        self.doc_ids.append(record.doc_id)
        self.filters.append("none" if record.filter is None else str(record.filter))
        self.failed.append(bool(record.failed))
        self.scores.append(record_scores(record))
        doc = record.doc if isinstance(record.doc, dict) else {}
        self.fields.append(
            {
                str(k): str(v)
                for k, v in doc.items()
                if isinstance(v, (str, int, float, bool)) and len(str(v)) <= FIELD_CHARS
            }
        )

    def add_unreadable(self) -> None:
        """A line that is not a record: counted as failed, with no scores or fields."""
        self.doc_ids.append(-1)
        self.filters.append("")
        self.failed.append(True)
        self.scores.append({})
        self.fields.append({})

    def status(self, line: int, metric: str | None) -> str:
        return status_of(self.failed[line], self.scores[line], metric)

    def lines_by_doc(self, filter_key: str) -> dict[int, int]:
        """doc id -> its first line under ``filter_key``."""
        out: dict[int, int] = {}
        for line, (doc_id, name) in enumerate(zip(self.doc_ids, self.filters, strict=True)):
            if name == filter_key and doc_id not in out:
                out[doc_id] = line
        return out

    def facets(self) -> dict[str, list[str]]:
        """Document fields with few distinct values (categories), with their values."""
        values: dict[str, set[str]] = {}
        dropped: set[str] = set()
        for fields in self.fields:
            for name, value in fields.items():
                if name in dropped:
                    continue
                seen = values.setdefault(name, set())
                seen.add(value)
                if len(seen) > MAX_FIELD_VALUES:
                    dropped.add(name)
        return {n: sorted(v) for n, v in values.items() if n not in dropped and len(v) > 1}


class SamplesFile:
    """One indexed samples file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.key = _key(path)
        self.starts, self.ends = scan_lines(path)
        self._facts: Facts | None = None
        self._lock = threading.Lock()
        self._queries: OrderedDict[tuple[Any, ...], list[int]] = OrderedDict()

    def __len__(self) -> int:
        return len(self.starts)

    def raw(self, lines: Sequence[int]) -> Iterator[tuple[int, bytes]]:
        with open_regular(self.path) as handle:
            for line in lines:
                handle.seek(self.starts[line])
                yield line, handle.read(self.ends[line] - self.starts[line])

    def record(self, line: int) -> SampleRecord:
        if not 0 <= line < len(self):
            raise Refused(404, f"line {line} is out of range: {self.path.name} has {len(self)} samples")
        [(_, text)] = list(self.raw([line]))
        return parse_record(text, self.path, line)

    def facts(self) -> Facts:
        with self._lock:
            if self._facts is None:
                facts, bad = Facts(), 0
                for line, text in self.raw(range(len(self))):
                    try:
                        facts.add(parse_record(text, self.path, line))
                    except Refused:
                        facts.add_unreadable()
                        bad += 1
                if bad:
                    logger.warning("%s: %d line(s) are not samples records", self.path.name, bad)
                self._facts = facts
            return self._facts

    def search(self, query: str) -> set[int]:
        """Lines whose raw text contains ``query`` (case-insensitive)."""
        needle = query.lower().encode("utf-8")
        with open_regular(self.path) as handle:
            data = handle.read().lower()
        found: set[int] = set()
        position = data.find(needle)
        line = 0
        while position >= 0:
            line = _line_at(self.starts, position, line)
            if line >= 0 and position < self.ends[line]:
                found.add(line)
                position = data.find(needle, self.ends[line])
            else:
                position = data.find(needle, position + 1)
        return found

    def select(
        self, status: str, field_name: str, value: str, query: str, metric: str | None
    ) -> list[int] | None:
        """Lines matching the filters (None: no filter, every line)."""
        if status not in STATUSES:
            raise Refused(422, f"status '{status}' is not allowed; use one of {', '.join(STATUSES)}")
        if status == "all" and not field_name and not query:
            return None
        key = (status, field_name, value, query, metric)
        with self._lock:
            if key in self._queries:
                self._queries.move_to_end(key)
                return self._queries[key]
        lines: Iterable[int] = self.search(query) if query else range(len(self))
        if status != "all" or field_name:
            facts = self.facts()
            lines = (
                i
                for i in lines
                if (status == "all" or facts.status(i, metric) == status)
                and (not field_name or facts.fields[i].get(field_name) == value)
            )
        selected = sorted(lines)
        with self._lock:
            self._queries[key] = selected
            while len(self._queries) > 32:
                self._queries.popitem(last=False)
        return selected


def _line_at(starts: array[int], position: int, hint: int) -> int:
    """The index of the last line starting at or before ``position`` (binary search from ``hint``)."""
    low, high = hint, len(starts) - 1
    if low > high or starts[low] > position:
        low = 0
    result = -1
    while low <= high:
        middle = (low + high) // 2
        if starts[middle] <= position:
            result, low = middle, middle + 1
        else:
            high = middle - 1
    return result


class SamplesCache:
    """Indexed samples files, rebuilt when a file changes (a live run appends lines)."""

    def __init__(self, size: int = 16) -> None:
        self.size = size
        self._files: OrderedDict[Path, SamplesFile] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, path: Path) -> SamplesFile:
        key = _key(path)
        with self._lock:
            cached = self._files.get(path)
            if cached is not None and cached.key == key:
                self._files.move_to_end(path)
                return cached
        indexed = SamplesFile(path)
        with self._lock:
            self._files[path] = indexed
            while len(self._files) > self.size:
                self._files.popitem(last=False)
        return indexed


def _key(path: Path) -> tuple[int, int]:
    """(mtime, size) of a samples file; :class:`Refused` 422 unless it is a readable regular file."""
    with open_regular(path) as handle:
        info = os.fstat(handle.fileno())
    return info.st_mtime_ns, info.st_size


def breakdown(facts: Facts, metric: str | None) -> dict[str, list[dict[str, Any]]]:
    """Per category field (see :meth:`Facts.facets`): the main score's mean and CI per value."""
    from lmms_eval.stats.estimates import mean_estimate

    out: dict[str, list[dict[str, Any]]] = {}
    for name, values in facts.facets().items():
        groups: dict[str, list[float]] = {v: [] for v in values}
        for fields, scores, failed in zip(facts.fields, facts.scores, facts.failed, strict=True):
            value = fields.get(name)
            score = scores.get(metric) if metric else next(iter(scores.values()), None)
            if value is not None and score is not None and not failed:
                groups[value].append(score)
        rows = []
        for value, scores_of in groups.items():
            if not scores_of:
                continue
            estimate = mean_estimate(scores_of)
            rows.append(
                {
                    "value": value,
                    "n": estimate.n,
                    "mean": number(estimate.value),
                    "stderr": number(estimate.stderr),
                    "ci_lower": number(estimate.ci_low),
                    "ci_upper": number(estimate.ci_high),
                }
            )
        out[name] = rows
    return out
