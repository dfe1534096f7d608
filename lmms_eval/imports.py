"""Optional dependencies, under the names model files written for the published package import.

``process_vision_info, ok = optional_import("qwen_vl_utils", "process_vision_info")`` gives the
attribute and ``True`` when the module imports, else ``(fallback, False)``; nothing raises.
:func:`require_package` raises :class:`MissingOptionalDependencyError` (an ``ImportError``) with
the install command.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
from typing import Any

logger = logging.getLogger(__name__)


def is_package_available(package_name: str) -> bool:
    """Whether ``package_name`` can be imported (found on the path), without importing it."""
    try:
        return importlib.util.find_spec(package_name) is not None
    except (ImportError, ValueError):
        return False


def optional_import(module_name: str, attribute: str | None = None, fallback: Any = None) -> tuple[Any, bool]:
    """``(module or module.attribute, True)``, or ``(fallback, False)`` when either is missing."""
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        logger.debug("optional module %s is not available: %s", module_name, exc)
        return fallback, False
    if attribute is None:
        return module, True
    if not hasattr(module, attribute):
        logger.debug("optional module %s has no attribute %s", module_name, attribute)
        return fallback, False
    return getattr(module, attribute), True


class MissingOptionalDependencyError(ImportError):
    """A feature needs a package that is not installed; the message says how to install it."""

    def __init__(self, package: str, extras: str | None = None, feature: str | None = None) -> None:
        self.package = package
        self.extras = extras
        self.feature = feature
        install = f"pip install lmms_eval[{extras}]" if extras else f"pip install {package}"
        purpose = f" for {feature}" if feature else ""
        super().__init__(f"'{package}' is required{purpose} but not installed. Install with: {install}")


def require_package(package: str, extras: str | None = None, feature: str | None = None) -> None:
    """Raise :class:`MissingOptionalDependencyError` unless ``package`` is importable."""
    if not is_package_available(package):
        raise MissingOptionalDependencyError(package, extras, feature)


__all__ = ["MissingOptionalDependencyError", "is_package_available", "optional_import", "require_package"]
