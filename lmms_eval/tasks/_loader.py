"""Full loading of selected tasks and groups: include merge, ``!function`` resolution, validation."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lmms_eval.api.group import ConfigurableGroup, GroupConfig, Node
from lmms_eval.api.task_config import TaskConfig, valid_keys
from lmms_eval.errors import ConfigError, TaskNotFoundError, did_you_mean
from lmms_eval.tasks._index import Duplicate, IndexEntry, TaskIndex
from lmms_eval.tasks._yaml import load_yaml_config, resolve_functions

if TYPE_CHECKING:
    from lmms_eval.api.task import ConfigurableTask

logger = logging.getLogger(__name__)

GROUP_KEYS = set(GroupConfig.model_fields)


def merge_overrides(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``overrides`` applied; mapping values (``generation_kwargs``, ...) are merged
    one level deep, so a group setting ``temperature`` keeps a subtask's ``until``."""
    merged = dict(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


class TaskLoader:
    """Builds task and group objects for names found in a :class:`TaskIndex`."""

    def __init__(self, index: TaskIndex, model_names: Sequence[str] = ()) -> None:
        self.index = index
        self.model_names = tuple(model_names)
        self._settled: set[str] = set()  # duplicated names already announced

    # -- names ------------------------------------------------------------------------------------

    def entry(self, name: str, near: str | None = None) -> IndexEntry:
        """The index entry of ``name``; ``near`` is the file of the group that names it."""
        duplicate = self.index.duplicates.get(name)
        if duplicate is not None:
            return self._settle(duplicate, near)
        entry = self.index.get(name)
        if entry is not None:
            return entry
        for broken in self.index.broken:
            if broken.name == name:
                raise ConfigError(broken.error)
        raise TaskNotFoundError(
            f"unknown task or group '{name}'.{did_you_mean(name, self.index.entries)} "
            "Run 'lmms-eval tasks list' to see every task, or add your folder with --include_path."
        )

    def _settle(self, duplicate: Duplicate, near: str | None) -> IndexEntry:
        """The definition of a name that several files define, where their places tell which: the
        one file in the folder of the group naming it, else the one file named after it (with a
        warning); otherwise an error naming the files."""
        folder = os.path.dirname(near) if near else None
        local = [e for e in duplicate.entries if e.path and os.path.dirname(e.path) == folder]
        if len(local) == 1:
            return local[0]
        named = [e for e in duplicate.entries if e.path and Path(e.path).stem == duplicate.name]
        if len(named) == 1:
            if duplicate.name not in self._settled:
                self._settled.add(duplicate.name)
                logger.warning(
                    "task name '%s' is defined more than once (%s); using %s, the file named after it",
                    duplicate.name,
                    " and ".join(duplicate.paths),
                    named[0].path,
                )
            return named[0]
        raise ConfigError(
            f"task name '{duplicate.name}' is defined more than once: {' and '.join(duplicate.paths)}. "
            "Rename one of them."
        )

    # -- loading ----------------------------------------------------------------------------------

    def load(
        self, name: str, overrides: dict[str, Any] | None = None, _chain: tuple[tuple[str, str], ...] = ()
    ) -> Node | list[Node]:
        """A task, a group, or (for a tag) the list of its tasks.

        ``_chain`` holds the ``(group, file)`` pairs being loaded, to report a group that includes
        itself (directly or through other groups) instead of recursing forever.
        """
        entry = self.entry(name, near=_chain[-1][1] if _chain else None)
        if entry.kind == "tag":
            return [self._as_node(self.load(member, overrides, _chain)) for member in entry.tasks]
        assert entry.path is not None
        data = load_yaml_config(entry.path)
        if entry.kind == "group":
            return self._group(data, entry.path, overrides or {}, _chain)
        return self.task_from_dict(data, entry.path, overrides)

    @staticmethod
    def _as_node(loaded: Node | list[Node]) -> Node:
        if isinstance(loaded, list):
            raise ConfigError("a tag cannot contain another tag")
        return loaded

    def task_from_dict(
        self, data: dict[str, Any], source: str, overrides: dict[str, Any] | None = None
    ) -> ConfigurableTask:
        from lmms_eval.api.registry import TASK_REGISTRY
        from lmms_eval.api.task import ConfigurableTask

        merged = merge_overrides(data, overrides or {})
        merged.pop("include", None)
        resolved = resolve_functions(merged, source)
        config = TaskConfig.from_yaml_dict(resolved, source)
        if isinstance(config.class_, type):  # ``class: !function module.TaskClass``
            if not issubclass(config.class_, ConfigurableTask):
                raise ConfigError(
                    f"{source}: task '{config.task}': class {config.class_.__name__} must subclass "
                    "lmms_eval.api.task.ConfigurableTask"
                )
            # as published: the class gets the YAML mapping by keyword (``__init__(*args, config=None,
            # **kwargs)``), may adjust it, and ConfigurableTask validates what it passes on
            return config.class_(config=resolved, yaml_path=source, model_names=self.model_names)
        cls: type[ConfigurableTask] = TASK_REGISTRY.get(config.class_) if config.class_ else ConfigurableTask
        return cls(config, yaml_path=source, model_names=self.model_names)

    def _group(
        self,
        data: dict[str, Any],
        source: str,
        inherited: dict[str, Any],
        chain: tuple[tuple[str, str], ...] = (),
    ) -> ConfigurableGroup:
        group_part = {k: v for k, v in data.items() if k in GROUP_KEYS}
        pushed = {k: v for k, v in data.items() if k not in GROUP_KEYS}
        task_keys = set(valid_keys(TaskConfig))
        for key in pushed:
            if key not in task_keys:
                raise ConfigError(
                    f"{source}: group '{data.get('group')}': unknown key '{key}'."
                    f"{did_you_mean(key, task_keys | GROUP_KEYS)}"
                )
        config = GroupConfig.from_yaml_dict(resolve_functions(group_part, source), source)
        _check_cycle(config.group, source, chain)
        chain = (*chain, (config.group, source))
        overrides = merge_overrides(pushed, inherited)
        children: list[Node] = []
        for item in config.task:
            if isinstance(item, str):
                loaded = self.load(item, overrides, chain)
            else:
                loaded = self._dict_entry(item, source, overrides, chain)
            if isinstance(loaded, list):
                children.extend(loaded)
            else:
                children.append(loaded)
        return ConfigurableGroup(config, children, yaml_path=source)

    def _dict_entry(
        self,
        item: dict[str, Any],
        source: str,
        overrides: dict[str, Any],
        chain: tuple[tuple[str, str], ...] = (),
    ) -> Node | list[Node]:
        """A ``{task: name, <overrides>}`` entry, an inline group (``{group: g, task: [...]}``)
        or an inline task config."""
        if isinstance(item.get("task"), list) and "group" in item:
            return self._group(item, source, overrides, chain)
        name = item.get("task") or item.get("group")
        if not isinstance(name, str):
            raise ConfigError(f"{source}: a group's task entry needs a 'task' name, got {item!r}")
        local = {k: v for k, v in item.items() if k != "task"}
        if name in self.index.entries:
            return self.load(name, merge_overrides(overrides, local), chain)
        # an inline task defined inside the group file
        return self.task_from_dict({**item}, os.path.abspath(source), overrides)


def _check_cycle(group: str, path: str, chain: tuple[tuple[str, str], ...]) -> None:
    """Raise when ``group`` is already being loaded: ``group cycle: a -> b -> a``."""
    names = [name for name, _ in chain]
    if group not in names:
        return
    loop = chain[names.index(group) :]
    cycle = " -> ".join([*(name for name, _ in loop), group])
    files = list(dict.fromkeys(file for _, file in loop))
    raise ConfigError(
        f"group cycle: {cycle} (in {', '.join(files)}); a group cannot include itself, directly or "
        "through other groups"
    )
