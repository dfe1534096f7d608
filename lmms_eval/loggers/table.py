"""The printed results table (markdown): Tasks, Version, Filter, n-shot, Metric, Value, Stderr."""

from __future__ import annotations

from typing import Any


def _format(value: Any) -> str:
    if value is None:
        return "N/A"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return "N/A" if value != value else f"{value:.4f}"
    if isinstance(value, int):
        return str(value)
    return str(value)


def _rows(results: dict[str, Any], section: str, names: list[str]) -> list[list[str]]:
    rows: list[list[str]] = []
    versions = results.get("versions", {})
    n_shot = results.get("n-shot", {})
    higher = results.get("higher_is_better", {})
    for name in names:
        scores = results.get(section, {}).get(name, {})
        alias = scores.get("alias", name)
        first = True
        for key in sorted(k for k in scores if "," in k and "_stderr," not in k):
            metric, _, filter_key = key.partition(",")
            direction = higher.get(name, {}).get(metric)
            arrow = "↑" if direction is True else "↓" if direction is False else ""
            stderr = scores.get(f"{metric}_stderr,{filter_key}", "N/A")
            rows.append(
                [
                    alias if first else "",
                    str(versions.get(name, "")) if first else "",
                    filter_key,
                    _format(n_shot.get(name, "")) if first else "",
                    metric,
                    arrow,
                    _format(scores[key]),
                    "±",
                    _format(stderr),
                ]
            )
            first = False
        if first:  # a task or group without scores still gets a row
            rows.append([alias, str(versions.get(name, "")), "", "", "", "", "", "", ""])
    return rows


def make_table(results: dict[str, Any], section: str = "results") -> str:
    """Markdown table of a results dict's ``results`` (or ``groups``) section."""
    names = list(results.get(section, {}))
    header = [
        "Tasks" if section == "results" else "Groups",
        "Version",
        "Filter",
        "n-shot",
        "Metric",
        "",
        "Value",
        "",
        "Stderr",
    ]
    rows = _rows(results, section, names)
    if rows and all(not r[5] for r in rows):  # no direction known (e.g. groups): drop the arrow column
        header = header[:5] + header[6:]
        rows = [r[:5] + r[6:] for r in rows]
    widths = [
        max(len(header[i]), *(len(r[i]) for r in rows)) if rows else len(header[i])
        for i in range(len(header))
    ]

    def line(cells: list[str]) -> str:
        out = []
        for i, cell in enumerate(cells):
            out.append(cell.rjust(widths[i]) if header[i] in ("Value", "Stderr") else cell.ljust(widths[i]))
        return "|" + "|".join(out) + "|"

    parts = [line(header), "|" + "|".join("-" * w for w in widths) + "|"]
    parts.extend(line(r) for r in rows)
    return "\n".join(parts)
