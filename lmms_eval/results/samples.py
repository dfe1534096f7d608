"""One line of a ``{timestamp}_samples_{task}.jsonl`` file: :class:`SampleRecord`.

In the model, a document's metric values are one field, :attr:`SampleRecord.metrics`; on disk they
stay at the top level of the line (the published layout), next to the fixed keys. Reading a line
puts every top-level key that is not a field into ``metrics``; writing flattens them back. A field
is written only when it was given (``arguments`` only for multiple-choice tasks, ``cluster`` only
with a ``cluster_key``, ``failed`` and ``errors`` only for documents that were not scored), so a
line read and written again is the same line.

Lines of files written by the published package (no ``schema_version`` in their results file) are
upgraded as they are read (:func:`lmms_eval.results.versions.upgrade_sample`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from lmms_eval.errors import LmmsEvalError
from lmms_eval.results.encoding import dumps, validation_problem
from lmms_eval.results.versions import is_published_sample, upgrade_sample

#: Top-level keys of older writers that are not metrics (never counted as scores).
NOT_METRICS = frozenset({"target_hash", "prompt_hash", "task", "task_name", "repeat"})


class SampleRecord(BaseModel):
    """One document under one filter chain (or one document that was not scored)."""

    model_config = ConfigDict(extra="forbid")

    doc_id: int = Field(description="index of the document in the evaluated split")
    doc_hash: str | None = Field(None, description="SHA-256 of the document's canonical JSON")
    target: Any = Field(None, description="the reference answer (the option text for tasks with choices)")
    input: Any = Field(None, description="the prompt as text (for chat requests: the text of the messages)")
    arguments: list[Any] | None = Field(
        None, description="multiple_choice only: [context or null, continuation] per option"
    )
    resps: Any = Field(None, description="raw responses: one list per request, one entry per repeat")
    filtered_resps: Any = Field(
        None, description="responses after reasoning-tag stripping and the filter chain, one per request"
    )
    filter: str | None = Field(None, description="the filter chain's name (null for failed documents)")
    token_counts: list[Any] | None = Field(None, description="token counts reported by the model, or null")
    cluster: Any = Field(None, description="the document's cluster id (tasks with a cluster_key)")
    failed: bool | None = Field(None, description="true: the document was not scored (see errors)")
    errors: list[str] | None = Field(None, description="why the document was not scored")
    input_media: list[Any] | None = Field(None, description="published layout: up to 4 image references")
    doc: Any = Field(None, description="the document, media replaced by references (schema 2.0)")
    metrics: dict[str, Any] = Field(
        default_factory=dict, description="metric values; written at the top level of the line"
    )

    @model_validator(mode="before")
    @classmethod
    def _collect_metrics(cls, data: Any) -> Any:
        """Top-level keys that are not fields are metric values."""
        if not isinstance(data, Mapping):
            return data
        fields = cls.model_fields
        extra = {k: v for k, v in data.items() if k not in fields}
        if not extra:
            return data
        known = {k: v for k, v in data.items() if k in fields}
        known["metrics"] = {**(known.get("metrics") or {}), **extra}
        return known

    @classmethod
    def build(cls, **values: Any) -> SampleRecord:
        """A record from values the scorer made, without validation (once per document and filter).

        What ``model_construct`` does, for this model's fields only, at a fraction of its cost: the
        given names are the fields set (those written by :meth:`to_dict`), the others get defaults.
        """
        record = cls.__new__(cls)
        object.__setattr__(record, "__dict__", {**_DEFAULTS, "metrics": {}, **values})
        object.__setattr__(record, "__pydantic_fields_set__", set(values))
        object.__setattr__(record, "__pydantic_extra__", None)
        object.__setattr__(record, "__pydantic_private__", None)
        return record

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], published: bool | None = None) -> SampleRecord:
        """A record from a parsed line; ``published``: the published package's layout (``None``: detect)."""
        if published is None:
            published = is_published_sample(data)
        return cls.model_validate(upgrade_sample(data) if published else data)

    @classmethod
    def from_line(cls, text: str, published: bool | None = None) -> SampleRecord:
        """A record from one JSON line (see :meth:`from_dict`)."""
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        return cls.from_dict(data, published)

    def to_dict(self) -> dict[str, Any]:
        """The published layout: the given fields, the metric values at the top level, then ``doc``."""
        given = self.model_fields_set
        values = self.__dict__
        out = {name: values[name] for name in _LINE_ORDER if name in given}
        out.update(self.metrics)
        if "doc" in given:
            out["doc"] = self.doc
        return out

    def to_line(self) -> str:
        """The JSON line (without the newline)."""
        return dumps(self.to_dict())

    def scores(self) -> dict[str, Any]:
        """Metric values that can be scores: not text or lists (e.g. a parsed answer), nor ``NOT_METRICS``."""
        return {
            name: value
            for name, value in self.metrics.items()
            if name not in NOT_METRICS and not isinstance(value, (str, bytes, list, tuple))
        }


_LINE_ORDER = tuple(name for name in SampleRecord.model_fields if name not in ("doc", "metrics"))
_DEFAULTS = {name: info.default for name, info in SampleRecord.model_fields.items() if name != "metrics"}


def read_samples(path: str | Path, published: bool | None = None) -> Iterator[SampleRecord]:
    """The records of a samples file, one per non-empty line.

    Raises :class:`LmmsEvalError` naming the file and line of the first line that is not a record.
    """
    path = Path(path)
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise LmmsEvalError(f"{path}: cannot read ({exc.strerror or exc})") from None
    with handle:
        for line_no, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                yield SampleRecord.from_line(line, published)
            except ValidationError as exc:
                raise LmmsEvalError(
                    f"{path}:{line_no}: not a samples record: {validation_problem(exc)}"
                ) from None
            except (ValueError, TypeError) as exc:  # json.JSONDecodeError is a ValueError
                raise LmmsEvalError(f"{path}:{line_no}: not a samples record ({exc})") from None


def line_json_schema() -> dict[str, Any]:
    """JSON Schema of a samples line as written (metric values at the top level)."""
    schema = SampleRecord.model_json_schema()
    schema["properties"].pop("metrics", None)
    schema["additionalProperties"] = {"description": "a metric value of the document (any JSON value)"}
    schema["description"] = (
        "One line of {timestamp}_samples_{task}.jsonl: one document under one filter chain. "
        "Keys other than the properties are the document's metric values."
    )
    return schema
