"""``ServerArgs``: how ``lmms-eval serve`` and :func:`launch_server` run the eval server."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from lmms_eval.errors import ConfigError
from lmms_eval.http_guard import check_token, parse_hosts
from lmms_eval.utils import is_loopback_host

TOKEN_ENV = "LMMS_EVAL_SERVER_TOKEN"


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
