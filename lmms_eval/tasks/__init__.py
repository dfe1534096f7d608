"""``TaskManager``: find tasks by name (lazily, from a cached header index) and load them."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from lmms_eval.errors import ConfigError, TaskNotFoundError, did_you_mean
from lmms_eval.tasks._index import IndexEntry, TaskIndex
from lmms_eval.tasks._yaml import register_task_roots
from lmms_eval.utils import pattern_match

if TYPE_CHECKING:  # the loader (and pydantic) are imported only when tasks are loaded
    from lmms_eval.api.group import Node
    from lmms_eval.tasks._loader import TaskLoader

logger = logging.getLogger(__name__)

TASKS_DIR = os.path.dirname(os.path.abspath(__file__))


def _plugin_task_dirs() -> list[str]:
    """``<pkg>.tasks`` folders of packages named in ``LMMS_EVAL_PLUGINS`` (deprecated)."""
    import importlib.util

    dirs = []
    for package in filter(None, (p.strip() for p in os.environ.get("LMMS_EVAL_PLUGINS", "").split(","))):
        spec = importlib.util.find_spec(package)
        if spec and spec.submodule_search_locations:
            for location in spec.submodule_search_locations:
                candidate = os.path.join(location, "tasks")
                if os.path.isdir(candidate):
                    dirs.append(candidate)
    return dirs


class TaskManager:
    """Index of the built-in tasks plus ``include_path`` folders; loads only what is selected."""

    def __init__(
        self,
        verbosity: str | None = None,
        include_path: str | Sequence[str] | None = None,
        include_defaults: bool = True,
        model_name: str | None = None,
        use_cache: bool = True,
    ) -> None:
        if verbosity:
            logger.setLevel(verbosity.upper())
        paths = [include_path] if isinstance(include_path, str) else list(include_path or [])
        roots = ([TASKS_DIR] if include_defaults else []) + _plugin_task_dirs()
        for path in paths:
            for part in str(path).split(","):
                if part.strip():
                    roots.append(os.path.abspath(os.path.expanduser(part.strip())))
        self.include_path = paths
        roots = list(dict.fromkeys(roots))
        register_task_roots(roots)  # their folders import as lmms_eval.tasks.<folder> where free
        self.index = TaskIndex(roots, use_cache=use_cache)
        self.model_name = model_name
        self._model_names: tuple[str, ...] = (model_name,) if model_name else ()
        self._task_loader: TaskLoader | None = None

    @property
    def _loader(self) -> TaskLoader:
        if self._task_loader is None:
            from lmms_eval.tasks._loader import TaskLoader

            self._task_loader = TaskLoader(self.index, self._model_names)
        return self._task_loader

    # -- listing ----------------------------------------------------------------------------------

    @property
    def all_tasks(self) -> list[str]:
        """Every task, group and tag name."""
        return self.index.names()

    @property
    def all_subtasks(self) -> list[str]:
        return self.index.names("task") + self.index.names("python_task")

    @property
    def all_groups(self) -> list[str]:
        return self.index.names("group")

    @property
    def all_tags(self) -> list[str]:
        return self.index.names("tag")

    @property
    def task_index(self) -> dict[str, dict[str, Any]]:
        """``{name: entry}`` with the published keys (``type``, ``yaml_path``, ``task``) and ours."""
        return {name: _published_entry(entry) for name, entry in self.index.entries.items()}

    def set_model_names(self, *names: str | None) -> None:
        self._model_names = tuple(n for n in names if n)
        if self._task_loader is not None:
            self._task_loader.model_names = self._model_names

    # -- selection --------------------------------------------------------------------------------

    def match_tasks(self, names: Iterable[str]) -> list[str]:
        """Expand fnmatch patterns (``mmmu_*``) against known names; exact names pass through."""
        out: list[str] = []
        for name in names:
            if any(ch in name for ch in "*?["):
                matched = pattern_match([name], self.index.entries)
                if not matched:
                    raise TaskNotFoundError(f"no task matches the pattern '{name}'")
                out.extend(matched)
            else:
                out.append(name)
        return list(dict.fromkeys(out))

    def load_task_or_group(self, task_list: str | Sequence[str]) -> dict[str, Node]:
        """Load tasks, groups, tags, YAML files or folders of YAML files by name.

        Returns ``{name: task or group}`` in the requested order; a tag expands into its tasks.
        """
        from lmms_eval.api.group import ConfigurableGroup

        names = [task_list] if isinstance(task_list, str) else list(task_list)
        loaded: dict[str, Node] = {}
        for name in self.match_tasks(names):
            for node in self._load_one(name):
                key = node.group_name if isinstance(node, ConfigurableGroup) else node.task_name
                loaded[key] = node
        _check_duplicates(loaded)
        return loaded

    def _load_one(self, name: str) -> list[Node]:
        if name.endswith((".yaml", ".yml")) and os.path.isfile(name):
            self._ensure_root(os.path.dirname(os.path.abspath(name)))
            return [self._from_file(name)]
        if os.path.isdir(name) and name not in self.index.entries:  # a known task name wins
            files = sorted(os.path.join(name, f) for f in os.listdir(name) if f.endswith((".yaml", ".yml")))
            if not files:
                raise TaskNotFoundError(
                    f"--tasks {name}: is a folder with no task files (*.yaml, *.yml) in it, and no task, "
                    f"group or tag has that name.{did_you_mean(name, self.index.entries)}"
                )
            self._ensure_root(os.path.abspath(name))
            return _without_group_members([self._from_file(f) for f in files])
        loaded = self._loader.load(name)
        return loaded if isinstance(loaded, list) else [loaded]

    def _ensure_root(self, folder: str) -> None:
        """Index ``folder`` too (once), so a group file given by path finds its members by name."""
        if any(folder == root or folder.startswith(root + os.sep) for root in self.index.roots):
            return
        register_task_roots([folder])
        self.index = TaskIndex([*self.index.roots, folder])
        self._task_loader = None

    def _from_file(self, path: str) -> Node:
        from lmms_eval.tasks._yaml import load_yaml_config

        path = os.path.abspath(path)
        data = load_yaml_config(path)
        if isinstance(data.get("task"), list):
            return self._loader._group(data, path, {})
        if "task" not in data:
            raise ConfigError(f"{path}: not a task config (no 'task' key)")
        return self._loader.task_from_dict(data, path)

    def get_config(self, name: str) -> dict[str, Any]:
        """The merged (include-resolved, functions unresolved) YAML of a task or group."""
        from lmms_eval.tasks._yaml import load_yaml_config

        entry = self._loader.entry(name)
        if entry.path is None:
            return {"tag": name, "task": entry.tasks}
        return load_yaml_config(entry.path)


def _published_entry(entry: IndexEntry) -> dict[str, Any]:
    """An index entry as the published ``task_index`` shows it: ``yaml_path`` is ``-1`` for a tag,
    ``task`` is ``-1`` for a group (members load lazily), the member list for a tag, the name for a task."""
    task: Any = {"group": -1, "tag": list(entry.tasks)}.get(entry.kind, entry.name)
    yaml_path: Any = entry.path if entry.path is not None else -1
    return {**entry.__dict__, "type": entry.kind, "yaml_path": yaml_path, "task": task}


def _without_group_members(nodes: list[Node]) -> list[Node]:
    """Drop tasks that a group among ``nodes`` already contains (a folder holding a group and its tasks)."""
    from lmms_eval.api.group import ConfigurableGroup

    members = {
        leaf.task_name for node in nodes if isinstance(node, ConfigurableGroup) for leaf in node.leaves()
    }
    return [n for n in nodes if isinstance(n, ConfigurableGroup) or n.task_name not in members]


def _check_duplicates(loaded: dict[str, Node]) -> None:
    from lmms_eval.api.group import ConfigurableGroup

    owner: dict[str, str] = {}
    for key, node in loaded.items():
        leaves = list(node.leaves()) if isinstance(node, ConfigurableGroup) else [node]
        for leaf in leaves:
            previous = owner.get(leaf.task_name)
            if previous is not None and previous != key:
                raise ConfigError(
                    f"task '{leaf.task_name}' is selected twice (through '{previous}' and '{key}'); "
                    "request it once so its scores are not counted twice"
                )
            owner[leaf.task_name] = key


def get_task_dict(
    task_name_list: str | Sequence[str], task_manager: TaskManager | None = None
) -> dict[str, Node]:
    """Load tasks by name with a (new) :class:`TaskManager`."""
    return (task_manager or TaskManager()).load_task_or_group(task_name_list)


__all__ = ["TaskManager", "get_task_dict"]
