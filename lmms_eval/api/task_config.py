"""``TaskConfig``: the validated schema of a task YAML.

Unknown keys and mistyped values are errors that name the YAML file, the key and, for unknown
keys, the closest valid key. See ``docs/task_guide.md`` for every field.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from typing_extensions import Self

from lmms_eval.errors import ConfigError, did_you_mean

OUTPUT_TYPES = (
    "loglikelihood",
    "multiple_choice",
    "generate_until",
    "generate_until_multi_round",
    "generate_until_agentic",
    "generate_visual_cot",  # needs an image-generating model; others refuse it at run time
)

Fn = Callable[..., Any]
DocField = Fn | str | int | list[Any] | dict[str, Any] | None


class MetricConfig(BaseModel):
    """One ``metric_list`` entry; extra keys are passed to the metric function as keyword arguments."""

    model_config = ConfigDict(extra="allow", arbitrary_types_allowed=True)

    metric: str | Fn
    aggregation: str | Fn | None = None
    higher_is_better: bool | None = None

    @property
    def name(self) -> str:
        return self.metric if isinstance(self.metric, str) else getattr(self.metric, "__name__", "metric")

    @property
    def kwargs(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class FilterStep(BaseModel):
    model_config = ConfigDict(extra="allow", arbitrary_types_allowed=True)

    function: str | Fn | type


class FilterConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    name: str
    filter: list[FilterStep]


class YamlConfig(BaseModel):
    """Shared parts of task and group configs: ``metadata`` and validation with one clear error."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)
    NAME_KEY: ClassVar[str] = "task"

    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("metadata", mode="before")
    @classmethod
    def _metadata_mapping(cls, value: Any) -> Any:
        # published YAMLs write ``metadata: [{version: 0.0}]``
        if value is None:
            return {}
        if isinstance(value, list):
            merged: dict[str, Any] = {}
            for item in value:
                if not isinstance(item, dict):
                    raise ValueError("metadata list entries must be mappings")
                merged.update(item)
            return merged
        return value

    @property
    def version(self) -> Any:
        return self.metadata.get("version", "Yaml")

    @classmethod
    def from_yaml_dict(cls, data: dict[str, Any], source: str) -> Self:
        """Validate ``data`` (from ``source``) and raise one clear :class:`ConfigError` if it is wrong."""
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(format_validation_error(exc, source, data.get(cls.NAME_KEY), cls)) from None


class TaskConfig(YamlConfig):
    """A task YAML after ``include`` merging and ``!function`` resolution."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, validate_assignment=False)

    # naming
    task: str
    task_alias: str | None = None
    tag: list[str] = Field(default_factory=list)
    group: str | list[str] | None = None  # deprecated spelling of tag in a task config
    group_alias: str | None = None
    class_: str | type | None = Field(default=None, alias="class")  # registry name or ``!function`` class

    # data
    dataset_path: str | None = None
    dataset_name: str | None = None
    dataset_kwargs: dict[str, Any] = Field(default_factory=dict)
    training_split: str | None = None
    validation_split: str | None = None
    test_split: str | None = None
    fewshot_split: str | None = None
    full_docs: bool = False
    process_docs: Fn | None = None
    process_results_use_image: bool = False

    # prompting
    doc_to_visual: DocField = None
    doc_to_audio: DocField = None
    doc_to_text: DocField = None
    doc_to_target: DocField = None
    doc_to_choice: DocField = None
    doc_to_messages: Fn | None = None
    use_prompt: str | None = None
    description: str = ""
    target_delimiter: str = " "
    fewshot_delimiter: str = "\n\n"
    fewshot_config: dict[str, Any] | None = None
    num_fewshot: int | None = None
    fewshot_as_multiturn: bool = False

    # scoring
    output_type: Literal[
        "loglikelihood",
        "multiple_choice",
        "generate_until",
        "generate_until_multi_round",
        "generate_until_agentic",
        "generate_visual_cot",
    ] = "generate_until"
    generation_kwargs: dict[str, Any] | None = None
    repeats: int = Field(default=1, ge=1)
    process_results: Fn | None = None
    # scores every doc of a task in one call: fn(docs, results) -> list of metric dicts (for
    # batched LLM judging); takes precedence over process_results
    process_results_batch: Fn | None = None
    metric_list: list[MetricConfig] | None = None
    filter_list: list[FilterConfig] | None = None
    should_decontaminate: bool = False
    doc_to_decontamination_query: str | Fn | None = None

    # statistics
    cluster_key: str | None = None
    score_key: str = "score"

    # model-specific
    lmms_eval_specific_kwargs: dict[str, Any] | None = None
    model_specific_prompt_kwargs: dict[str, Any] | None = None  # older name of lmms_eval_specific_kwargs
    model_specific_generation_kwargs: dict[str, Any] | None = None
    model_specific_target_kwargs: dict[str, Any] | None = None
    reasoning_tags: Any = None
    auto_strip_thinking: bool = False

    @field_validator("tag", mode="before")
    @classmethod
    def _tag_list(cls, value: Any) -> Any:
        if value is None:
            return []
        return [value] if isinstance(value, str) else value

    @model_validator(mode="after")
    def _normalise(self) -> TaskConfig:
        if self.group is not None:
            groups = [self.group] if isinstance(self.group, str) else list(self.group)
            self.tag = list(dict.fromkeys([*self.tag, *groups]))
            self.group = None
        if self.lmms_eval_specific_kwargs is None and self.model_specific_prompt_kwargs is not None:
            self.lmms_eval_specific_kwargs = self.model_specific_prompt_kwargs
        if self.output_type == "multiple_choice" and self.doc_to_choice is None:
            raise ValueError("output_type multiple_choice needs doc_to_choice")
        return self


def valid_keys(model: type[BaseModel]) -> list[str]:
    return sorted(f.alias or name for name, f in model.model_fields.items())


def format_validation_error(exc: ValidationError, source: str, name: Any, model: type[BaseModel]) -> str:
    """One line: ``file: task 'x': unknown key 'doc_to_txt'. Did you mean 'doc_to_text'?``."""
    error = exc.errors()[0]
    loc = ".".join(str(p) for p in error["loc"])
    where = f"{source}: " + (f"task '{name}': " if name else "")
    more = f" (and {len(exc.errors()) - 1} more problem(s))" if len(exc.errors()) > 1 else ""
    if error["type"] == "extra_forbidden":
        key = str(error["loc"][-1])
        hint = did_you_mean(key, valid_keys(model)) if len(error["loc"]) == 1 else ""
        return f"{where}unknown key '{loc}'.{hint}{more}"
    if error["type"] == "missing":
        return f"{where}required key '{loc}' is missing{more}"
    value = error.get("input")
    shown = repr(value) if not callable(value) else getattr(value, "__name__", "a function")
    if isinstance(shown, str) and len(shown) > 80:
        shown = shown[:77] + "..."
    message = error["msg"]
    if error["type"] == "literal_error":
        message = f"must be one of {', '.join(OUTPUT_TYPES)}" if loc == "output_type" else message
    return f"{where}key '{loc}': {message}, got {shown}{more}" if loc else f"{where}{message}{more}"
