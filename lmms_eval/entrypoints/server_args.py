"""``ServerArgs``: how ``lmms-eval serve`` and :func:`launch_server` run the eval server."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from lmms_eval.errors import ConfigError
from lmms_eval.http_guard import check_token, parse_hosts
from lmms_eval.utils import is_loopback_host

TOKEN_ENV = "LMMS_EVAL_SERVER_TOKEN"

# SLURM's time formats: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S (or UNLIMITED)
_SLURM_TIME = re.compile(r"\d+(:\d{1,2}){0,2}|\d+-\d{1,2}(:\d{1,2}){0,2}|UNLIMITED|INFINITE")
_SLURM_NAME = re.compile(r"[A-Za-z0-9_.,:+@%-]{1,200}")
# sbatch options the server sets itself (its log, name, requeue, resources): never in --slurm_extra
SERVER_SBATCH_OPTIONS = frozenset(
    [
        "--output",
        "-o",
        "--error",
        "-e",
        "--input",
        "-i",
        "--job-name",
        "-J",
        "--open-mode",
        "--parsable",
        "--wrap",
        "--requeue",
        "--no-requeue",
        "--chdir",
        "-D",
        "--export",
        "--export-file",
        "--partition",
        "-p",
        "--account",
        "-A",
        "--qos",
        "-q",
        "--time",
        "-t",
        "--gres",
        "--gpus",
        "-G",
        "--gpus-per-node",
        "--gpus-per-task",
        "--ntasks",
        "-n",
        "--ntasks-per-node",
        "--nodes",
        "-N",
        "--array",
        "-a",
        "--wait",
        "-W",
        "--test-only",
        "--kill-on-invalid-dep",
    ]
)


def sbatch_extra(value: str | None) -> list[str]:
    """``--slurm_extra`` as sbatch arguments (shell words); ValueError for one the server sets."""
    if not value:
        return []
    if any(c in value for c in "\n\r\x00"):
        raise ValueError("must be one line (no newline)")
    try:
        words = shlex.split(value)
    except ValueError as exc:
        raise ValueError(f"cannot be split into shell words ({exc})") from None
    if words and not words[0].startswith("-"):
        raise ValueError(f"{words[0]!r} is not an sbatch option (options start with -)")
    for word in words:
        name = word.split("=", 1)[0] if word.startswith("--") else word[:2]
        if word.startswith("-") and name in SERVER_SBATCH_OPTIONS:
            raise ValueError(f"{name} is set by the server (use its own flag, or leave it to the server)")
    return words


def _home() -> Path:
    home = os.environ.get("LMMS_EVAL_HOME")
    return Path(home) if home else Path.home() / ".cache" / "lmms-eval"


def _folder(value: str | None) -> Path | None:
    return Path(value).expanduser().absolute() if value else None


class ServerArgs(BaseModel):
    """Options of the eval server. Paths default to folders under ``state_dir``."""

    # hide_input_in_errors: a refused token is never shown in a validation error
    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    host: str = Field(default="127.0.0.1", description="address to bind; beyond loopback a token is required")
    allowed_hosts: list[str] = Field(
        default=[],
        description="host names clients use besides loopback and --host, e.g. gpu-box,gpu-box.lan "
        "(requests naming any other Host get 400)",
    )
    port: int = Field(default=8000, ge=0, le=65535, description="port to bind (0: any free port)")
    max_completed_jobs: int = Field(default=200, ge=0, description="finished jobs kept in the history")
    temp_dir_prefix: str = Field(default="lmms_eval_", description="prefix of each job's temporary folder")
    state_dir: str | None = Field(
        default=None, description="job database and logs (default $LMMS_EVAL_HOME/server)"
    )
    output_root: str | None = Field(default=None, description="job outputs; output_path must lie inside it")
    cache_dir: str | None = Field(default=None, description="response cache shared by jobs (resume)")
    checkpoint_root: str | None = Field(
        default=None, description="checkpoints that jobs load and /merge reads (default output_root)"
    )
    data_root: str | None = Field(
        default=None,
        description="task folders (include_path), local datasets (dataset_root) and chat templates "
        "requests may name (default state_dir/data)",
    )
    devices: list[str] | None = Field(
        default=None, description="GPU ids jobs share, e.g. 0,1 (none: CPU slots)"
    )
    cpu_slots: int = Field(default=1, ge=1, description="jobs that run at once without GPUs")
    job_nice: int = Field(
        default=10,
        ge=0,
        le=19,
        description="CPU niceness of job processes, so the server answers while they run",
    )
    token: str | None = Field(default=None, description=f"bearer token (or ${TOKEN_ENV}, or token_file)")
    token_file: str | None = Field(default=None, description="file holding the bearer token")
    max_queued: int = Field(default=1000, ge=1, description="queued jobs at most; more submissions get 429")
    max_body_bytes: int = Field(default=1_000_000, ge=1024, description="largest request body")

    executor: Literal["local", "slurm"] = Field(
        default="local", description="where jobs run: local (processes here) or slurm (sbatch)"
    )
    shared_dir: str | None = Field(
        default=None,
        description="folder of job files, logs and progress that the SLURM nodes see (default state_dir)",
    )
    slurm_partition: str | None = Field(default=None, description="SLURM partition of the jobs (sbatch -p)")
    slurm_account: str | None = Field(default=None, description="SLURM account charged (sbatch -A)")
    slurm_qos: str | None = Field(default=None, description="SLURM quality of service (sbatch -q)")
    slurm_time: str | None = Field(
        default=None, description="SLURM time limit of each job, e.g. 90, 4:00:00 or 1-12:00 (sbatch -t)"
    )
    slurm_gpus_per_node: int = Field(
        default=8,
        ge=0,
        le=1024,
        description="GPUs of each SLURM node; a job's num_gpus is asked as --gres=gpu:N on "
        "ceil(num_gpus/this) nodes (0: CPU-only nodes, num_gpus ignored)",
    )
    slurm_extra: str | None = Field(
        default=None,
        description="more sbatch options, e.g. '--mem=64G --constraint=a100' (not those the server sets)",
    )

    @field_validator("executor")
    @classmethod
    def _executor_resources(cls, value: str, info: ValidationInfo) -> str:
        if value == "slurm" and info.data.get("devices"):
            raise ValueError("--devices is for --executor local (SLURM places the jobs)")
        return value

    @field_validator(
        "slurm_partition", "slurm_account", "slurm_qos", "slurm_time", "slurm_extra", mode="before"
    )
    @classmethod
    def _needs_slurm(cls, value: object, info: ValidationInfo) -> object:
        if value is not None and info.data.get("executor") != "slurm":
            raise ValueError("is for --executor slurm")
        return value

    @field_validator("slurm_partition", "slurm_account", "slurm_qos")
    @classmethod
    def _slurm_name(cls, value: str | None) -> str | None:
        if value is not None and not _SLURM_NAME.fullmatch(value):
            raise ValueError("letters, digits and _ . , : + @ % - only (at most 200)")
        return value

    @field_validator("slurm_time")
    @classmethod
    def _slurm_time(cls, value: str | None) -> str | None:
        if value is not None and not _SLURM_TIME.fullmatch(value):
            raise ValueError(
                "not a SLURM time: minutes, M:S, H:M:S, D-H, D-H:M or D-H:M:S (e.g. 90, 4:00:00, 1-12:00)"
            )
        return value

    @field_validator("slurm_extra")
    @classmethod
    def _slurm_extra(cls, value: str | None) -> str | None:
        sbatch_extra(value)
        return value

    @field_validator("allowed_hosts", mode="before")
    @classmethod
    def _host_list(cls, value: object) -> list[str]:
        return parse_hosts(value)

    @field_validator("token")
    @classmethod
    def _strong_token(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                check_token(value, "token")
            except ConfigError as exc:
                raise ValueError(str(exc).removeprefix("token: ")) from None
        return value

    @field_validator("devices", mode="before")
    @classmethod
    def _device_list(cls, value: object) -> object:
        if isinstance(value, str):
            return [d.strip() for d in value.split(",") if d.strip()] or None
        return value

    # Folders are absolute: jobs run in their own temporary working directory.
    def state_path(self) -> Path:
        return _folder(self.state_dir) or _home().absolute() / "server"

    def output_path(self) -> Path:
        return _folder(self.output_root) or self.state_path() / "outputs"

    def cache_path(self) -> Path:
        return _folder(self.cache_dir) or self.state_path() / "cache"

    def shared_path(self) -> Path:
        """Job files, logs and progress: seen by the server and by the nodes that run the jobs."""
        return _folder(self.shared_dir) or self.state_path()

    def checkpoint_path(self) -> Path:
        return _folder(self.checkpoint_root) or self.output_path()

    def data_path(self) -> Path:
        return _folder(self.data_root) or self.state_path() / "data"

    def configured_token(self) -> str | None:
        """The token of the arguments, the environment or the token file (in that order); one that
        is blank or shorter than 16 characters is a :class:`ConfigError`."""
        if self.token is not None:
            return check_token(self.token, "--token")
        if TOKEN_ENV in os.environ:
            return check_token(os.environ[TOKEN_ENV], f"${TOKEN_ENV}")
        if self.token_file:
            path = Path(self.token_file).expanduser()
            try:
                text = path.read_text(encoding="utf-8").strip()
            except (OSError, UnicodeDecodeError) as exc:
                raise ConfigError(f"--token_file {path}: unreadable ({type(exc).__name__})") from None
            return check_token(text, f"--token_file {path}")
        return None

    def is_loopback(self) -> bool:
        return is_loopback_host(self.host)
