"""``ServerArgs``: how ``lmms-eval serve`` and :func:`launch_server` run the eval server."""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

TOKEN_ENV = "LMMS_EVAL_SERVER_TOKEN"


def _home() -> Path:
    home = os.environ.get("LMMS_EVAL_HOME")
    return Path(home) if home else Path.home() / ".cache" / "lmms-eval"


class ServerArgs(BaseModel):
    """Options of the eval server. Paths default to folders under ``state_dir``."""

    model_config = ConfigDict(extra="forbid")

    host: str = Field(default="127.0.0.1", description="address to bind; beyond loopback a token is required")
    port: int = Field(default=8000, ge=0, le=65535, description="port to bind (0: any free port)")
    max_completed_jobs: int = Field(default=200, ge=0, description="finished jobs kept in the history")
    temp_dir_prefix: str = Field(default="lmms_eval_", description="prefix of each job's temporary folder")
    state_dir: str | None = Field(
        default=None, description="job database and logs (default $LMMS_EVAL_HOME/server)"
    )
    output_root: str | None = Field(default=None, description="job outputs; output_path must lie inside it")
    cache_dir: str | None = Field(default=None, description="response cache shared by jobs (resume)")
    checkpoint_root: str | None = Field(
        default=None, description="checkpoints /merge may read (default output_root)"
    )
    devices: list[str] | None = Field(
        default=None, description="GPU ids jobs share, e.g. 0,1 (none: CPU slots)"
    )
    cpu_slots: int = Field(default=1, ge=1, description="jobs that run at once without GPUs")
    token: str | None = Field(default=None, description=f"bearer token (or ${TOKEN_ENV}, or token_file)")
    token_file: str | None = Field(default=None, description="file holding the bearer token")
    max_queued: int = Field(default=1000, ge=1, description="queued jobs at most; more submissions get 429")
    max_body_bytes: int = Field(default=1_000_000, ge=1024, description="largest request body")

    @field_validator("devices", mode="before")
    @classmethod
    def _device_list(cls, value: object) -> object:
        if isinstance(value, str):
            return [d.strip() for d in value.split(",") if d.strip()] or None
        return value

    def state_path(self) -> Path:
        return Path(self.state_dir).expanduser() if self.state_dir else _home() / "server"

    def output_path(self) -> Path:
        return Path(self.output_root).expanduser() if self.output_root else self.state_path() / "outputs"

    def cache_path(self) -> Path:
        return Path(self.cache_dir).expanduser() if self.cache_dir else self.state_path() / "cache"

    def checkpoint_path(self) -> Path:
        return Path(self.checkpoint_root).expanduser() if self.checkpoint_root else self.output_path()

    def configured_token(self) -> str | None:
        """The token of the arguments, the environment or the token file (in that order)."""
        if self.token:
            return self.token
        if os.environ.get(TOKEN_ENV):
            return os.environ[TOKEN_ENV]
        if self.token_file:
            text = Path(self.token_file).expanduser().read_text(encoding="utf-8").strip()
            return text or None
        return None

    def is_loopback(self) -> bool:
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False
