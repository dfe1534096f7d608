"""The benchmark catalog: one row per task that describes itself in ``metadata.benchmark``.

A bundled benchmark task's YAML carries::

    metadata:
      benchmark:
        family: MMMU          # display name
        size: 900             # documents in the evaluated split (the published figure)
        metric: mmmu_acc      # headline result key(s): a list, or a string separated by ", "
        judge: "no"           # "no" | "optional" | "yes"
        modality: video       # "image" (the default) | "video" | "audio": the table it is listed in
        deviations: [...]     # deliberate differences from the published package's scoring

``lmms-eval tasks benchmarks`` prints the catalog and ``docs/benchmarks.md`` is generated from it
(``python scripts/gen_benchmark_table.py``; a test fails when the page is out of date), so the
documented list is always the indexed one. Only task YAMLs are read (no datasets, no ``!function``
modules).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lmms_eval.errors import ConfigError

if TYPE_CHECKING:
    from lmms_eval.tasks import TaskManager

JUDGE_VALUES = ("no", "optional", "yes")
MODALITIES = ("image", "video", "audio")


@dataclass(frozen=True)
class BenchmarkRow:
    """One task of the catalog."""

    task: str
    family: str
    dataset: str
    config: str | None
    split: str
    size: int | None
    metric: str
    judge: str
    groups: tuple[str, ...] = ()
    deviations: tuple[str, ...] = field(default_factory=tuple)
    modality: str = "image"

    @property
    def metrics(self) -> list[str]:
        """The result keys: ``metric`` split at ", " (a key such as ``exact_match,flexible-extract``
        has no space after its comma); a YAML list is kept as it is."""
        return [m.strip() for m in self.metric.split(", ") if m.strip()]

    @property
    def dataset_label(self) -> str:
        return f"{self.dataset} ({self.config})" if self.config else self.dataset


def _text(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v).strip() for v in value)
    return "" if value is None else str(value)


def _row(name: str, path: str, config: dict[str, Any], groups: Sequence[str]) -> BenchmarkRow | None:
    metadata = config.get("metadata")
    if isinstance(metadata, list):  # the published list-of-mappings spelling
        metadata = {k: v for part in metadata if isinstance(part, dict) for k, v in part.items()}
    info = (metadata or {}).get("benchmark") if isinstance(metadata, dict) else None
    if info is None:
        return None
    if not isinstance(info, dict):
        raise ConfigError(f"{path}: task '{name}': metadata.benchmark must be a mapping")
    raw_judge = info.get("judge", "no")
    if isinstance(raw_judge, bool):  # YAML reads a bare no / yes as a boolean
        raw_judge = "yes" if raw_judge else "no"
    judge = str(raw_judge).lower()
    if judge not in JUDGE_VALUES:
        raise ConfigError(
            f"{path}: task '{name}': metadata.benchmark.judge is '{judge}'; allowed: {', '.join(JUDGE_VALUES)}"
        )
    modality = str(info.get("modality", "image")).lower()
    if modality not in MODALITIES:
        raise ConfigError(
            f"{path}: task '{name}': metadata.benchmark.modality is '{modality}'; allowed: {', '.join(MODALITIES)}"
        )
    size = info.get("size")
    if size is not None and not isinstance(size, int):
        raise ConfigError(f"{path}: task '{name}': metadata.benchmark.size must be an integer, got {size!r}")
    deviations = info.get("deviations") or []
    if isinstance(deviations, str):
        deviations = [deviations]
    return BenchmarkRow(
        task=name,
        family=_text(info.get("family")) or name,
        dataset=_text(config.get("dataset_path")),
        config=_text(config.get("dataset_name")) or None,
        split=_text(config.get("test_split") or config.get("validation_split")),
        size=size,
        metric=_text(info.get("metric")),
        judge=judge,
        groups=tuple(groups),
        deviations=tuple(str(d) for d in deviations),
        modality=modality,
    )


def _group_members(manager: TaskManager) -> dict[str, list[str]]:
    """``{task: [groups that list it directly]}``."""
    from lmms_eval.tasks._yaml import load_yaml_config

    members: dict[str, list[str]] = {}
    for group in manager.all_groups:
        entry = manager.index.entries[group]
        if entry.path is None:
            continue
        for item in load_yaml_config(entry.path).get("task") or []:
            name = item.get("task") if isinstance(item, dict) else item
            if isinstance(name, str):
                members.setdefault(name, []).append(group)
    return members


def benchmark_rows(manager: TaskManager) -> list[BenchmarkRow]:
    """The catalog of ``manager``'s tasks, sorted by family then task name."""
    from lmms_eval.tasks._yaml import load_yaml_config

    groups = _group_members(manager)
    rows = []
    for name in manager.all_subtasks:
        entry = manager.index.entries[name]
        if entry.path is None:
            continue
        row = _row(name, entry.path, load_yaml_config(entry.path), sorted(groups.get(name, [])))
        if row is not None:
            rows.append(row)
    return sorted(rows, key=lambda r: (r.family.lower(), r.task))


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(rows: Sequence[BenchmarkRow]) -> list[str]:
    header = "| Task | Benchmark | Dataset | Split | Size | Metric | Judge | Groups |"
    lines = [header, "|---|---|---|---|---:|---|---|---|"]
    for r in rows:
        cells = [
            f"`{r.task}`",
            r.family,
            f"`{r.dataset_label}`",
            r.split,
            "" if r.size is None else f"{r.size:,}",
            "submission file (answers hidden)"
            if r.metrics == ["submission"]
            else ", ".join(f"`{m}`" for m in r.metrics),
            r.judge,
            ", ".join(f"`{g}`" for g in r.groups),
        ]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return lines


def render_markdown(rows: Iterable[BenchmarkRow]) -> str:
    """The catalog as a Markdown table (one per modality, each under a heading, when there are
    several), then the deviations list."""
    rows = list(rows)
    present = [m for m in MODALITIES if any(r.modality == m for r in rows)]
    if len(present) <= 1:
        lines = _table(rows)
    else:
        lines = []
        for modality in present:
            heading = [f"### {modality.capitalize()} benchmarks", ""]
            lines += ([""] if lines else []) + heading + _table([r for r in rows if r.modality == modality])
    lines += ["", "### Deliberate deviations from the published scoring", ""]
    tasks_of: dict[str, list[str]] = {}  # a deviation shared by several tasks is listed once
    for r in rows:
        for text in r.deviations:
            tasks_of.setdefault(text, []).append(r.task)
    if not tasks_of:
        lines.append("None.")
    for text, tasks in tasks_of.items():
        lines.append(f"- {', '.join(f'`{t}`' for t in tasks)}: {text}")
    return "\n".join(lines) + "\n"


BEGIN_MARK = "<!-- benchmark table: generated by scripts/gen_benchmark_table.py; do not edit by hand -->"
END_MARK = "<!-- end of benchmark table -->"


def splice(page: str, table: str, path: str = "docs/benchmarks.md") -> str:
    """``page`` with the text between the catalog markers replaced by ``table``."""
    if BEGIN_MARK not in page or END_MARK not in page:
        raise ConfigError(f"{path}: the benchmark table markers are missing ({BEGIN_MARK} ... {END_MARK})")
    head, rest = page.split(BEGIN_MARK, 1)
    _, tail = rest.split(END_MARK, 1)
    return f"{head}{BEGIN_MARK}\n{table}{END_MARK}{tail}"


def builtin_manager() -> TaskManager:
    """A manager over the bundled tasks only (no plugins, no --include_path)."""
    from lmms_eval.tasks import TaskManager

    env = os.environ.pop("LMMS_EVAL_PLUGINS", None)
    try:
        return TaskManager(include_defaults=True)
    finally:
        if env is not None:
            os.environ["LMMS_EVAL_PLUGINS"] = env
