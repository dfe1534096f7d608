"""The ``doc_to_*`` resolution rules: field names, Jinja templates, lists and callables."""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from lmms_eval.errors import ConfigError
from lmms_eval.media.parts import content_part


@lru_cache(maxsize=1)
def _environment() -> Any:
    """The sandboxed Jinja environment of task templates: no access to private attributes,
    ``__class__`` and the like, and no mutation of the doc (``ImmutableSandboxedEnvironment``)."""
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.filters["regex_replace"] = lambda s, find, replace: re.sub(find, replace, s)
    return env


@lru_cache(maxsize=512)
def _template(source: str) -> Any:
    return _environment().from_string(source)


def compile_template(source: str, task: str, key: str) -> None:
    """Compile ``source`` (cached); a syntax error is a :class:`ConfigError` naming the task and key."""
    import jinja2

    try:
        _template(source)
    except jinja2.TemplateError as exc:
        raise ConfigError(f"task '{task}': {key} template {source!r} is invalid: {_one_line(exc)}") from None


_FIELD = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
# names a template can see besides the doc's fields
_JINJA_NAMES = frozenset(
    {"range", "dict", "lipsum", "cycler", "joiner", "namespace", "true", "false", "none"}
)
_PLAIN_TYPES = (str, int, float, bool)


@lru_cache(maxsize=512)
def _plain_fields(source: str) -> tuple[list[str], list[str]] | None:
    """``(texts, fields)`` of a template that only substitutes fields (``Q: {{ question }}``), with
    ``len(texts) == len(fields) + 1``; ``None`` for any other template (filters, tags, comments,
    whitespace control, carriage returns: Jinja renders those)."""
    parts = _FIELD.split(source)
    texts, fields = parts[0::2], parts[1::2]
    if any("{{" in t or "{%" in t or "{#" in t or "\r" in t for t in texts):
        return None
    if any(name in _JINJA_NAMES for name in fields):
        return None
    return texts, fields


def _render_plain(plain: tuple[list[str], list[str]], doc: Any) -> str | None:
    """What Jinja renders for a field-only template (``str`` of each value), or ``None`` when a
    field is missing or a value is not a plain scalar (Jinja then renders it, or names the error)."""
    texts, fields = plain
    out = [texts[0]]
    try:
        for name, text in zip(fields, texts[1:]):
            value = doc[name]
            if type(value) not in _PLAIN_TYPES:
                return None
            out.append(str(value))
            out.append(text)
    except (KeyError, TypeError, IndexError):
        return None
    return "".join(out)


def render_template(source: str, doc: Any, task: str, key: str) -> str:
    plain = _plain_fields(source)
    if plain is not None:
        rendered = _render_plain(plain, doc)
        if rendered is not None:
            return rendered
    import jinja2
    from jinja2.exceptions import SecurityError

    try:
        return _template(source).render(**doc)
    except SecurityError as exc:
        raise ConfigError(
            f"task '{task}': {key} template {source!r} is not allowed: {_one_line(exc)} "
            "(templates run sandboxed; use a !function for anything beyond fields and filters)"
        ) from None
    except jinja2.UndefinedError as exc:
        raise ConfigError(
            f"task '{task}': {key} template {source!r}: {exc.message} (doc fields: {', '.join(doc)})"
        ) from None
    except jinja2.TemplateError as exc:
        raise ConfigError(f"task '{task}': {key} template {source!r} is invalid: {_one_line(exc)}") from None


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


@lru_cache(maxsize=1024)
def _call_style(fn: Callable[..., Any]) -> tuple[bool, bool]:
    """(accepts lmms_eval_specific_kwargs by keyword, accepts a second positional argument)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False, True
    by_keyword = any(p.name == "lmms_eval_specific_kwargs" or p.kind is p.VAR_KEYWORD for p in params)
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    second = len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in params)
    return by_keyword, second


def call_with_kwargs(
    fn: Callable[..., Any], doc: Any, kwargs: Any, name: str = "lmms_eval_specific_kwargs"
) -> Any:
    """Call ``fn(doc)``, passing ``kwargs`` too when given and the function accepts it."""
    if kwargs is None:
        return fn(doc)
    by_keyword, second = _call_style(fn)
    if by_keyword and name == "lmms_eval_specific_kwargs":
        return fn(doc, lmms_eval_specific_kwargs=kwargs)
    if second:
        return fn(doc, kwargs)
    return fn(doc)


class BoundDocFunction:
    """A task callable with its model-specific kwargs bound; models call it as ``fn(doc, **extra)``."""

    __slots__ = ("fn", "kwargs", "postprocess")

    def __init__(
        self,
        fn: Callable[..., Any],
        kwargs: Any = None,
        postprocess: Callable[[Any], Any] | None = None,
    ) -> None:
        self.fn = fn
        self.kwargs = kwargs
        self.postprocess = postprocess

    def __call__(self, doc: Any, *args: Any, **extra: Any) -> Any:
        if args or extra:
            if self.kwargs is not None and _call_style(self.fn)[0]:
                extra.setdefault("lmms_eval_specific_kwargs", self.kwargs)
            value = self.fn(doc, *args, **extra)
        else:
            value = call_with_kwargs(self.fn, doc, self.kwargs)
        return self.postprocess(value) if self.postprocess else value

    def __repr__(self) -> str:
        return f"<bound {getattr(self.fn, '__qualname__', self.fn)!r}>"


def resolve_text(spec: Any, doc: Any, kwargs: Any, task: str, key: str) -> Any:
    """``doc_to_text`` / ``doc_to_target`` value for one doc."""
    if spec is None:
        return None
    if callable(spec):
        return call_with_kwargs(spec, doc, kwargs)
    if isinstance(spec, (int, float, list)):
        return spec
    if isinstance(spec, str):
        if spec in doc:
            return doc[spec]
        rendered = render_template(spec, doc, task, key)
        stripped = rendered.strip()
        if key in ("doc_to_target", "doc_to_choice") and stripped.startswith("[") and stripped.endswith("]"):
            try:
                return ast.literal_eval(stripped)
            except (ValueError, SyntaxError):
                return rendered
        return rendered
    raise ConfigError(
        f"task '{task}': {key} must be a field name, a template, a list or a !function, got {spec!r}"
    )


def resolve_choices(spec: Any, doc: Any, task: str) -> list[str]:
    if callable(spec):
        value = spec(doc)
    elif isinstance(spec, dict):
        value = list(spec.values())
    elif isinstance(spec, list):
        value = spec
    elif isinstance(spec, str):
        value = doc[spec] if spec in doc else resolve_text(spec, doc, None, task, "doc_to_choice")
    else:
        raise ConfigError(
            f"task '{task}': doc_to_choice must be a field, template, list, mapping or !function"
        )
    if isinstance(value, dict):
        value = list(value.values())
    if not isinstance(value, Sequence) or isinstance(value, str):
        raise ConfigError(f"task '{task}': doc_to_choice must give a list of choices, got {value!r}")
    return [str(v) for v in value]


def resolve_visual(spec: Any, doc: Any, kwargs: Any, task: str) -> list[Any]:
    """``doc_to_visual``: a field name gives ``[doc[field]]``; a callable gets the kwargs if it takes 2 args."""
    if spec is None:
        return []
    if isinstance(spec, str):
        if spec not in doc:
            raise ConfigError(
                f"task '{task}': doc_to_visual field '{spec}' is not in the dataset (fields: {', '.join(doc)})"
            )
        value = doc[spec]
        return [] if value is None else (list(value) if isinstance(value, list) else [value])
    if callable(spec):
        value = call_with_kwargs(spec, doc, kwargs)
        if value is None:
            return []
        return list(value) if isinstance(value, (list, tuple)) else [value]
    raise ConfigError(f"task '{task}': doc_to_visual must be a field name or a !function, got {spec!r}")


def media_part(visual: Any) -> dict[str, Any]:
    """A ChatMessages content part for one visual: :func:`lmms_eval.media.parts.content_part`."""
    return content_part(visual)
