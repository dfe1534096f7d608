"""The web UI (``lmms-eval ui``): browse runs, samples and comparisons; launch evaluations.

* :mod:`~lmms_eval.ui.app`: :func:`create_ui_app`, the FastAPI app (API under ``/api``, the front
  end from ``static/``);
* :mod:`~lmms_eval.ui.runs`: the runs under the logs folder, read through :mod:`lmms_eval.results`;
* :mod:`~lmms_eval.ui.samples`: samples files indexed by line offset, paged, filtered and searched;
* :mod:`~lmms_eval.ui.media`: images, video and audio of sample documents, confined to the logs folder;
* :mod:`~lmms_eval.ui.launch`: the run options form and the command / ``--config`` preview;
* :mod:`~lmms_eval.ui.proxy`: the eval server the launch page talks to (remote, or run in this process);
* :mod:`~lmms_eval.ui.runner`: :func:`serve_ui`, which binds, prints the address and opens a browser.

The front end is plain static files (ES modules, CSS, hand-written SVG charts) shipped in the
package: no build step and nothing fetched from elsewhere. Importing this package imports no FastAPI.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lmms_eval.ui.app import UiOptions, create_ui_app
    from lmms_eval.ui.runner import serve_ui

_LAZY = {"UiOptions": "app", "create_ui_app": "app", "serve_ui": "runner"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(f"lmms_eval.ui.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'lmms_eval.ui' has no attribute {name!r}")


__all__ = ["UiOptions", "create_ui_app", "serve_ui"]
