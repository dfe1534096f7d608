"""The loggers a run asked for (``--wandb_args``, ``--hf_hub_log_args``), checked before the model
loads and called once the final results file is written.

A logger that fails at the end logs one error line and the run keeps its results; a bad logger
argument, or one that needs files the run will not write, stops the run before any model time is
spent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lmms_eval.errors import ConfigError

if TYPE_CHECKING:
    from lmms_eval.loggers.hf_hub import HubArgs
    from lmms_eval.settings import EvalSettings


@dataclass(frozen=True)
class RunLoggers:
    wandb_args: dict[str, Any] | None
    wandb_log_samples: bool
    log_samples_suffix: str
    hub_args: HubArgs | None

    @classmethod
    def from_settings(cls, settings: EvalSettings) -> RunLoggers:
        """The checked logger arguments; an argument error or a missing ``--output_path`` is a ConfigError."""
        wandb_args = hub_args = None
        if settings.wandb_args:
            from lmms_eval.loggers.wandb_logger import check_wandb_args

            wandb_args = check_wandb_args(settings.wandb_args)
        if settings.wandb_log_samples and not (wandb_args is not None and settings.output_path):
            raise ConfigError(
                "--wandb_log_samples needs --wandb_args and --output_path (the samples tables are read "
                "from the samples files)"
            )
        if settings.hf_hub_log_args:
            from lmms_eval.loggers.hf_hub import check_hf_hub_args

            hub_args = check_hf_hub_args(settings.hf_hub_log_args)
            if hub_args.pushes and not settings.output_path:
                raise ConfigError(
                    "--hf_hub_log_args: pushing to the Hub needs --output_path (it pushes the files)"
                )
        return cls(wandb_args, settings.wandb_log_samples, settings.log_samples_suffix, hub_args)

    @property
    def writes_samples(self) -> bool:
        """Whether a logger reads the samples files (so the run must write them)."""
        return self.wandb_log_samples or bool(self.hub_args and self.hub_args.push_samples_to_hub)

    def log(
        self, results: Mapping[str, Any], images_of: Callable[[str, int], list[Any]] | None = None
    ) -> None:
        """Send the finished run to each logger."""
        if self.wandb_args is not None:
            from lmms_eval.loggers.wandb_logger import log_to_wandb, samples_from_files

            samples = samples_from_files(results) if self.wandb_log_samples else None
            log_to_wandb(results, samples, self.wandb_args, self.log_samples_suffix, images_of)
        if self.hub_args is not None:
            from lmms_eval.loggers.hf_hub import push_results_to_hub

            push_results_to_hub(results, results.get("output_files"), self.hub_args)
