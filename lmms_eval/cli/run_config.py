"""``RunConfig``: one fully merged, validated set of ``eval`` options."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict


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
    limit: float | None = None
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
