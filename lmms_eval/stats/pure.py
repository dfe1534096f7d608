"""Which aggregations the error-bar bootstrap may call again.

A bootstrap calls the aggregation once per resample. That is harmless for arithmetic, but an
aggregation that writes a submission file, calls an LLM judge or fills a cache would do so a
thousand times. So an aggregation is resampled only when it is known to be pure:

* ``built-in``: registered with :func:`~lmms_eval.api.registry.register_aggregation` by this
  package (``mean``, ``median``, ``f1``, ``bleu``...);
* ``declared``: decorated with :func:`pure_aggregation` (or given a vectorised form with
  :func:`~lmms_eval.stats.vectorised` / :func:`~lmms_eval.stats.register_batched`, which the
  bootstrap calls instead of the aggregation);
* ``arithmetic``: its source reads as plain arithmetic over the items (see
  :func:`recognised_arithmetic`).

Anything else is called exactly once, for the score; the evaluator then gives it the interval of
the mean per-document score when that is on the score's scale, else ``N/A`` with the reason.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import inspect
import logging
import textwrap
import types
from collections.abc import Callable
from typing import Any, Literal, TypeVar

from lmms_eval.api.registry import AGGREGATION_REGISTRY, path_of
from lmms_eval.stats.bootstrap import resolve_declared_batch

logger = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])
Purity = Literal["built-in", "declared", "arithmetic"]

_PURE_MARK = "__lmms_eval_pure__"
_MAX_HELPER_DEPTH = 3

_PURE_BUILTINS = frozenset(
    [
        "abs",
        "all",
        "any",
        "bool",
        "dict",
        "divmod",
        "enumerate",
        "filter",
        "float",
        "frozenset",
        "int",
        "isinstance",
        "len",
        "list",
        "map",
        "max",
        "min",
        "pow",
        "range",
        "reversed",
        "round",
        "set",
        "sorted",
        "str",
        "sum",
        "tuple",
        "zip",
    ]
)
# methods that only read their receiver: allowed on anything
_READ_METHODS = frozenset(
    [
        "get",
        "items",
        "keys",
        "values",
        "count",
        "index",
        "copy",
        "lower",
        "upper",
        "strip",
        "lstrip",
        "rstrip",
        "split",
        "join",
        "startswith",
        "endswith",
        "replace",
        "format",
        "most_common",
        "mean",
        "sum",
        "std",
        "var",
        "item",
        "tolist",
        "astype",
    ]
)
# methods that change their receiver: allowed only on names the function itself binds
_LOCAL_MUTATORS = frozenset(
    ["append", "extend", "add", "update", "setdefault", "pop", "insert", "sort", "remove", "discard", "clear"]
)
_PURE_MODULES: dict[str, frozenset[str] | None] = {  # None: every function of the module
    "math": None,
    "statistics": None,
    "operator": None,
    "re": None,
    "itertools": None,
    "collections": frozenset({"Counter", "defaultdict", "OrderedDict"}),
    "functools": frozenset({"reduce"}),
    "numpy": frozenset(
        [
            "mean",
            "average",
            "sum",
            "std",
            "var",
            "median",
            "nanmean",
            "nansum",
            "nanmedian",
            "array",
            "asarray",
            "sqrt",
            "abs",
            "clip",
            "isnan",
            "isfinite",
            "where",
            "zeros",
            "ones",
            "arange",
            "unique",
            "bincount",
            "maximum",
            "minimum",
            "percentile",
            "quantile",
            "round",
            "exp",
            "log",
            "prod",
            "cumsum",
            "argmax",
            "argmin",
            "max",
            "min",
        ]
    ),
}


def pure_aggregation(fn: F) -> F:
    """Declare an aggregation free of side effects, so the bootstrap may call it on resamples.

    Use it on aggregations that only compute (no files, no judges, no network)::

        from lmms_eval.stats import pure_aggregation

        @pure_aggregation
        def macro_accuracy(items):
            ...
    """
    try:
        setattr(fn, _PURE_MARK, True)
    except (AttributeError, TypeError):  # a builtin or a slotted callable: remember it by path
        _DECLARED.add(path_of(fn) or f"id:{id(fn)}")
    return fn


_DECLARED: set[str] = set()
_ARITHMETIC_CACHE: dict[types.CodeType, bool] = {}


def purity(fn: Callable[..., Any]) -> Purity | None:
    """Why ``fn`` may be resampled (``built-in``, ``declared``, ``arithmetic``), or ``None``."""
    if _is_builtin(fn):
        return "built-in"
    if getattr(fn, _PURE_MARK, False) or (path_of(fn) or f"id:{id(fn)}") in _DECLARED:
        return "declared"
    if resolve_declared_batch(fn) is not None:
        return "declared"
    if recognised_arithmetic(fn):
        return "arithmetic"
    return None


def _is_builtin(fn: Callable[..., Any]) -> bool:
    module = getattr(fn, "__module__", None)
    if not isinstance(module, str) or not module.startswith("lmms_eval.api."):
        return False
    return any(AGGREGATION_REGISTRY.get(name) is fn for name in AGGREGATION_REGISTRY.names())


def recognised_arithmetic(fn: Callable[..., Any]) -> bool:
    """Whether ``fn``'s source reads as side-effect-free arithmetic over its arguments.

    Accepted: expressions, loops, comprehensions, local variables, subscripts, the pure builtins
    (``sum``, ``len``, ``min``, ``sorted``...), ``math``/``statistics``/``re`` and a few ``numpy``
    and ``collections`` functions, exceptions, plain data classes and container subclasses,
    read-only methods (``get``, ``items``...), mutating methods (``append``, ``setdefault``...) on
    the function's own variables, and calls of helper functions (of any module) that pass the same
    test (three levels deep). Anything else (``open``, imports,
    ``global``, ``with``, attribute assignment, other calls) makes it unrecognised, as does
    source that cannot be read.
    """
    return _check(fn, 0)


def _check(fn: Any, depth: int) -> bool:
    code = getattr(fn, "__code__", None)
    if not isinstance(code, types.CodeType) or depth > _MAX_HELPER_DEPTH:
        return False
    if code in _ARITHMETIC_CACHE:
        return _ARITHMETIC_CACHE[code]
    _ARITHMETIC_CACHE[code] = False  # a recursive helper is not recognised
    try:
        source = textwrap.dedent(inspect.getsource(fn))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError):
        return False
    definition = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)), None)
    ok = definition is not None and _Checker(fn, definition, depth).ok()
    _ARITHMETIC_CACHE[code] = ok
    if not ok:
        logger.debug("aggregation %s is not recognised as arithmetic", path_of(fn))
    return ok


_FORBIDDEN = (
    ast.Global,
    ast.Nonlocal,
    ast.Import,
    ast.ImportFrom,
    ast.With,
    ast.AsyncWith,
    ast.Await,
    ast.Yield,
    ast.YieldFrom,
    ast.AsyncFunctionDef,
    ast.ClassDef,
)


class _Checker:
    """One function's AST against the rules of :func:`recognised_arithmetic`."""

    def __init__(self, fn: Any, definition: ast.FunctionDef, depth: int) -> None:
        self.fn, self.definition, self.depth = fn, definition, depth
        self.globals: dict[str, Any] = getattr(fn, "__globals__", {})
        self.local_names = _bound_names(definition)

    def ok(self) -> bool:
        for node in ast.walk(ast.Module(body=list(self.definition.body), type_ignores=[])):
            if isinstance(node, _FORBIDDEN):
                return False
            if isinstance(
                node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)
            ) and not self._targets_ok(node):
                return False
            if isinstance(node, ast.Call) and not self._call_ok(node):
                return False
        return True

    def _targets_ok(self, node: ast.stmt) -> bool:
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        else:
            return True
        for target in targets:
            for part in ast.walk(target):
                if isinstance(part, ast.Attribute) and isinstance(part.ctx, (ast.Store, ast.Del)):
                    return False  # obj.x = ...: changes an object the function may not own
                if not isinstance(part, ast.Subscript) or not isinstance(part.ctx, (ast.Store, ast.Del)):
                    continue
                if _root_name(part) not in self.local_names:
                    return False  # CACHE[k] = ...: a global container
        return True

    def _call_ok(self, node: ast.Call) -> bool:
        func = node.func
        if isinstance(func, ast.Name):
            return self._name_call_ok(func.id)
        if not isinstance(func, ast.Attribute):
            return False
        receiver = func.value
        if isinstance(receiver, ast.Name) and receiver.id not in self.local_names:
            module = self.globals.get(receiver.id)
            if isinstance(module, types.ModuleType):
                return self._target_ok(getattr(module, func.attr, None), module.__name__, func.attr)
        if func.attr in _READ_METHODS:
            return True
        return func.attr in _LOCAL_MUTATORS and _root_name(receiver) in self.local_names

    def _name_call_ok(self, name: str) -> bool:
        if name in self.local_names:
            return _is_local_function(self.definition, name)
        if name in self.globals:
            target = self.globals[name]
            if target is getattr(builtins, name, None):
                return _pure_builtin(name)
            return self._target_ok(target, getattr(target, "__module__", None) or "", name)
        return _pure_builtin(name)

    def _target_ok(self, target: Any, module: str, name: str) -> bool:
        """A called library function, helper function or class, found in a module's namespace."""
        if _pure_member(module, getattr(target, "__name__", name)):
            return True
        if isinstance(target, types.FunctionType):
            return purity(target) is not None or _check(target, self.depth + 1)
        return _plain_class(target)


def _pure_builtin(name: str) -> bool:
    target = getattr(builtins, name, None)
    return name in _PURE_BUILTINS or (isinstance(target, type) and issubclass(target, BaseException))


_CONTAINERS = (dict, list, tuple, set, frozenset)


def _plain_class(target: Any) -> bool:
    """A class whose construction only stores values: an exception, a dataclass without
    ``__post_init__``, or a subclass of a built-in container that keeps the container's constructor."""
    if not isinstance(target, type):
        return False
    if issubclass(target, BaseException):
        return True
    if dataclasses.is_dataclass(target):
        return not hasattr(target, "__post_init__")
    bases = [c for c in _CONTAINERS if issubclass(target, c)]
    return bool(bases) and all(
        getattr(target, hook) is getattr(bases[0], hook) for hook in ("__new__", "__init__")
    )


def _pure_member(module: str, name: str) -> bool:
    """Whether ``module.name`` is on the list of side-effect-free library functions."""
    top = module.split(".")[0].lstrip("_")  # numpy's functions live in numpy._core...; _collections
    if top not in _PURE_MODULES:
        return False
    allowed = _PURE_MODULES[top]
    return allowed is None or name in allowed


def _bound_names(definition: ast.FunctionDef) -> set[str]:
    """Parameters and every name the function assigns (its own variables)."""
    args = definition.args
    names = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    names.update(a.arg for a in (args.vararg, args.kwarg) if a is not None)
    for node in ast.walk(definition):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.Lambda)) and node is not definition:
            if isinstance(node, ast.FunctionDef):
                names.add(node.name)
            inner = node.args
            names.update(a.arg for a in (*inner.posonlyargs, *inner.args, *inner.kwonlyargs))
    return names


def _is_local_function(definition: ast.FunctionDef, name: str) -> bool:
    """Whether ``name`` is a nested ``def`` or a lambda the function assigns (walked with it)."""
    for node in ast.walk(definition):
        if isinstance(node, ast.FunctionDef) and node is not definition and node.name == name:
            return True
        if not isinstance(node, ast.Assign) or not isinstance(node.value, ast.Lambda):
            continue
        if any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return True
    return False


def _root_name(node: ast.expr) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None
