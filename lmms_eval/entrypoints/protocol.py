"""Request and response bodies of the eval server, derived from the run settings model."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from lmms_eval.settings import EvalSettings, run_settings_model

JobStatus = Literal["queued", "running", "completed", "failed", "cancelled"]
TERMINAL: tuple[str, ...] = ("completed", "failed", "cancelled")

_RunSettings: type[BaseModel] = run_settings_model()
# GPUs one job may ask for (a server with fewer devices refuses more with a 422 of its own)
MAX_GPUS = 1024


# what ties a job to a training run (stored with the job and in its results file, never run settings)
TRAINING_FIELDS: tuple[str, ...] = ("training_run", "step", "metadata")
MAX_RUN_NAME = 200
MAX_STEP = 10**15
MAX_METADATA_BYTES = 8192
MAX_METADATA_DEPTH = 8


def json_depth(value: Any) -> int:
    """How deeply lists and objects nest in parsed JSON (walked without recursion; 0 for a scalar)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is not None:
            deepest = max(deepest, depth + 1)
            stack.extend((child, depth + 1) for child in children)
    return deepest


class EvaluateRequest(_RunSettings):  # type: ignore[misc, valid-type]
    """Every run option of ``lmms-eval eval`` (see ``lmms-eval eval --help``), plus ``num_gpus``.

    The run options are checked field by field with the rules of the settings model (bounds of
    counts, argument strings that parse, text without NUL bytes that is UTF-8): a bad body is a 422
    that names the field, before anything is queued."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(description="model id or alias (see GET /models)")
    tasks: str | list[str] = Field(description="task names: a list or a comma-separated string")
    output_dir: str | None = Field(
        default=None,
        exclude=True,
        description="the published name of output_path (used when that is not given)",
    )
    num_gpus: int = Field(
        default=1, ge=0, le=MAX_GPUS, description=f"GPUs the job takes, 0 (a CPU slot) to {MAX_GPUS}"
    )
    training_run: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_RUN_NAME,
        pattern=r"^[^\x00-\x1f\x7f]+$",
        description="the training run the checkpoint belongs to (GET /jobs?training_run= lists its jobs)",
    )
    step: int | None = Field(
        default=None, ge=0, le=MAX_STEP, description="the training step of the checkpoint"
    )
    metadata: dict[str, Any] | None = Field(
        default=None,
        description=f"free-form JSON object stored with the job (at most {MAX_METADATA_BYTES} bytes)",
    )

    @field_validator("metadata", mode="after")
    @classmethod
    def _small_metadata(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return None
        if json_depth(value) > MAX_METADATA_DEPTH:
            raise ValueError(f"nested deeper than {MAX_METADATA_DEPTH} levels")
        size = len(json.dumps(value, ensure_ascii=False).encode())
        if size > MAX_METADATA_BYTES:
            raise ValueError(f"{size} bytes of JSON, over the limit of {MAX_METADATA_BYTES}")
        return value

    @field_validator("tasks", mode="after")
    @classmethod
    def _task_string(cls, value: str | list[str]) -> str:
        names = value.split(",") if isinstance(value, str) else value
        joined = ",".join(n.strip() for n in names if n.strip())
        if not joined:
            raise ValueError("at least one task is required")
        return joined

    def settings_keywords(self) -> dict[str, Any]:
        """The options that were given, as :meth:`EvalSettings.from_keywords` takes them."""
        given = self.model_dump(exclude_unset=True, exclude={"num_gpus", "output_dir", *TRAINING_FIELDS})
        if self.output_dir is not None and given.get("output_path") is None:
            given["output_path"] = self.output_dir
        return given | {"model": self.model, "tasks": self.tasks}

    def training(self) -> dict[str, Any] | None:
        """``training_run``, ``step`` and ``metadata`` as given (None when none was)."""
        given = self.model_dump(include=set(TRAINING_FIELDS), exclude_none=True)
        return given or None

    def to_settings(self) -> EvalSettings:
        """Validated settings (raises ConfigError with one line)."""
        return EvalSettings.from_keywords("request", **self.settings_keywords())


class Progress(BaseModel):
    """Where a running job is, as its worker last reported (about twice a second)."""

    task: str = Field(description="the task being run")
    task_number: int = Field(description="its place among the job's tasks (1-based)")
    task_count: int
    request_type: str = Field(description="generate_until, loglikelihood, ...")
    done: int = Field(description="requests of this task and type answered")
    total: int
    eta_s: float | None = Field(default=None, description="seconds left for this task's requests")
    updated_at: float | None = None


class JobInfo(BaseModel):
    job_id: str
    status: JobStatus
    created_at: float
    started_at: float | None = None
    finished_at: float | None = None
    request: dict[str, Any] = Field(default_factory=dict, description="the request, secrets redacted")
    result: dict[str, Any] | None = Field(default=None, description="the results document, once completed")
    error: str | None = Field(default=None, description="the tail of the job's log, when it failed")
    progress: Progress | None = None
    position: int | None = Field(default=None, description="place in the queue (0: next)")
    training_run: str | None = Field(default=None, description="the training run the job belongs to")
    step: int | None = Field(default=None, description="the training step of its checkpoint")
    metadata: dict[str, Any] | None = None
    executor_job_id: str | None = Field(
        default=None, description="where the job runs: its SLURM job id (--executor slurm) or process id"
    )
    # the published field names, beside ours
    position_in_queue: int | None = Field(default=None, description="the published name of `position`")
    completed_at: str | None = Field(default=None, description="`finished_at` as an ISO 8601 string (UTC)")


class JobScore(BaseModel):
    """One aggregated metric of a finished job (the results file's value, error bar and interval)."""

    task: str
    metric: str
    filter: str
    value: float | None = None
    stderr: float | None = None
    ci_lower: float | None = None
    ci_upper: float | None = None


class JobSummary(BaseModel):
    """One job of ``GET /jobs``: where it stands and, once completed, its scores."""

    job_id: str
    status: JobStatus
    created_at: float
    started_at: float | None = None
    finished_at: float | None = None
    model: str | None = None
    tasks: str | None = None
    training_run: str | None = None
    step: int | None = None
    metadata: dict[str, Any] | None = None
    error: str | None = Field(default=None, description="the last line of the log tail, when it failed")
    scores: list[JobScore] = Field(default_factory=list, description="every task's aggregated metrics")


class JobList(BaseModel):
    jobs: list[JobSummary]


class QueueInfo(BaseModel):
    queued: list[str]
    running: list[str]
    counts: dict[str, int]


class MergeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    checkpoint_path: str
    output_path: str | None = Field(
        default=None, description="the merged model's folder; default merged/<checkpoint folder name>"
    )
    checkpoint_type: Literal["regular", "ema"] = Field(
        default="regular", description="the published client's field; both kinds merge the same files here"
    )
