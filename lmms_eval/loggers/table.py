"""The printed results table (markdown).

Always: Tasks, Version, Filter, n-shot, Metric, direction, Value, ±, Stderr, 95% CI. Shown only when
some row has them: the clustered error and cluster count, the repeated-sampling metrics (EA, CA,
IV, CR) and the paired comparison with a baseline run (Baseline, Diff, Diff 95% CI, p; the
difference in points when both scores lie in [0, 1], as ``lmms-eval compare`` prints it; the JSON
keeps fractions).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from lmms_eval.results.schema import ResultsFile, metric_keys
from lmms_eval.stats.paired import format_p_value

Z_95 = 1.959963984540054

Cell = Callable[[dict[str, Any], str, str], str]


def _format(value: Any, digits: int = 4) -> str:
    if value is None:
        return "N/A"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return "N/A" if value != value else f"{value:.{digits}f}"
    return str(value)


def _get(suffix: str) -> Cell:
    def cell(scores: dict[str, Any], metric: str, filter_key: str) -> str:
        value = scores.get(f"{metric}{suffix},{filter_key}")
        return "" if value is None else _format(value)

    return cell


def _interval(lower: str, upper: str) -> Cell:
    def cell(scores: dict[str, Any], metric: str, filter_key: str) -> str:
        low = scores.get(f"{metric}{lower},{filter_key}")
        high = scores.get(f"{metric}{upper},{filter_key}")
        if not isinstance(low, (int, float)) or not isinstance(high, (int, float)):
            return "" if low is None else "N/A"
        return f"[{low:.4f}, {high:.4f}]"

    return cell


def _in_points(scores: dict[str, Any], metric: str, filter_key: str) -> bool:
    """Whether a baseline difference is shown in points: both scores lie in [0, 1] (as in compare)."""
    values = (scores.get(f"{metric},{filter_key}"), scores.get(f"{metric}_baseline,{filter_key}"))
    return all(isinstance(v, (int, float)) and 0.0 <= v <= 1.0 for v in values)


def _diff(scores: dict[str, Any], metric: str, filter_key: str) -> str:
    value = scores.get(f"{metric}_diff,{filter_key}")
    if not isinstance(value, (int, float)) or value != value:
        return "" if value is None else "N/A"
    return f"{100 * value:+.2f} pts" if _in_points(scores, metric, filter_key) else f"{value:+.4f}"


def _diff_interval(scores: dict[str, Any], metric: str, filter_key: str) -> str:
    low = scores.get(f"{metric}_diff_ci_lower,{filter_key}")
    high = scores.get(f"{metric}_diff_ci_upper,{filter_key}")
    if not isinstance(low, (int, float)) or not isinstance(high, (int, float)):
        return "" if low is None else "N/A"
    if _in_points(scores, metric, filter_key):
        return f"[{100 * low:+.2f}, {100 * high:+.2f}] pts"
    return f"[{low:+.4f}, {high:+.4f}]"


def _pvalue(scores: dict[str, Any], metric: str, filter_key: str) -> str:
    value = scores.get(f"{metric}_diff_pvalue,{filter_key}")
    return format_p_value(float(value)) if isinstance(value, (int, float)) else ""


# intervals that are not estimate +- z * stderr: the Stderr column shows the error they imply
_IMPLIED = ("wilson", "clopper-pearson")
IMPLIED_NOTE = (
    "* standard error implied by the row's 95% CI (Wilson or Clopper-Pearson): its width / (2 x 1.96); "
    "the results file keeps the sample standard error, which is 0 at 0% and 100%"
)


def _stderr(scores: dict[str, Any], metric: str, filter_key: str) -> str:
    """The Stderr cell: the sample standard error, or the one the interval implies, marked ``*``."""
    method = str((scores.get("ci_methods") or {}).get(f"{metric},{filter_key}", ""))
    low = scores.get(f"{metric}_ci_lower,{filter_key}")
    high = scores.get(f"{metric}_ci_upper,{filter_key}")
    if method.startswith(_IMPLIED) and isinstance(low, (int, float)) and isinstance(high, (int, float)):
        return f"{(high - low) / (2 * Z_95):.4f}*"
    return _format(scores.get(f"{metric}_stderr,{filter_key}", "N/A"))


# (header, cell, shown even when empty)
OPTIONAL_COLUMNS: list[tuple[str, Cell, bool]] = [
    ("95% CI", _interval("_ci_lower", "_ci_upper"), True),
    ("Stderr (clustered)", _get("_stderr_clustered"), False),
    ("Clusters", _get("_n_clusters"), False),
    ("EA", _get("_expected_accuracy"), False),
    ("CA", _get("_consensus_accuracy"), False),
    ("IV", _get("_internal_variance"), False),
    ("CR", _get("_consistency_rate"), False),
    ("Baseline", _get("_baseline"), False),
    ("Diff", _diff, False),
    ("Diff 95% CI", _diff_interval, False),
    ("p", _pvalue, False),
]


def primary_metrics(scores: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(metric, filter)`` pairs of the aggregated metrics (each has its own ``_stderr`` key)."""
    return metric_keys(scores)


def _rows(results: Mapping[str, Any], section: str) -> list[list[str]]:
    rows: list[list[str]] = []
    versions = results.get("versions", {})
    n_shot = results.get("n-shot", {})
    higher = results.get("higher_is_better", {})
    for name, scores in results.get(section, {}).items():
        alias = scores.get("alias", name)
        first = True
        for metric, filter_key in metric_keys(scores):
            direction = higher.get(name, {}).get(metric)
            base = [
                alias if first else "",
                str(versions.get(name, "")) if first else "",
                filter_key,
                _format(n_shot.get(name, "")) if first else "",
                metric,
                "↑" if direction is True else "↓" if direction is False else "",
                _format(scores.get(f"{metric},{filter_key}")),
                "±",
                _stderr(scores, metric, filter_key),
            ]
            rows.append(base + [cell(scores, metric, filter_key) for _, cell, _ in OPTIONAL_COLUMNS])
            first = False
        if first:  # a task or group without scores still gets a row
            rows.append([alias, str(versions.get(name, ""))] + [""] * (7 + len(OPTIONAL_COLUMNS)))
    return rows


def make_table(results: ResultsFile | Mapping[str, Any], section: str = "results") -> str:
    """Markdown table of the ``results`` (or ``groups``) section of a results file or dict."""
    if isinstance(results, ResultsFile):
        results = results.to_dict()
    first = "Tasks" if section == "results" else "Groups"
    header = [first, "Version", "Filter", "n-shot", "Metric", "", "Value", "", "Stderr"]
    header += [title for title, _, _ in OPTIONAL_COLUMNS]
    rows = _rows(results, section)
    implied = any(r[8].endswith("*") for r in rows)
    keep = [
        i
        for i in range(len(header))
        if (i < 9 and (i != 5 or any(r[5] for r in rows)))  # the direction column only when known
        or (i >= 9 and (OPTIONAL_COLUMNS[i - 9][2] or any(r[i] for r in rows)))
    ]
    header = [header[i] for i in keep]
    rows = [[r[i] for i in keep] for r in rows]
    widths = [max([len(header[i]), *(len(r[i]) for r in rows)]) for i in range(len(header))]
    right = {
        "Value",
        "Stderr",
        "Stderr (clustered)",
        "Clusters",
        "EA",
        "CA",
        "IV",
        "CR",
        "Baseline",
        "Diff",
        "p",
    }

    def line(cells: list[str]) -> str:
        return (
            "|"
            + "|".join(c.rjust(w) if h in right else c.ljust(w) for c, w, h in zip(cells, widths, header))
            + "|"
        )

    table = [line(header), "|" + "|".join("-" * w for w in widths) + "|", *(line(r) for r in rows)]
    if implied:
        table.append(IMPLIED_NOTE)
    return "\n".join(table)
