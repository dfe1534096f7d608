"""Task YAML reading: ``!function`` tags, ``include`` chains, and header-only scans for the index."""

from __future__ import annotations

import hashlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from lmms_eval.errors import ConfigError

_BaseLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

PACKAGE_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class FunctionRef:
    """An unresolved ``!function module.attr`` reference and the folder of the YAML that holds it."""

    name: str
    base_dir: str

    def __str__(self) -> str:
        return f"!function {self.name}"


@lru_cache(maxsize=256)
def _make_loader(base_dir: str) -> type:
    class _Loader(_BaseLoader):  # type: ignore[misc, valid-type]
        pass

    def construct_function(loader: Any, node: yaml.Node) -> FunctionRef:
        return FunctionRef(str(loader.construct_scalar(node)).strip(), base_dir)

    _Loader.add_constructor("!function", construct_function)
    return _Loader


def _read_mapping(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8-sig") as handle:
            data = yaml.load(handle, Loader=_make_loader(os.path.dirname(path)))
    except FileNotFoundError:
        raise ConfigError(f"{path}: file not found") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {_one_line(exc)}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path}: a task YAML must be a mapping of keys to values, got {type(data).__name__}"
        )
    return data


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


def load_yaml_config(path: str | os.PathLike[str], _chain: tuple[str, ...] = ()) -> dict[str, Any]:
    """Read a task YAML with its ``include`` chain merged (child keys win).

    ``include`` may be a path or a list of paths relative to the YAML's folder; with a list, earlier
    entries take precedence over later ones (as in the published package). ``!function`` values
    stay :class:`FunctionRef` objects; :func:`resolve_functions` turns them into callables.
    """
    path = os.path.abspath(os.fspath(path))
    if path in _chain:
        cycle = " -> ".join([*_chain, path])
        raise ConfigError(f"{path}: include cycle: {cycle}")
    data = _read_mapping(path)
    includes = data.pop("include", None)
    if includes is None:
        return data
    if isinstance(includes, str):
        includes = [includes]
    if not isinstance(includes, list) or not all(isinstance(i, str) for i in includes):
        raise ConfigError(f"{path}: 'include' must be a path or a list of paths")
    merged: dict[str, Any] = {}
    base = os.path.dirname(path)
    for include in reversed(includes):
        target = include if os.path.isabs(include) else os.path.join(base, include)
        if not os.path.exists(target):
            raise ConfigError(f"{path}: included file '{include}' does not exist (looked at {target})")
        merged.update(load_yaml_config(target, (*_chain, path)))
    merged.update(data)
    return merged


# ------------------------------------------------------------------------------------------------
# !function resolution
# ------------------------------------------------------------------------------------------------

_module_cache: dict[str, ModuleType] = {}
_module_lock = threading.RLock()
TASKS_PACKAGE = "lmms_eval.tasks"
BUILTIN_TASKS_DIR = PACKAGE_ROOT / "tasks"
# folders added with --include_path, whose sub-folders import as ``lmms_eval.tasks.<folder>``
_external_roots: list[Path] = []


def _is_ours(rel: list[str] | tuple[str, ...]) -> bool:
    """Whether ``lmms_eval.tasks.<rel...>`` is one of our own modules or folders (never shadowed)."""
    ours = BUILTIN_TASKS_DIR.joinpath(*rel)
    return rel[0] == "_task_utils" or ours.is_dir() or ours.with_suffix(".py").is_file()


class _SiblingsLoader(importlib.machinery.SourceFileLoader):
    """Runs a task file with its folder on ``sys.path`` (``from utils import x`` finds the sibling,
    as in the published package) and forgets those sibling modules afterwards, so two folders'
    ``utils`` never stand in for each other."""

    def exec_module(self, module: ModuleType) -> None:
        with _sibling_imports(Path(self.path).parent):
            super().exec_module(module)


class _EmptyPackageLoader(importlib.abc.Loader):
    """A task folder without ``__init__.py``: an empty package whose ``__path__`` is the folder."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        return None


class _OursWithTwinLoader(importlib.machinery.SourceFileLoader):
    """Loads one of our task modules that an include_path folder also has (its twin), and lets
    the names ours lacks come from the twin (see :func:`_add_twin_fallback`)."""

    def exec_module(self, module: ModuleType) -> None:
        super().exec_module(module)
        _add_twin_fallback(module)


class _TaskFolderFinder(importlib.abc.MetaPathFinder):
    """Imports ``lmms_eval.tasks.<folder>...`` from the ``--include_path`` folders.

    Our own modules always win: it answers only names that nothing of ours provides (a published
    task folder we do not bundle, or a file of such a folder that our folder of the same name lacks);
    ``_task_utils`` is ours alone. Where both have a file, ours is imported and only the names it
    lacks come from the include_path file. It sits first on ``sys.meta_path`` so that the files of
    an include_path folder all load through :class:`_SiblingsLoader`.
    """

    def find_spec(
        self, fullname: str, path: Any = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        parts = fullname.split(".")
        if len(parts) < 3 or ".".join(parts[:2]) != TASKS_PACKAGE:
            return None
        rel = parts[2:]
        if _is_ours(rel):
            ours = BUILTIN_TASKS_DIR.joinpath(*rel).with_suffix(".py")
            if not ours.is_file() or _twin(rel) is None:
                return None
            return importlib.util.spec_from_file_location(
                fullname, ours, loader=_OursWithTwinLoader(fullname, str(ours))
            )
        for root in reversed(_external_roots):  # the latest registered folders first
            spec = _spec_under(root, fullname, rel)
            if spec is not None:
                return spec
        return None


_FINDER = _TaskFolderFinder()


def _twin(rel: list[str] | tuple[str, ...]) -> Path | None:
    """The include_path file at the place of our module ``lmms_eval.tasks.<rel>`` (latest root
    first); never for ``_task_utils``, whose published names we write ourselves."""
    if rel[0] == "_task_utils":
        return None
    for root in reversed(_external_roots):
        source = root.joinpath(*rel).with_suffix(".py")
        if source.is_file():
            return source
    return None


def _add_twin_fallback(module: ModuleType) -> None:
    """Give ``module``, one of our task modules, a PEP 562 ``__getattr__`` that takes a name it
    lacks from its include_path twin (:func:`_twin`).

    A published task file importing a function that exists only in the published version of a
    benchmark we bundle (``from lmms_eval.tasks.videomme.utils import videomme_doc_to_visual``)
    gets the published function; every name ours defines stays ours. The twin is imported on the
    first such lookup, under a private name, with its own folder for sibling imports.
    """
    if "__getattr__" in vars(module):
        return
    owner = module.__name__
    rel = owner.split(".")[2:]

    def from_twin(name: str) -> Any:
        twin = _twin(rel)
        if twin is not None and not name.startswith("__"):
            value = getattr(_load_module_file(twin), name, _MISSING)
            if value is not _MISSING:
                return value
        nor = f" (nor has {twin})" if twin else ""
        raise AttributeError(f"module '{owner}' has no attribute '{name}'{nor}")

    module.__getattr__ = from_twin  # type: ignore[method-assign]


def _spec_under(root: Path, fullname: str, rel: list[str]) -> importlib.machinery.ModuleSpec | None:
    folder = root.joinpath(*rel)
    if folder.is_dir():
        init = folder / "__init__.py"
        if init.is_file():
            return importlib.util.spec_from_file_location(
                fullname,
                init,
                loader=_SiblingsLoader(fullname, str(init)),
                submodule_search_locations=[str(folder)],
            )
        spec = importlib.machinery.ModuleSpec(fullname, _EmptyPackageLoader(), is_package=True)
        spec.submodule_search_locations = [str(folder)]
        return spec
    source = folder.with_suffix(".py")
    if source.is_file():
        return importlib.util.spec_from_file_location(
            fullname, source, loader=_SiblingsLoader(fullname, str(source))
        )
    return None


def register_task_roots(roots: list[str]) -> None:
    """Let the task folders under ``roots`` import as ``lmms_eval.tasks.<folder>`` (where free)."""
    with _module_lock:
        for root in roots:
            path = Path(root).resolve()
            if path == BUILTIN_TASKS_DIR or not path.is_dir():
                continue
            if path in _external_roots:
                _external_roots.remove(path)
            _external_roots.append(path)
        if _external_roots and _FINDER not in sys.meta_path:
            sys.meta_path.insert(0, _FINDER)
        for name, module in list(sys.modules.items()):  # ours, imported before these roots came
            origin = getattr(module, "__file__", None) or ""
            ours = name.startswith(TASKS_PACKAGE + ".") and origin.startswith(str(BUILTIN_TASKS_DIR) + os.sep)
            if ours and _twin(name.split(".")[2:]) is not None:
                _add_twin_fallback(module)


@contextmanager
def _sibling_imports(folder: Path) -> Iterator[None]:
    """Put ``folder`` first on ``sys.path``; afterwards drop the top-level modules loaded from it."""
    where, before = str(folder), set(sys.modules)
    sys.path.insert(0, where)
    try:
        yield
    finally:
        if where in sys.path:
            sys.path.remove(where)
        for name in set(sys.modules) - before:
            path = getattr(sys.modules[name], "__file__", None) or ""
            if "." not in name and path.startswith(where + os.sep):
                del sys.modules[name]


def _external_name(file_path: Path) -> str | None:
    """``lmms_eval.tasks.<folder>.<file>`` for a file under an include_path folder, when importable."""
    resolved = file_path.resolve()
    for root in _external_roots:
        try:
            rel = resolved.with_suffix("").relative_to(root).parts
        except ValueError:
            continue
        if len(rel) >= 2 and all(p.isidentifier() for p in rel) and not _is_ours(rel):
            name = ".".join((TASKS_PACKAGE, *rel))
            loaded = sys.modules.get(name)
            origin = (
                getattr(loaded, "__file__", None)
                if loaded
                else getattr(_FINDER.find_spec(name), "origin", None)
            )
            if origin == str(resolved):
                return name  # else the name leads to another folder's file (nested or repeated roots)
    return None


def _module_name_for(file_path: Path) -> str:
    """Dotted name for a utils file inside this package or an include_path folder whose name is free,
    else a stable synthetic name."""
    try:
        rel = file_path.resolve().relative_to(PACKAGE_ROOT.parent)
        if rel.parts[0] == PACKAGE_ROOT.name:  # ours: named by where it lies (folders need no __init__)
            return ".".join(rel.with_suffix("").parts)
    except ValueError:
        pass
    external = _external_name(file_path)
    if external is not None:
        return external
    digest = hashlib.sha256(str(file_path.resolve()).encode()).hexdigest()[:12]
    return f"lmms_eval_external_tasks._{digest}.{file_path.stem}"


def _is_package_module(file_path: Path) -> bool:
    """Whether a regular import reaches ``file_path``: every folder above it has an ``__init__.py``."""
    try:
        rel = file_path.resolve().relative_to(PACKAGE_ROOT.parent)
    except ValueError:
        return False
    return rel.parts[0] == PACKAGE_ROOT.name and all(
        (PACKAGE_ROOT.parent / Path(*rel.parts[: i + 1]) / "__init__.py").exists()
        for i in range(len(rel.parts) - 1)
    )


def _load_module_file(file_path: Path) -> ModuleType:
    key = str(file_path.resolve())
    with _module_lock:
        if key in _module_cache:
            return _module_cache[key]
        name = _module_name_for(file_path)
        existing = sys.modules.get(name)
        if existing is not None and _same_file(getattr(existing, "__file__", None), key):
            module = existing  # imported the ordinary way first (ours, by its package path)
        elif _is_package_module(file_path):
            module = importlib.import_module(name)
        else:
            spec = importlib.util.spec_from_file_location(name, file_path, loader=_SiblingsLoader(name, key))
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot load {file_path}")
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            try:
                spec.loader.exec_module(module)
            except BaseException:
                sys.modules.pop(name, None)
                raise
            _attach_to_parent(name, module)
        _module_cache[key] = module
        return module


def _same_file(path: str | None, key: str) -> bool:
    return path is not None and str(Path(path).resolve()) == key


def _attach_to_parent(name: str, module: ModuleType) -> None:
    """Make ``import lmms_eval.tasks.<folder>.utils as m`` find a module loaded here by its package
    path: its folder imports as a namespace package and gets the module as an attribute."""
    parent_name, _, leaf = name.rpartition(".")
    if not parent_name.startswith(TASKS_PACKAGE + "."):
        return
    try:
        parent = importlib.import_module(parent_name)
    except ImportError:
        return
    if getattr(parent, leaf, None) is None:
        setattr(parent, leaf, module)


def resolve_function(ref: FunctionRef, yaml_path: str = "", any_value: bool = False) -> Any:
    """Import ``module.attr``: first ``<yaml folder>/<module>.py``, then as a module path.

    The target must be a function or class unless ``any_value`` (a value handed to
    ``datasets.load_dataset`` such as ``dataset_kwargs.features``)."""
    module_name, _, attr = ref.name.rpartition(".")
    where = yaml_path or ref.base_dir
    if not module_name or not attr:
        raise ConfigError(f"{where}: !function '{ref.name}' must look like module.function")
    candidate = Path(ref.base_dir, *module_name.split(".")).with_suffix(".py")
    if candidate.is_file():
        module = _import_task_file(candidate, ref, where)
    else:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name and module_name != exc.name and not module_name.startswith(exc.name + "."):
                raise _import_error(ref, where, module_name, exc) from None
            raise ConfigError(
                f"{where}: !function '{ref.name}': no file {candidate} and no importable module "
                f"'{module_name}' ({exc})"
            ) from None
        except Exception as exc:
            raise _import_error(ref, where, module_name, exc) from None
    try:
        fn = getattr(module, attr, _MISSING)
    except Exception as exc:  # a fallback ``__getattr__`` importing the include_path twin failed
        raise _import_error(ref, where, module_name, exc) from None
    if fn is _MISSING:
        from lmms_eval.errors import did_you_mean

        callables = [n for n in dir(module) if not n.startswith("_") and callable(getattr(module, n, None))]
        raise ConfigError(
            f"{where}: !function '{ref.name}': module '{module_name}' has no attribute '{attr}'."
            f"{did_you_mean(attr, callables)}"
        )
    if not callable(fn) and not any_value:
        raise ConfigError(
            f"{where}: !function '{ref.name}' names a value of type {type(fn).__name__}, "
            "not a function; !function must name a function or class"
        )
    return fn


_MISSING = object()


def _import_task_file(path: Path, ref: FunctionRef, where: str) -> ModuleType:
    """Import a task folder's ``utils.py`` (or other file); a failure is one line naming the file."""
    try:
        return _load_module_file(path)
    except ConfigError:
        raise
    except Exception as exc:
        raise _import_error(ref, where, str(path), exc) from None


def _import_error(ref: FunctionRef, where: str, what: str, exc: Exception) -> ConfigError:
    """``importing utils.py failed at line 3: it imports 'foo', which is not installed`` and the like."""
    line = _error_line(exc, what)
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        detail = f"it imports '{exc.name}', which is not installed; install the package that provides it"
    elif isinstance(exc, ImportError):
        detail = f"an import failed: {_one_line(exc)}"
    else:
        detail = f"{type(exc).__name__}: {_one_line(exc)}"
    return ConfigError(f"{where}: !function '{ref.name}': importing {what} failed{line}: {detail}")


def _error_line(exc: BaseException, filename: str) -> str:
    """`` at line N`` of ``filename`` in the traceback (or of a SyntaxError), else ``""``."""
    if isinstance(exc, SyntaxError) and exc.lineno:
        return f" at line {exc.lineno}"
    tb = exc.__traceback__
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return f" at line {line}" if line else ""


# keys whose contents are data for ``datasets.load_dataset``: a ``!function`` there may name any
# value (``dataset_kwargs.features: !function utils.features``, a ``datasets.Features``)
VALUE_KEYS = frozenset({"dataset_kwargs"})


def resolve_functions(value: Any, yaml_path: str = "", any_value: bool = False) -> Any:
    """Replace every :class:`FunctionRef` inside ``value`` with the function (or, under
    :data:`VALUE_KEYS`, the value) it names."""
    if isinstance(value, FunctionRef):
        return resolve_function(value, yaml_path, any_value)
    if isinstance(value, dict):
        return {k: resolve_functions(v, yaml_path, any_value or k in VALUE_KEYS) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve_functions(v, yaml_path, any_value) for v in value]
    return value


# ------------------------------------------------------------------------------------------------
# Header scan (for the index)
# ------------------------------------------------------------------------------------------------

HEADER_KEYS = ("task", "group", "tag", "include", "class", "output_type", "task_alias", "group_alias")
# a top-level key, bare or quoted (``"task": x`` is common in generated YAMLs)
_TOP_LEVEL_KEY = re.compile(r"""^(?:"([^"]+)"|'([^']+)'|([A-Za-z_][\w\-]*))\s*:""")


def scan_header(path: str) -> dict[str, Any]:
    """Parse only the top-level keys the index needs (task, group, tag, include, class, output_type).

    Reads the file as text, keeps those keys' blocks (with their indented continuation lines) and
    parses that small snippet; much cheaper than a full parse of a large config.
    """
    with open(path, encoding="utf-8-sig") as handle:  # -sig: a byte-order mark is not part of a key
        text = handle.read()
    kept: list[str] = []
    keep = False
    for line in text.splitlines():
        match = _TOP_LEVEL_KEY.match(line)
        if match:
            keep = next(g for g in match.groups() if g is not None) in HEADER_KEYS
        elif line and not line[0].isspace() and not line.startswith(("-", "#")):
            keep = False
        if keep:
            kept.append(line)
    snippet = "\n".join(kept)
    try:
        data = yaml.load(snippet, Loader=_make_loader(os.path.dirname(path))) if snippet else {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {_one_line(exc)}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a task YAML must be a mapping")
    return data
