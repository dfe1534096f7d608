"""``GeneralConfigTracker``, the published name under which task files read a run's model name.

Published task files (``jmmmu_pro``) import it to name a sub-folder of ``--output_path`` after the
model: ``GeneralConfigTracker._get_model_name("pretrained=Qwen/Qwen2-VL-7B,dtype=bf16")`` is
``"Qwen/Qwen2-VL-7B"``. The run header itself is written by :mod:`lmms_eval.results`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from lmms_eval.errors import ModelArgsError
from lmms_eval.utils import _NAME_KEYS, hash_string, parse_arg_string, sanitize_model_name


class GeneralConfigTracker:
    """The model and prompt settings of one run, and its wall-clock span."""

    def __init__(self) -> None:
        self.start_time: float = time.perf_counter()
        self.end_time: float | None = None
        self.total_evaluation_time_seconds: str | None = None
        self.model_source: str | None = None
        self.model_name: str | None = None
        self.model_name_sanitized: str | None = None
        self.system_instruction: str | None = None
        self.system_instruction_sha: str | None = None
        self.chat_template: str | None = None
        self.chat_template_sha: str | None = None
        self.fewshot_as_multiturn: bool | None = None

    @staticmethod
    def _get_model_name(model_args: str | Mapping[str, Any]) -> str:
        """The first name-like model argument (``peft``, ``pretrained``, ``model``, ...) as given,
        or ``""`` when there is none or ``model_args`` does not parse."""
        try:
            args = parse_arg_string(model_args)
        except ModelArgsError:
            return ""
        for key in _NAME_KEYS:
            value = args.get(key)
            if value not in (None, ""):
                return str(value)
        return ""

    def log_experiment_args(
        self,
        model_source: str,
        model_args: str,
        system_instruction: str,
        chat_template: str,
        fewshot_as_multiturn: bool,
    ) -> None:
        self.model_source = model_source
        self.model_name = self._get_model_name(model_args)
        named = {"model": self.model_name} if self.model_name else {}
        self.model_name_sanitized = sanitize_model_name(model_source, named)
        self.system_instruction = system_instruction
        self.system_instruction_sha = hash_string(system_instruction) if system_instruction else None
        self.chat_template = chat_template
        self.chat_template_sha = hash_string(chat_template) if chat_template else None
        self.fewshot_as_multiturn = fewshot_as_multiturn

    def log_end_time(self) -> None:
        self.end_time = time.perf_counter()
        self.total_evaluation_time_seconds = str(self.end_time - self.start_time)


__all__ = ["GeneralConfigTracker"]
