"""Schema versions of the output files, and the upgrade of older files to the current models.

=========  ====================================================================================
version    what changed
=========  ====================================================================================
(none)     files of the published lmms-eval package: no ``schema_version``;
           ``total_evaluation_time_seconds`` is a string; in samples lines a document with one
           request has its lists flattened (``[["x"]]`` -> ``["x"]``, ``["x"]`` -> ``"x"``),
           ``resps`` is left out when equal to ``filtered_resps``, and there is no ``doc``
``1.0``    our first layout: the published keys plus ``schema_version``, ``status``,
           ``timings``, ``usage``, ``failures``, ``output_files``...; samples lines keep one list
           per request (never flattened) and always carry ``resps``
``2.0``    samples lines carry ``doc``, the document with media replaced by references
           (:mod:`lmms_eval.results.docs`)
``2.1``    the results file gains the published ``efficiency`` section (tokens per correct
           answer) and task entries ``stderr_notes`` (error bars of custom aggregations that
           are not re-run); both are additions, so 2.0 files load unchanged
``2.2``    task and group entries gain ``ci_methods`` (how each interval was formed: Wilson for
           0/1 scores, clipped t...) and ``baseline_matched``; additions, so 2.1 files load
           unchanged
=========  ====================================================================================

Reading upgrades: a results file of any version loads into the current
:class:`~lmms_eval.results.schema.ResultsFile` (``schema_version`` becomes the current one, the
version read is :attr:`~lmms_eval.results.schema.ResultsFile.loaded_version`). Published results
get ``total_evaluation_time_seconds`` as a number. Published samples lines get their lists back:
``filtered_resps`` one entry per request, ``resps`` one list per request (from ``filtered_resps``
when it was left out). A flattened line is ambiguous in one case: a single request whose response
is itself a list (a ``[log-likelihood, is_greedy]`` pair) reads as one response per repeat. 1.0
lines need no change (``doc`` is just absent). A file whose major version is newer than ours is
refused, with a message naming it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lmms_eval.errors import LmmsEvalError

SCHEMA_VERSION = "2.2"
KNOWN_VERSIONS = ("1.0", "2.0", "2.1", "2.2")


def _major(version: str) -> int | None:
    head = version.split(".", 1)[0]
    return int(head) if head.isdigit() else None


def check_version(version: Any, where: str) -> str | None:
    """``version`` (a results file's ``schema_version``) if this package can read it; else an error."""
    if version is None:
        return None
    if not isinstance(version, str) or _major(version) is None:
        raise LmmsEvalError(
            f"{where}: key 'schema_version' = {version!r} is not a version (expected e.g. {SCHEMA_VERSION!r})"
        )
    newest = _major(SCHEMA_VERSION) or 0
    if (_major(version) or 0) > newest:
        raise LmmsEvalError(
            f"{where}: key 'schema_version' = {version!r}: written by a newer lmms_eval; this one reads "
            f"versions up to {newest}.x and files without a version (upgrade lmms_eval to read it)"
        )
    return version


def upgrade_results(data: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A results file of any known version, in the current layout (``schema_version`` set)."""
    version = check_version(data.get("schema_version"), where)
    out = dict(data)
    if version is None:
        seconds = out.get("total_evaluation_time_seconds")
        if isinstance(seconds, str):
            try:
                out["total_evaluation_time_seconds"] = float(seconds)
            except ValueError:
                out["total_evaluation_time_seconds"] = None
    out["schema_version"] = SCHEMA_VERSION
    return out


def is_published_sample(data: Mapping[str, Any]) -> bool:
    """Whether a samples line has the published package's flattened layout (our lines never do)."""
    if data.get("failed") is True:
        return False
    filtered = data.get("filtered_resps")
    if "resps" not in data:
        return "filtered_resps" in data
    resps = data["resps"]
    if not isinstance(resps, list) or any(not isinstance(r, list) for r in resps):
        return True
    return "filtered_resps" in data and not isinstance(filtered, (list, dict))


def upgrade_sample(data: Mapping[str, Any]) -> dict[str, Any]:
    """A published (flattened) samples line with one list per request again."""
    out = dict(data)
    if "filtered_resps" in out and not isinstance(out["filtered_resps"], list):
        out["filtered_resps"] = [out["filtered_resps"]]
    filtered = out.get("filtered_resps")
    if "resps" not in out:
        if isinstance(filtered, list):
            out["resps"] = [[value] for value in filtered]
        return out
    resps = out["resps"]
    if not isinstance(resps, list):
        out["resps"] = [[resps]]
    elif any(not isinstance(r, list) for r in resps):
        out["resps"] = [resps]
    return out
