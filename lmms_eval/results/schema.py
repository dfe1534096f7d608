"""The results file, ``{timestamp}_results.json``: :class:`ResultsFile` and its parts.

Every model keeps keys it does not know (``extra="allow"``), so what plugins or newer versions add
survives a load and a dump. The published hyphenated keys (``n-shot``, ``n-samples``) are field
aliases: the JSON keeps the published names, Python uses ``n_shot`` and ``n_samples``.
:meth:`ResultsFile.dump` writes only the keys that were given, so a file loaded and dumped again
has the same keys. A file of an older version is upgraded as it loads (see
:mod:`lmms_eval.results.versions`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from lmms_eval.errors import LmmsEvalError
from lmms_eval.results.encoding import dumps, validation_problem
from lmms_eval.results.samples import SampleRecord, line_json_schema
from lmms_eval.results.versions import SCHEMA_VERSION, upgrade_results

Status = Literal["starting", "running", "completed", "completed_with_failures", "interrupted"]
STATUSES: tuple[str, ...] = get_args(Status)


class _Open(BaseModel):
    """A part of the file that keeps unknown keys and reads the published aliases."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


@dataclass(frozen=True)
class MetricRow:
    """One aggregated metric of a task or group: value, standard error, interval and related keys."""

    metric: str
    filter: str
    value: Any
    stderr: Any = None
    ci_lower: Any = None
    ci_upper: Any = None
    related: dict[str, Any] = field(default_factory=dict)  # suffix -> value, e.g. "_stderr_clustered"

    @property
    def key(self) -> str:
        return f"{self.metric},{self.filter}"


def metric_keys(scores: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(metric, filter)`` of the aggregated metrics of one entry (each has its ``_stderr`` key),
    sorted by filter, then metric."""
    pairs = []
    for key in scores:
        metric, sep, filter_key = key.partition(",")
        if sep and f"{metric}_stderr,{filter_key}" in scores:
            pairs.append((metric, filter_key))
    return sorted(pairs, key=lambda p: (p[1], p[0]))


class TaskResults(_Open):
    """One task's (or group's) entry of ``results`` / ``groups``.

    Besides the named fields, keys are ``"<metric>,<filter>"`` (the value), ``"<metric>_stderr,<filter>"``,
    ``_ci_lower`` / ``_ci_upper``, the clustered, repeated-sampling and baseline variants
    (``docs/statistics.md``): read them with :meth:`get` or as rows with :meth:`metrics`.
    """

    alias: str | None = Field(None, description="the name shown in tables")
    samples: int | None = Field(None, description="documents scored")
    failed: int | None = Field(None, description="documents not scored (see failures)")
    baseline_unmatched: int | None = Field(None, description="--baseline: docs in only one of the runs")
    baseline_mismatched: int | None = Field(None, description="--baseline: same doc_id, different doc_hash")
    stderr_notes: dict[str, str] | None = Field(
        None,
        description="'<metric>,<filter>' -> why its error bar is not a bootstrap: a custom aggregation "
        "not known to be pure runs once (docs/statistics.md)",
    )
    ci_methods: dict[str, str] | None = Field(
        None,
        description="'<metric>,<filter>' (and '<metric>_clustered,<filter>') -> how the confidence "
        "interval was formed: 'wilson' (0/1 scores), 'clopper-pearson', 'wilson-effective-n' (clustered "
        "0/1 scores), 't' or 'normal' (', clipped to [0, 1]' when cut to the possible range), "
        "'bootstrap-percentile' (docs/statistics.md)",
    )
    baseline_matched: int | None = Field(
        None, description="--baseline: docs compared (in both runs, same doc_hash)"
    )

    def as_dict(self) -> dict[str, Any]:
        """Every key of the entry as in the file."""
        return self.model_dump(by_alias=True, exclude_unset=True)

    def get(self, key: str, default: Any = None) -> Any:
        """The value of ``key`` (``"acc,none"``, ``"alias"``...), or ``default``."""
        if key in type(self).model_fields:
            return getattr(self, key) if key in self.model_fields_set else default
        return (self.model_extra or {}).get(key, default)

    def metrics(self) -> list[MetricRow]:
        """The aggregated metrics as rows (sorted by filter, then metric)."""
        scores = self.model_extra or {}
        keys = metric_keys(scores)
        rows = []
        for metric, filter_key in keys:
            others = {m for m, f in keys if f == filter_key and m != metric}
            related: dict[str, Any] = {}
            for key, value in scores.items():
                name, _, key_filter = key.partition(",")
                if key_filter == filter_key and _belongs_to(name, metric, others):
                    related[name[len(metric) :]] = value
            rows.append(
                MetricRow(
                    metric,
                    filter_key,
                    scores.get(f"{metric},{filter_key}"),
                    related.pop("_stderr", None),
                    related.pop("_ci_lower", None),
                    related.pop("_ci_upper", None),
                    related,
                )
            )
        return rows


def _belongs_to(name: str, metric: str, others: set[str]) -> bool:
    """Whether ``name`` (``acc_stderr``) is a key of ``metric`` (``acc``): it extends the name, and
    no other metric with a longer name that starts alike (``acc_norm``) claims it."""
    if not name.startswith(metric + "_"):
        return False
    return not any(
        len(other) > len(metric) and (name == other or name.startswith(other + "_")) for other in others
    )


class NSamples(_Open):
    """``n-samples`` of one task."""

    original: int | None = Field(None, description="documents in the split")
    effective: int | None = Field(None, description="documents evaluated")
    failed: int | None = Field(None, description="documents not scored")


class TokenUsage(_Open):
    input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None
    total_tokens: int | None = None
    n_api_calls: int | None = None


class Usage(_Open):
    """``usage``: token counts per task and in all, and the ``--max_tokens`` budget."""

    total: TokenUsage | None = None
    by_task: dict[str, TokenUsage] = Field(default_factory=dict)
    by_source: dict[str, Any] | None = None
    budget_total_tokens: int | None = None
    budget_used_tokens: int | None = None
    budget_exceeded: bool | None = None


class EfficiencyEntry(_Open):
    """Token cost of the answers of one task, or of the whole run (the published keys)."""

    docs: float | None = Field(None, description="documents evaluated")
    docs_with_token_counts: float | None = Field(None, description="documents whose model reported tokens")
    total_input_tokens: float | None = None
    total_output_tokens: float | None = None
    total_tokens: float | None = Field(None, description="input plus output tokens")
    total_correct_score: float | None = Field(
        None, description="sum over documents of score, acc, accuracy, exact_match or *_score (first found)"
    )
    avg_output_tokens_per_sample: float | None = Field(
        None, description="output tokens per document with token counts"
    )
    tokens_per_correct_answer: float | None = Field(
        None, description="total_output_tokens / total_correct_score; null when nothing was correct"
    )


class Efficiency(_Open):
    """``efficiency``: tokens per correct answer, per task and overall."""

    by_task: dict[str, EfficiencyEntry] = Field(default_factory=dict)
    overall: EfficiencyEntry | None = None


class TaskFailures(_Open):
    """``failures`` of one task: documents without an answer, by kind, with examples."""

    docs: int | None = Field(None, description="documents not scored")
    by_kind: dict[str, int] = Field(
        default_factory=dict, description="error, not_sent, refusal, filtered, input"
    )
    doc_ids: list[int] = Field(default_factory=list, description="the first 50")
    not_sent_doc_ids: list[int] | None = None
    examples: list[dict[str, Any]] = Field(default_factory=list)


class OutputFiles(_Open):
    """``output_files``: where this run's files are."""

    results: str | None = None
    samples: dict[str, str] = Field(default_factory=dict, description="task -> samples file")
    submissions: dict[str, list[str]] = Field(default_factory=dict, description="task -> submission files")


class RunConfig(_Open):
    """``config``: the model and the run settings (secrets redacted). Keys besides these are kept."""

    model: str | None = Field(None, description="the --model given")
    model_id: str | None = Field(None, description="the resolved model id")
    model_backend: str | None = Field(None, description="'module.Class (chat|simple)'")
    model_args: str | dict[str, Any] | None = None
    batch_size: int | str | None = None
    max_batch_size: int | None = None
    device: str | None = None
    limit: int | float | None = None
    offset: int | None = None
    bootstrap_iters: int | None = None
    bootstrap_seed: int | None = None
    gen_kwargs: str | dict[str, Any] | None = None
    random_seed: int | None = None
    numpy_seed: int | None = None
    torch_seed: int | None = None
    fewshot_seed: int | None = None
    repeats: int | None = None
    predict_only: bool | None = None
    reasoning_tags: Any = None
    baseline: str | None = None
    max_tokens: int | None = None
    use_cache: str | bool | None = None
    cache_sampling: bool | None = None
    cache_requests: str | bool | None = None
    dataset_root: str | None = None
    resolved_cli_args: dict[str, Any] | None = None


class TrainingInfo(_Open):
    """The training run a checkpoint came from: set for eval-server jobs submitted with
    ``training_run`` / ``step`` / ``metadata`` (``lmms_eval.integrations``)."""

    training_run: str | None = Field(None, description="the training run's name")
    step: int | None = Field(None, description="the training step the checkpoint was saved at")
    metadata: dict[str, Any] | None = Field(None, description="free-form, small JSON object of the submitter")


class ResultsFile(_Open):
    """A whole ``{timestamp}_results.json``. Read with :meth:`load`, write with :meth:`dump`."""

    schema_version: str | None = Field(None, description=f"{SCHEMA_VERSION!r} for files of this version")
    status: Status | None = Field(None, description="starting, running, completed, ...; see docs/results.md")
    results: dict[str, TaskResults] = Field(default_factory=dict, description="per task: scores")
    groups: dict[str, TaskResults] = Field(default_factory=dict, description="per aggregating group")
    group_subtasks: dict[str, list[str]] = Field(default_factory=dict)
    configs: dict[str, dict[str, Any]] = Field(default_factory=dict, description="per task: its config")
    versions: dict[str, str | int | float | None] = Field(default_factory=dict)
    n_shot: dict[str, Any] = Field(default_factory=dict, alias="n-shot")
    higher_is_better: dict[str, dict[str, bool | None]] = Field(default_factory=dict)
    n_samples: dict[str, NSamples] = Field(default_factory=dict, alias="n-samples")
    task_hashes: dict[str, str] = Field(default_factory=dict)
    timings: dict[str, dict[str, float]] = Field(default_factory=dict)
    throughput: dict[str, Any] = Field(default_factory=dict)
    usage: Usage | None = None
    efficiency: Efficiency | None = Field(None, description="tokens per correct answer, per task and overall")
    failures: dict[str, TaskFailures] = Field(default_factory=dict)
    submissions: dict[str, list[str]] | None = Field(None, description="while running: submission files")
    cache: dict[str, Any] | None = Field(None, description="response cache summary (--use_cache)")
    request_cache: dict[str, Any] | None = Field(None, description="request cache summary")
    interrupted_task: str | None = None
    config: RunConfig | None = None
    model_name: str | None = None
    model_name_sanitized: str | None = None
    system_instruction: str | None = None
    system_instruction_sha: str | None = None
    start_time: str | float | None = None
    end_time: str | float | None = None
    date: str | float | None = None
    total_evaluation_time_seconds: float | None = None
    lmms_eval_version: str | None = None
    git_hash: str | None = None
    git_branch: str | None = None
    output_files: OutputFiles | None = None
    output_error: str | None = None
    training: TrainingInfo | None = Field(None, description="eval-server jobs of a training run: run, step")

    _loaded_version: str | None = PrivateAttr(default=SCHEMA_VERSION)

    @property
    def loaded_version(self) -> str | None:
        """The ``schema_version`` the file had when read (``None``: the published package's layout)."""
        return self._loaded_version

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "results") -> ResultsFile:
        """Validate a results dict of any version (upgraded first); errors name ``where`` and the key."""
        version = data.get("schema_version")
        try:
            model = cls.model_validate(upgrade_results(data, where))
        except ValidationError as exc:
            raise LmmsEvalError(f"{where}: not a results file: {validation_problem(exc)}") from None
        model._loaded_version = version if isinstance(version, str) else None
        return model

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> ResultsFile:
        """Read and validate a results file (any version; see :mod:`lmms_eval.results.versions`)."""
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise LmmsEvalError(f"{path}: cannot read the results JSON ({exc})") from None
        if not isinstance(data, dict):
            raise LmmsEvalError(f"{path}: not a results file (expected a JSON object)")
        return cls.from_dict(data, str(path))

    def to_dict(self) -> dict[str, Any]:
        """The keys that were given, with the published key names."""
        return self.model_dump(by_alias=True, exclude_unset=True)

    def dump(self, indent: int | None = 2) -> str:
        """The file's JSON text."""
        return dumps(self.to_dict(), indent=indent)

    def main_metric(self, task: str) -> str | None:
        """The task's main metric: the first of its config's ``metric_list``, else its first
        aggregated metric (None when it has none)."""
        listed = (self.configs.get(task) or {}).get("metric_list")
        if isinstance(listed, list) and listed and isinstance(listed[0], dict) and listed[0].get("metric"):
            return str(listed[0]["metric"])
        entry = self.results.get(task) or self.groups.get(task)
        rows = entry.metrics() if entry else []
        return rows[0].metric if rows else None

    def tasks(self) -> Iterator[tuple[str, TaskResults]]:
        """``(name, entry)`` of every task, then every group with scores."""
        yield from self.results.items()
        yield from self.groups.items()


def json_schema() -> dict[str, Any]:
    """JSON Schema of the output files: the results file and one samples line (``docs/results_schema.json``)."""
    return {
        "$comment": "generated by scripts/gen_results_schema.py from lmms_eval.results; do not edit",
        "schema_version": SCHEMA_VERSION,
        "results_file": ResultsFile.model_json_schema(by_alias=True),
        "sample_record": line_json_schema(),
    }


__all__ = [
    "STATUSES",
    "Efficiency",
    "EfficiencyEntry",
    "MetricRow",
    "NSamples",
    "OutputFiles",
    "ResultsFile",
    "RunConfig",
    "SampleRecord",
    "TaskFailures",
    "TaskResults",
    "TokenUsage",
    "TrainingInfo",
    "Usage",
    "json_schema",
    "metric_keys",
]
