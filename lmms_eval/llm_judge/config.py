"""``ServerConfig``: the settings shared by every judge provider."""

from __future__ import annotations

import os
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

DEFAULT_JUDGE_MODEL = "gpt-4o-2024-11-20"
# published spellings of our settings (lmms_eval.llm_judge.protocol.ServerConfig of the published package)
PUBLISHED_ALIASES = {
    "num_retries": "max_retries",
    "retry_delay": "retry_backoff_s",
    "max_concurrent": "num_concurrent",
}


def _default_model_name() -> str:
    return os.environ.get("MODEL_VERSION") or DEFAULT_JUDGE_MODEL


class ServerConfig(BaseModel):
    """How a judge is called.

    ``model_name`` defaults to env ``MODEL_VERSION``, else :data:`DEFAULT_JUDGE_MODEL`.
    ``base_url`` / ``api_key`` left unset are resolved by the HTTP client (``OPENAI_API_BASE`` /
    ``OPENAI_API_KEY``). ``num_concurrent`` bounds the calls in flight in the batch methods.
    Replies are cached in memory, and in the SQLite file (or, with a ``.jsonl`` suffix, the JSONL
    file) at ``cache_path`` when it is set; ``use_cache=False`` turns both off.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, protected_namespaces=())

    model_name: str = Field(default_factory=_default_model_name, min_length=1)
    base_url: str | None = None
    api_key: str | None = Field(default=None, repr=False)
    temperature: float = Field(default=0.0, ge=0.0)
    top_p: float | None = Field(default=None, gt=0.0, le=1.0)
    max_tokens: int = Field(default=1024, gt=0)
    timeout: float = Field(default=60.0, gt=0.0)
    max_retries: int = Field(default=5, ge=0)
    retry_backoff_s: float = Field(default=1.0, ge=0.0)
    num_concurrent: int = Field(default=16, ge=1)
    system_prompt: str | None = None
    cache_path: str | None = None
    use_cache: bool = True
    # accepted for tasks written for the published package; the evaluate_* methods take these per call
    response_format: str | None = None
    judge_type: str = "general"
    output_format: str | None = None
    score_range: tuple[float, float] | None = None
    evaluation_criteria: dict[str, Any] | None = None

    # published spellings of max_retries / retry_backoff_s / num_concurrent; always equal to those
    num_retries: int | None = Field(default=None, ge=0)
    retry_delay: float | None = Field(default=None, ge=0.0)
    max_concurrent: int | None = Field(default=None, ge=1)

    @model_validator(mode="before")
    @classmethod
    def _published_names(cls, data: Any) -> Any:
        """``num_retries`` / ``retry_delay`` / ``max_concurrent`` (published) set our fields."""
        if isinstance(data, dict):
            data = dict(data)
            for old, new in PUBLISHED_ALIASES.items():
                if data.get(old) is not None:
                    data.setdefault(new, data[old])
        return data

    @model_validator(mode="after")
    def _mirror_published_names(self) -> ServerConfig:
        for old, new in PUBLISHED_ALIASES.items():
            object.__setattr__(self, old, getattr(self, new))  # frozen model: set once, here
        return self


__all__ = ["DEFAULT_JUDGE_MODEL", "ServerConfig"]
