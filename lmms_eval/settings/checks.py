"""Value checks of run settings, used by :class:`~lmms_eval.settings.EvalSettings` and elsewhere.

Each rule is defined once here. A check returns the value in its normal form (``--limit 5.0`` ->
``5``) or raises :class:`~lmms_eval.errors.ConfigError` with one line that names the option as the
user spells it (``--limit``, ``--gen_kwargs``), what is allowed and what was given.

``--limit``: ``None`` or ``-1`` (all documents, as documented in ``docs/cli.md``), a fraction
strictly between 0 and 1, or a whole count >= 0. Other negative numbers, NaN, infinity and counts
with a fraction (``1.5``) are errors.

Counts have generous but finite upper bounds (``MAX_*`` below), so that no request or config can
ask for a billion repeats or a batch of 2**70: a value above one is one line that names the option
and the bound. Every string of a setting (nested ones too) is checked by :func:`check_text`: no NUL
byte, valid UTF-8 (command-line bytes that are not arrive as lone surrogates), nesting at most
``MAX_NESTING`` deep.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from lmms_eval.errors import ConfigError, ModelArgsError

# upper bounds of counts: generous, finite (documented in the options' help)
MAX_DOCS = 1_000_000_000  # --limit, --offset
MAX_REPEATS = 1000  # --repeats: every request is run this many times
MAX_BATCH_SIZE = 4096  # --batch_size, --max_batch_size, auto:N
MAX_BOOTSTRAP_ITERS = 1_000_000  # --bootstrap_iters
MAX_TOKEN_BUDGET = 10**12  # --max_tokens
MAX_FEWSHOT = 1000  # --num_fewshot
MAX_NEW_TOKENS = 10_000_000  # --gen_kwargs max_new_tokens (num_beams and n: MAX_REPEATS)
MAX_NESTING = 32  # levels of lists and mappings inside one value (model_args, gen_kwargs)

__all__ = [
    "MAX_BATCH_SIZE",
    "MAX_BOOTSTRAP_ITERS",
    "MAX_DOCS",
    "MAX_FEWSHOT",
    "MAX_NESTING",
    "MAX_NEW_TOKENS",
    "MAX_REPEATS",
    "MAX_TOKEN_BUDGET",
    "check_arg_string",
    "check_batch_size",
    "check_bootstrap_iters",
    "check_gen_kwargs",
    "check_limit",
    "check_max_batch_size",
    "check_max_tokens",
    "check_num_fewshot",
    "check_offset",
    "check_repeats",
    "check_seed",
    "check_seeds",
    "check_text",
    "check_timezone",
    "check_verbosity",
    "show_value",
]


def show_value(value: Any) -> str:
    """A given value as an error message shows it: strings quoted, the rest as typed (``true``, ``3``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and math.isfinite(value) and value == int(value) and abs(value) < 1e15:
        value = int(value)  # `--limit -3` arrives as -3.0
    if isinstance(value, int) and value.bit_length() > 200:
        return f"a number of {len(format(value, 'x'))} hex digits"  # str() refuses 4300+ digits
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 80 else text[:77] + "..."


def check_text(value: Any, option: str) -> None:
    """Every string in ``value`` (mapping keys too) holds no NUL byte and is valid UTF-8, and lists
    and mappings nest at most ``MAX_NESTING`` deep. The error names the option and the key, never
    the value (it may be a secret)."""
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        item, where, depth = stack.pop()
        if isinstance(item, str):
            _check_string(item, option, f"the value of '{where}'" if where else "the value")
        elif isinstance(item, (Mapping, list, tuple)):
            if depth >= MAX_NESTING:
                raise ConfigError(f"{option}: lists and mappings nest more than {MAX_NESTING} levels deep")
            pairs = item.items() if isinstance(item, Mapping) else enumerate(item)
            for key, sub in pairs:
                if isinstance(key, str):
                    _check_string(key, option, f"a key in '{where}'" if where else "a key")
                    step = f".{key[:40]}" if where else key[:40]
                else:
                    step = f"[{key}]"
                stack.append((sub, where + step, depth + 1))


def _check_string(text: str, option: str, place: str) -> None:
    if "\x00" in text:
        problem = f"a NUL byte (character {text.index(chr(0)) + 1})"
    else:
        try:
            text.encode("utf-8")
            return
        except UnicodeEncodeError as exc:
            problem = f"bytes that are not UTF-8 (character {exc.start + 1})"
    raise ConfigError(f"{option}: {place} contains {problem}; text options must be UTF-8 without NUL bytes")


def _number(value: Any) -> float | int | None:
    """``value`` as an int or float (numeric strings too), or ``None`` when it is no number."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            pass
        try:
            return float(text)
        except ValueError:
            return None
    return None


def _whole(value: Any) -> int | None:
    """``value`` as an int when it is a finite whole number (``3``, ``3.0``, ``"3"``), else ``None``."""
    number = _number(value)
    if number is None or not math.isfinite(number) or number != int(number):
        return None
    return int(number)


def _integer(value: Any, option: str, minimum: int, allowed: str, maximum: int) -> int:
    whole = _whole(value)
    if whole is None or whole < minimum:
        raise ConfigError(f"{option} must be {allowed}, got {show_value(value)}")
    return _at_most(whole, maximum, option)


def _at_most(number: int | float, maximum: int, option: str) -> Any:
    if number > maximum:
        raise ConfigError(f"{option} must be at most {maximum}, got {show_value(number)}")
    return number


def check_limit(value: Any, option: str = "--limit") -> int | float | None:
    """``None``/``-1``: all documents (``None``); a fraction in (0, 1); or a whole count >= 0."""
    if value is None:
        return None
    allowed = "a whole number of documents (0 or more) or a fraction between 0 and 1 (-1: all)"
    number = _number(value)
    if number is None or not math.isfinite(number):
        raise ConfigError(f"{option} must be {allowed}, got {show_value(value)}")
    if number == -1:
        return None
    if 0 < number < 1:
        return float(number)
    if number < 0 or number != int(number):
        raise ConfigError(f"{option} must be {allowed}, got {show_value(value)}")
    return _at_most(int(number), MAX_DOCS, option)


def check_offset(value: Any, option: str = "--offset") -> int:
    """A whole number of documents to skip, from 0 to ``MAX_DOCS``."""
    return _integer(value, option, 0, "a whole number >= 0", MAX_DOCS)


def check_repeats(value: Any, option: str = "--repeats") -> int | None:
    """``None`` (each task's own ``repeats``) or a whole number from 1 to ``MAX_REPEATS``."""
    if value is None:
        return None
    return _integer(value, option, 1, "a whole number >= 1", MAX_REPEATS)


def check_bootstrap_iters(value: Any, option: str = "--bootstrap_iters") -> int:
    """A whole number of bootstrap resamples, from 0 (off) to ``MAX_BOOTSTRAP_ITERS``."""
    return _integer(value, option, 0, "a whole number >= 0 (0 turns bootstrapping off)", MAX_BOOTSTRAP_ITERS)


def check_max_tokens(value: Any, option: str = "--max_tokens") -> int | None:
    """``None`` (no budget) or a whole number of tokens from 1 to ``MAX_TOKEN_BUDGET``."""
    if value is None:
        return None
    return _integer(value, option, 1, "a whole number >= 1", MAX_TOKEN_BUDGET)


def check_num_fewshot(value: Any, option: str = "--num_fewshot") -> int | None:
    """``None`` (each task's own) or a whole number of examples from 0 to ``MAX_FEWSHOT``."""
    if value is None:
        return None
    return _integer(value, option, 0, "a whole number >= 0", MAX_FEWSHOT)


def check_max_batch_size(value: Any, option: str = "--max_batch_size") -> int | None:
    """``None`` or a whole number from 1 to ``MAX_BATCH_SIZE``."""
    if value is None:
        return None
    return _integer(value, option, 1, "a positive whole number", MAX_BATCH_SIZE)


def check_seed(value: Any, option: str = "--seed") -> int | None:
    """One seed: ``None`` (not seeded) or a whole number from 0 to 2**32 - 1 (what NumPy accepts)."""
    if value is None:
        return None
    whole = _whole(value)
    if whole is None or not 0 <= whole < 2**32:
        raise ConfigError(
            f"{option} values must be whole numbers from 0 to {2**32 - 1} or None, got {show_value(value)}"
        )
    return whole


def check_seeds(value: Any, option: str = "--seed") -> list[int | None]:
    """The four seeds (python, numpy, torch, few-shot) from one value or four.

    ``42`` and ``"42"`` -> ``[42, 42, 42, 42]``; ``"0,1234,None,1"`` and ``[0, 1234, None, 1]`` are
    taken in order.
    """
    if isinstance(value, str):
        texts = [p.strip() for p in value.split(",")]
        parts: list[Any] = [
            None if p.lower() == "none" else _number(p) if _number(p) is not None else p for p in texts
        ]
    elif isinstance(value, (list, tuple)):
        parts = list(value)
    else:
        parts = [value]
    if len(parts) == 1:
        parts *= 4
    if len(parts) != 4:
        raise ConfigError(
            f"{option} takes one value or four (python, numpy, torch, few-shot), got {show_value(value)}"
        )
    return [check_seed(p, option) for p in parts]


def check_batch_size(value: Any, option: str = "--batch_size") -> int | str:
    """A whole number from 1 to ``MAX_BATCH_SIZE``, ``auto`` or ``auto:N`` (N as large at most)."""
    text = str(value).strip() if isinstance(value, (str, int, float)) else ""
    whole = _whole(value) if not isinstance(value, bool) else None
    if whole is not None and whole > 0:
        return _at_most(whole, MAX_BATCH_SIZE, option)
    if text == "auto" or (re.fullmatch(r"auto:[0-9]{1,18}", text) and int(text[5:]) > 0):
        if text != "auto":
            _at_most(int(text[5:]), MAX_BATCH_SIZE, option)
        return text
    raise ConfigError(
        f"{option} must be a positive whole number, 'auto' or 'auto:N', got {show_value(value)}"
    )


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def check_verbosity(value: Any, option: str = "--verbosity") -> str:
    """A log level name, any case: DEBUG, INFO, WARNING, ERROR or CRITICAL."""
    level = str(value).strip().upper()
    if level not in LOG_LEVELS:
        raise ConfigError(f"{option} must be one of {', '.join(LOG_LEVELS)}, got {show_value(value)}")
    return level


def check_timezone(value: Any, option: str = "--timezone") -> str:
    """An IANA time zone name (``UTC``, ``Asia/Singapore``) known to this machine."""
    import zoneinfo

    from lmms_eval.errors import did_you_mean

    name = str(value).strip()
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):  # OSError: a name too long
        hint = did_you_mean(name, sorted(zoneinfo.available_timezones()))
        raise ConfigError(
            f"{option}: unknown time zone {show_value(value)}.{hint} Example: UTC, Europe/Paris"
        ) from None
    return name


def check_arg_string(value: Any, option: str = "--model_args") -> Any:
    """A ``k=v,k=v`` string (or a JSON object, or a mapping) that parses; kept as given. The error
    says which item is wrong and how, never a value."""
    from lmms_eval.utils import parse_arg_string

    if isinstance(value, str):
        try:
            parse_arg_string(value)
        except ModelArgsError as exc:
            raise ConfigError(f"{option}: {exc}") from None
    return value


# -- --gen_kwargs -----------------------------------------------------------------------------------


class _Bad(Exception):
    """A generation kwarg does not fit; the message says what is allowed."""


def _int_at_least(minimum: int, maximum: int = 2**63 - 1) -> Callable[[Any], int]:
    wanted = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"

    def check(value: Any) -> int:
        whole = _whole(value)
        if whole is None or whole < minimum:
            raise _Bad(wanted)
        if whole > maximum:
            raise _Bad(f"{wanted} and at most {maximum}")
        return whole

    return check


def _float_in(low: float, high: float | None, low_open: bool, wanted: str) -> Callable[[Any], float]:
    def check(value: Any) -> float:
        number = _number(value)
        if number is None or not math.isfinite(number):
            raise _Bad(wanted)
        if number < low or (low_open and number == low) or (high is not None and number > high):
            raise _Bad(wanted)
        return float(number)

    return check


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise _Bad("true or false")


def _stop_strings(value: Any) -> str | list[str]:
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    raise _Bad("a string or a list of strings")


GEN_KWARG_CHECKS: dict[str, Callable[[Any], Any]] = {
    "max_new_tokens": _int_at_least(1, MAX_NEW_TOKENS),
    "num_beams": _int_at_least(1, MAX_REPEATS),
    "n": _int_at_least(1, MAX_REPEATS),  # answers per request: repeats by another name
    "top_k": _int_at_least(0),
    "seed": _int_at_least(0),
    "temperature": _float_in(0.0, None, False, "a finite number >= 0"),
    "top_p": _float_in(0.0, 1.0, False, "a number between 0 and 1"),
    "repetition_penalty": _float_in(0.0, None, True, "a finite number > 0"),
    "do_sample": _boolean,
    "until": _stop_strings,
}


def check_gen_kwargs(
    gen_kwargs: Mapping[str, Any] | str | None, option: str = "--gen_kwargs"
) -> dict[str, Any]:
    """The generation kwargs with the well-known ones typed and range-checked (others pass through).

    A ``k=v,k=v`` string is parsed first. ``max_new_tokens=abc`` raises
    ``--gen_kwargs: max_new_tokens must be a positive integer, got 'abc'``.
    """
    from lmms_eval.utils import parse_arg_string

    if isinstance(gen_kwargs, str):
        try:
            gen_kwargs = parse_arg_string(gen_kwargs)
        except ModelArgsError as exc:
            raise ConfigError(f"{option}: {exc}") from None
    out: dict[str, Any] = {}
    for key, value in (gen_kwargs or {}).items():
        check = GEN_KWARG_CHECKS.get(str(key))
        if check is None:
            out[key] = value
            continue
        try:
            out[key] = check(value)
        except _Bad as exc:
            raise ConfigError(f"{option}: {key} must be {exc}, got {show_value(value)}") from None
    return out
