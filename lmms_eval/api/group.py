"""Task groups: a named list of tasks (or groups) with an optional aggregate score."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, ClassVar, Union

from pydantic import BaseModel, ConfigDict, field_validator

from lmms_eval.api.task_config import YamlConfig

if TYPE_CHECKING:
    from lmms_eval.api.task import ConfigurableTask


class AggMetricConfig(BaseModel):
    """One ``aggregate_metric_list`` entry of a group."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    metric: str
    aggregation: str | Callable[..., Any] = "mean"
    weight_by_size: bool = False
    filter_list: str | list[str] = "none"

    @field_validator("aggregation")
    @classmethod
    def _mean_only(cls, value: Any) -> Any:
        if isinstance(value, str) and value != "mean":
            raise ValueError("group aggregation must be 'mean' or a !function")
        return value

    @property
    def filters(self) -> list[str]:
        return [self.filter_list] if isinstance(self.filter_list, str) else list(self.filter_list)


class GroupConfig(YamlConfig):
    """A group YAML: a named list of tasks, groups, tags or inline task configs."""

    NAME_KEY: ClassVar[str] = "group"

    group: str
    group_alias: str | None = None
    task: list[str | dict[str, Any]]
    aggregate_metric_list: list[AggMetricConfig] | None = None

    @field_validator("aggregate_metric_list", mode="before")
    @classmethod
    def _listify(cls, value: Any) -> Any:
        return [value] if isinstance(value, dict) else value


Node = Union["ConfigurableGroup", "ConfigurableTask"]


class ConfigurableGroup:
    """A loaded group and its children, in YAML order."""

    def __init__(self, config: GroupConfig, children: list[Node], yaml_path: str | None = None) -> None:
        self.config = config
        self.children = children
        self.yaml_path = yaml_path

    @property
    def group_name(self) -> str:
        return self.config.group

    @property
    def alias(self) -> str:
        return self.config.group_alias or self.config.group

    @property
    def VERSION(self) -> Any:
        return self.config.version

    def leaves(self) -> Iterator[ConfigurableTask]:
        for child in self.children:
            if isinstance(child, ConfigurableGroup):
                yield from child.leaves()
            else:
                yield child

    def __repr__(self) -> str:
        return f"ConfigurableGroup({self.group_name!r}, {len(self.children)} children)"
