"""Request and response bodies of the eval server, derived from the run settings model."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from lmms_eval.settings import EvalSettings, run_settings_model

JobStatus = Literal["queued", "running", "completed", "failed", "cancelled"]
TERMINAL: tuple[str, ...] = ("completed", "failed", "cancelled")

_RunSettings: type[BaseModel] = run_settings_model()


class EvaluateRequest(_RunSettings):  # type: ignore[misc, valid-type]
    """Every run option of ``lmms-eval eval`` (see ``lmms-eval eval --help``), plus ``num_gpus``."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(description="model id or alias (see GET /models)")
    tasks: str | list[str] = Field(description="task names: a list or a comma-separated string")
    num_gpus: int = Field(default=1, ge=0, description="GPUs the job takes (0: a CPU slot)")

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
        return self.model_dump(exclude_unset=True, exclude={"num_gpus"}) | {
            "model": self.model,
            "tasks": self.tasks,
        }

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


class QueueInfo(BaseModel):
    queued: list[str]
    running: list[str]
    counts: dict[str, int]


class MergeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    checkpoint_path: str
    output_path: str
