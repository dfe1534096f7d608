"""Is the Hugging Face Hub reachable? Switching this process to offline mode when it is not."""

from __future__ import annotations

import logging
import os
import threading
from functools import lru_cache
from urllib import request as urllib_request

logger = logging.getLogger(__name__)

HUB_PROBE_TIMEOUT_S = 3.0
DEFAULT_HUB_ENDPOINT = "https://huggingface.co"
_OFFLINE_ENV_VARS = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
_TRUE_VALUES = ("1", "true", "yes", "on")

# set when this process switched itself to offline mode because the Hub was unreachable
_forced_offline_reason: str | None = None


def _hub_endpoint() -> str:
    return os.environ.get("HF_ENDPOINT") or DEFAULT_HUB_ENDPOINT


def _answers_http(url: str) -> bool:
    """Whether ``url`` answers a HEAD request (through the environment's proxies) with a status
    below 500. A TLS certificate the local trust store rejects also counts as an answer: the
    Hub libraries may trust it (``REQUESTS_CA_BUNDLE``)."""
    import ssl
    from http.client import HTTPException
    from urllib.error import HTTPError, URLError

    opener = urllib_request.build_opener(urllib_request.ProxyHandler())  # reads the proxy variables now
    try:
        with opener.open(urllib_request.Request(url, method="HEAD"), timeout=HUB_PROBE_TIMEOUT_S) as response:
            return response.status < 500
    except HTTPError as exc:
        return exc.code < 500
    except URLError as exc:
        return isinstance(exc.reason, ssl.SSLCertVerificationError)
    except (OSError, ValueError, HTTPException):
        return False


@lru_cache(maxsize=8)
def hub_reachable(endpoint: str | None = None) -> bool:
    """Whether the Hub endpoint answers HTTP within a few seconds (cached per endpoint and process).

    The probe runs in a daemon thread so that a hanging name lookup cannot stall the caller.
    """
    url = endpoint or _hub_endpoint()
    result: list[bool] = []
    thread = threading.Thread(
        target=lambda: result.append(_answers_http(url)), name="lmms-eval-hub-probe", daemon=True
    )
    thread.start()
    thread.join(HUB_PROBE_TIMEOUT_S + 0.5)
    return bool(result and result[0])


def _offline_requested() -> bool:
    return any(os.environ.get(var, "").strip().lower() in _TRUE_VALUES for var in _OFFLINE_ENV_VARS)


def _set_library_offline() -> None:
    """Make ``datasets`` / ``huggingface_hub`` (which read the environment at import) offline now."""
    try:
        import datasets.config
        import huggingface_hub.constants
    except ImportError:  # pragma: no cover - both are core dependencies
        return
    datasets.config.HF_HUB_OFFLINE = True
    if hasattr(datasets.config, "HF_DATASETS_OFFLINE"):
        datasets.config.HF_DATASETS_OFFLINE = True
    huggingface_hub.constants.HF_HUB_OFFLINE = True


def _force_offline(reason: str) -> None:
    """Switch this process to cache-only mode (environment and the already imported libraries)."""
    global _forced_offline_reason
    _forced_offline_reason = reason
    for var in _OFFLINE_ENV_VARS:
        os.environ[var] = "1"
    _set_library_offline()


def _offline_reason() -> str | None:
    """Why Hub datasets must come from the cache (offline mode, unreachable Hub), or None."""
    if _offline_requested():
        _set_library_offline()  # the libraries may have been imported before the variable was set
        if _forced_offline_reason is not None:
            return _forced_offline_reason
        return "offline mode is on (HF_HUB_OFFLINE / HF_DATASETS_OFFLINE)"
    endpoint = _hub_endpoint()
    if hub_reachable(endpoint):
        return None
    reason = f"the Hugging Face Hub ({endpoint}) is unreachable"
    logger.warning("%s; switching to offline mode: datasets come from the local cache", reason)
    _force_offline(reason)
    return reason


# -- video files ------------------------------------------------------------------------------------
