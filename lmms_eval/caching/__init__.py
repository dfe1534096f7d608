"""Caching: model answers (``--use_cache``) and built requests (``--cache_requests``).

* :class:`ResponseCache` — the SQLite store of answers, safe for several processes;
* :class:`ResponseCacheSession` — puts a cache in front of any model backend through the
  ``model_call`` seam of :func:`lmms_eval.inference.run_requests`;
* :mod:`lmms_eval.caching.keys` — what a cache key covers, and which answers may be stored;
* :mod:`lmms_eval.caching.content` — the model content fingerprint (checkpoint files, Hub commit);
* :mod:`lmms_eval.caching._guard` — what keeps ``cache clear``/``prune`` to our folders and files;
* :class:`RequestCache` — stores the built requests of tasks between runs.
"""

from __future__ import annotations

from lmms_eval.caching.cached_call import CacheCounters, ResponseCacheSession
from lmms_eval.caching.content import ContentFingerprint, model_content_fingerprint
from lmms_eval.caching.request_cache import REQUEST_CACHE_MODES, RequestCache, parse_cache_requests
from lmms_eval.caching.response_cache import (
    CacheEntry,
    CacheError,
    CacheInUseError,
    NotACacheError,
    ResponseCache,
    check_cache_folder,
    clear_cache,
    default_cache_path,
    resolve_cache_path,
)

__all__ = [
    "REQUEST_CACHE_MODES",
    "CacheCounters",
    "CacheEntry",
    "CacheError",
    "CacheInUseError",
    "ContentFingerprint",
    "NotACacheError",
    "RequestCache",
    "ResponseCache",
    "ResponseCacheSession",
    "check_cache_folder",
    "clear_cache",
    "default_cache_path",
    "model_content_fingerprint",
    "parse_cache_requests",
    "resolve_cache_path",
]
