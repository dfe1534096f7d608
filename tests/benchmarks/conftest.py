"""Fixtures for benchmark tests: Hub-schema datasets written locally, and a scripted model.

``hub_dataset(repo_id, split, rows, features, config=None)`` writes ``rows`` as the Parquet file of
``repo_id`` (the Hub layout: ``<root>/<owner>/<name>[/<config>]/<split>-00000-of-00001.parquet``,
with the ``datasets`` features in the file, so Image columns decode to PIL images), under a root
that ``run_benchmark`` passes as ``dataset_root``.

``run_benchmark(tasks, answer, ...)`` evaluates ``tasks`` with a :class:`ScriptedModel` whose
answer to each request is ``answer(task_name, doc)``, and returns the results dict.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from bench_helpers import Answer, ScriptedModel


@pytest.fixture
def dataset_root(tmp_path: Path) -> Path:
    root = tmp_path / "datasets"
    root.mkdir()
    return root


@pytest.fixture
def hub_dataset(dataset_root: Path) -> Callable[..., Path]:
    def write(
        repo_id: str,
        split: str,
        rows: Sequence[dict[str, Any]],
        features: Any,
        config: str | None = None,
    ) -> Path:
        import datasets

        folder = dataset_root / repo_id / (config or "data")
        folder.mkdir(parents=True, exist_ok=True)
        if isinstance(features, dict):
            features = datasets.Features(features)
        table = datasets.Dataset.from_list(list(rows), features=features)
        path = folder / f"{split}-00000-of-00001.parquet"
        table.to_parquet(str(path))
        return path

    return write


@pytest.fixture
def run_benchmark(dataset_root: Path) -> Callable[..., dict[str, Any]]:
    from lmms_eval.evaluator import simple_evaluate

    def run(
        tasks: str | Sequence[str],
        answer: Answer,
        chat: bool = True,
        model: ScriptedModel | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        kwargs.setdefault("bootstrap_iters", 0)
        kwargs.setdefault("show_progress", False)
        return simple_evaluate(
            model=model or ScriptedModel(answer, chat=chat),
            tasks=[tasks] if isinstance(tasks, str) else list(tasks),
            dataset_root=str(dataset_root),
            **kwargs,
        )

    return run
