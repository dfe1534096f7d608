"""What a local copy of a task's dataset needs (``lmms-eval tasks info NAME``).

Built from the loaded task: its config gives the dataset id, config, split and metrics; the
declaration in :mod:`lmms_eval.tasks._task_utils.columns` gives the columns it reads and their
types; and the file layout of a video column is found by calling the task's own ``doc_to_visual``
on a placeholder document under a scratch dataset root, so it is the path a run looks at.
"""

from __future__ import annotations

import os
import tempfile
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from lmms_eval.tasks._task_utils.columns import MEDIA_TYPES, columns_of

if TYPE_CHECKING:
    from lmms_eval.api.task import ConfigurableTask

ROOT = "DIR"  # how the dataset root is written in the layout lines


class ColumnInfo(BaseModel):
    name: str
    type: str
    media: bool = False


class MetricInfo(BaseModel):
    name: str
    higher_is_better: bool | None = None


class LocalCopyInfo(BaseModel):
    """What ``--dataset_root DIR`` must hold for one task."""

    task: str
    dataset: str | None
    config: str | None
    split: str | None
    data_files: str | None  # where the data files go under the root
    columns: list[ColumnInfo]
    answer: str | None
    media_files: dict[str, str]  # video column -> the path a run looks for, under the root
    metrics: list[MetricInfo]
    description: str | None  # the task YAML's description


def describe(task: ConfigurableTask) -> LocalCopyInfo:
    """The local-copy description of ``task`` (columns empty when the task declares none)."""
    cfg = task.config
    declared = columns_of(task.task_name, cfg.dataset_path, cfg.dataset_name)
    types = declared.all_types() if declared is not None else {}
    columns = [ColumnInfo(name=n, type=t, media=t in MEDIA_TYPES) for n, t in types.items()]
    videos = [n for n, t in types.items() if t == "video"]
    return LocalCopyInfo(
        task=task.task_name,
        dataset=cfg.dataset_path,
        config=cfg.dataset_name,
        split=cfg.test_split or cfg.validation_split,
        data_files=_data_files(cfg.dataset_path, cfg.dataset_name, cfg.test_split or cfg.validation_split),
        columns=columns,
        answer=declared.answer if declared is not None else None,
        media_files=_video_layout(task, types, videos) if videos else {},
        metrics=[MetricInfo(name=m.name, higher_is_better=m.higher_is_better) for m in cfg.metric_list or []],
        description=cfg.description or None,
    )


def _data_files(dataset_path: str | None, config: str | None, split: str | None) -> str | None:
    if not dataset_path or "/" not in dataset_path:
        return None  # data files that ship with the task (dataset_kwargs.data_files)
    folder = f"{ROOT}/{dataset_path}" + (f"/{config}" if config else "")
    return f"{folder}/{split or '<split>'}.parquet (or .jsonl, or a save_to_disk folder)"


def placeholder(name: str, type_: str) -> Any:
    """A value of a declared column type; a video column's value is ``{name}``, so the path the
    task builds from it shows where the file goes."""
    if type_ == "video":
        return "{" + name + "}"
    if type_ in ("int", "float"):
        return 0
    if type_.startswith("list"):
        return ["a", "b", "c", "d"]
    if type_ == "dict":
        return {}
    return "x"


def _video_layout(task: ConfigurableTask, types: dict[str, str], videos: list[str]) -> dict[str, str]:
    """``{column: path under DIR}`` from the task's own ``doc_to_visual`` on a placeholder doc."""
    from lmms_eval.data.dataset_root import exported_root

    cfg = task.config
    doc = {n: placeholder(n, t) for n, t in types.items()}
    with tempfile.TemporaryDirectory(prefix="lmms-eval-info-") as root:
        copy = os.path.join(root, str(cfg.dataset_path), cfg.dataset_name or "")
        os.makedirs(copy, exist_ok=True)
        with exported_root(root):
            try:
                paths = [str(p) for p in task.doc_to_visual(doc)] if cfg.doc_to_visual is not None else []
            except Exception:  # a helper that needs real values: the layout is left out, not guessed
                paths = []
        layout: dict[str, str] = {}
        for column in videos:
            for path in paths:
                if "{" + column + "}" in path and path.startswith(root):
                    layout[column] = ROOT + path[len(root) :].replace(os.sep, "/")
        return layout


def render(info: LocalCopyInfo) -> str:
    """``info`` as the lines ``lmms-eval tasks info`` prints."""
    lines = [f"task: {info.task}"]
    if info.description:
        lines.append(f"description: {info.description.strip()}")
    lines.append(f"dataset: {info.dataset}" + (f" (config {info.config})" if info.config else ""))
    lines.append(f"split: {info.split}")
    if info.data_files:
        lines.append(f"local copy (--dataset_root DIR): {info.data_files}")
    if info.columns:
        lines.append("columns:")
        for column in info.columns:
            mark = "  [media]" if column.media else ""
            answer = "  [answer]" if column.name == info.answer else ""
            lines.append(f"  {column.name}: {column.type}{mark}{answer}")
    else:
        lines.append("columns: not declared (see lmms_eval/tasks/_task_utils/columns.py)")
    for column, path in info.media_files.items():
        lines.append(f"files of {column}: {path}")
    for metric in info.metrics:
        better = metric.higher_is_better
        direction = "" if better is None else "higher is better" if better else "lower is better"
        lines.append(f"metric: {metric.name}" + (f" ({direction})" if direction else ""))
    return "\n".join(lines)
