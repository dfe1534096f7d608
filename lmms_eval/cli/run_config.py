"""``RunConfig``: one fully merged, validated set of ``eval`` options.

The value rules live in :mod:`lmms_eval.settings` (shared with :func:`simple_evaluate`); their
:class:`~lmms_eval.errors.ConfigError` is not a ``ValueError``, so pydantic lets it through unchanged
and the command line prints its one line as it is.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator

from lmms_eval import settings


class RunConfig(BaseModel):
    """A fully merged, validated set of eval options."""

    model_config = ConfigDict(extra="forbid")

    config: str | None = None
    env: dict[str, str] = {}  # the run's ``env:`` block of a --config file, exported while it runs
    model: str
    model_args: str | dict[str, Any] = ""
    tasks: str | None
    num_fewshot: int | None = None
    batch_size: int | str = 1
    max_batch_size: int | None = None
    device: str | None = None
    output_path: str | None = None
    limit: int | float | None = None
    offset: int = 0
    log_samples: bool = False
    predict_only: bool = False
    gen_kwargs: str | dict[str, Any] = ""
    system_instruction: str | None = None
    include_path: str | None = None
    dataset_root: str | None = None
    seed: list[int | None]
    repeats: int | None = None
    bootstrap_iters: int = 1000
    reasoning_tags: Any = None
    force_simple: bool = False
    trust_remote_code: bool = False
    show_config: bool = False
    write_out: bool = False
    verbosity: str = "INFO"
    max_tokens: int | None = None
    allow_failures: bool = False
    use_cache: str | None = None
    cache_sampling: bool = False
    cache_requests: Literal["true", "refresh", "delete"] | None = None
    baseline: str | None = None
    power_analysis: bool = False
    effect_size: float = 0.03
    alpha: float = 0.05
    power: float = 0.8
    correlation: float = 0.5
    std_a: float | None = None
    std_b: float | None = None

    @field_validator("limit", mode="before")
    @classmethod
    def _check_limit(cls, value: Any) -> int | float | None:
        return settings.check_limit(value)

    @field_validator("offset", mode="before")
    @classmethod
    def _check_offset(cls, value: Any) -> int:
        return settings.check_offset(value)

    @field_validator("repeats", mode="before")
    @classmethod
    def _check_repeats(cls, value: Any) -> int | None:
        return settings.check_repeats(value)

    @field_validator("bootstrap_iters", mode="before")
    @classmethod
    def _check_bootstrap_iters(cls, value: Any) -> int:
        return settings.check_bootstrap_iters(value)

    @field_validator("max_tokens", mode="before")
    @classmethod
    def _check_max_tokens(cls, value: Any) -> int | None:
        return settings.check_max_tokens(value)

    @field_validator("seed", mode="before")
    @classmethod
    def _check_seed(cls, value: Any) -> Any:
        return [settings.check_seed(v) for v in value] if isinstance(value, list) else value

    @field_validator("gen_kwargs", mode="before")
    @classmethod
    def _check_gen_kwargs(cls, value: Any) -> Any:
        """Checked here, kept as given (a ``k=v`` string stays a string in ``resolved_cli_args``)."""
        if value and isinstance(value, (str, dict)):
            settings.check_gen_kwargs(value)
        return value
