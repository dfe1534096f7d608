"""Filters: named chains that turn raw responses into the values that get scored.

A :class:`Filter` maps ``resps`` (one list of responses per instance) and the docs those instances
belong to, to one value per instance. A :class:`FilterEnsemble` chains filters and stores its output
in ``instance.filtered_resps[name]``. Ensembles do not chain with each other.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any

from lmms_eval.api.instance import Instance
from lmms_eval.errors import ConfigError


class Filter(abc.ABC):
    """Base class of registered filters; keyword arguments come from the YAML step."""

    def __init__(self, **kwargs: Any) -> None:
        if kwargs:
            raise ConfigError(f"filter {type(self).__name__} takes no arguments, got {', '.join(kwargs)}")

    @abc.abstractmethod
    def apply(self, resps: Sequence[Any], docs: Sequence[Any]) -> list[Any]:
        """One output per instance; ``docs[i]`` is the doc of instance ``i``."""


class FilterEnsemble:
    """A named chain of filters."""

    def __init__(self, name: str, filters: list[Filter]) -> None:
        self.name = name
        self.filters = filters

    def run(self, responses: Sequence[Sequence[Any]], docs: Sequence[Any]) -> list[Any]:
        """The chain's output for each instance's responses (``docs[i]`` belongs to instance ``i``)."""
        values: list[Any] = [list(r) for r in responses]
        for step in self.filters:
            values = list(step.apply(values, docs))
            if len(values) != len(responses):
                raise RuntimeError(
                    f"filter {type(step).__name__} returned {len(values)} values for {len(responses)} instances"
                )
        return values

    def apply(
        self, instances: Sequence[Instance], docs: Sequence[Any], responses: Sequence[Any] | None = None
    ) -> None:
        """Filter ``responses`` (default: each instance's ``resps``) into ``filtered_resps[name]``."""
        values = self.run(responses if responses is not None else [i.resps for i in instances], docs)
        for instance, value in zip(instances, values):
            instance.filtered_resps[self.name] = value

    def __repr__(self) -> str:
        return f"FilterEnsemble({self.name!r}, {[type(f).__name__ for f in self.filters]})"


def build_filter_ensembles(filter_list: Sequence[Any] | None, task_name: str) -> list[FilterEnsemble]:
    """Ensembles from a task's ``filter_list`` (default: ``none`` = ``take_first``)."""
    from lmms_eval.api.registry import get_filter

    if not filter_list:
        return [FilterEnsemble("none", [get_filter("take_first")()])]
    ensembles = []
    for entry in filter_list:
        steps: list[Filter] = []
        for step in entry.filter:
            kwargs = dict(step.model_extra or {})
            function = step.function
            try:
                cls = get_filter(function) if isinstance(function, str) else function
                steps.append(cls(**kwargs))
            except LookupError as exc:
                raise ConfigError(f"task '{task_name}': filter '{entry.name}': {exc}") from None
            except TypeError as exc:
                raise ConfigError(
                    f"task '{task_name}': filter '{entry.name}' step '{function}': {exc}"
                ) from None
        ensembles.append(FilterEnsemble(entry.name, steps))
    return ensembles
