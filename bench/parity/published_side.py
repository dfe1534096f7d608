"""Score scripted answers with the *published* lmms-eval's own task code (run in its venv).

This file runs inside a separate virtual environment that has the published ``lmms-eval``
installed (see ``bench/parity_published.py``); it imports nothing from this repository. It reads a
JSON list of cases from stdin, ``{"task", "split", "docs", "answers", "seed"}``, and for each one:

* finds the published YAML of ``task`` (``include`` resolved, ``!function`` read as a reference),
* strips each answer (the published framework strips generation outputs before scoring),
* runs the YAML's ``filter_list`` through the published filter registry (default ``none``),
* seeds the global ``random`` with ``seed`` (as the published ``--seed`` does) and calls the YAML's
  ``process_results`` on each doc in order (or, without one, the registered metric functions),
* aggregates each metric with the YAML's aggregation (a function, or a registered name).

It prints one JSON object ``{task: {"scores": {"metric,filter": value}, "error": str | null}}``.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import random
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

import yaml


class _Function(str):
    """A ``!function module.attr`` reference, resolved against the YAML's folder."""


class _Loader(yaml.SafeLoader):
    pass


_Loader.add_constructor("!function", lambda loader, node: _Function(loader.construct_scalar(node)))


def _tasks_root() -> Path:
    import lmms_eval.tasks

    return Path(lmms_eval.tasks.__file__).parent


def _read_yaml(path: Path) -> dict[str, Any]:
    data = yaml.load(path.read_text(), Loader=_Loader) or {}
    include = data.pop("include", None)
    if include:
        for name in include if isinstance(include, list) else [include]:
            base = _read_yaml(path.parent / name)
            base.update(data)
            data = base
    data.setdefault("__dir__", str(path.parent))
    data["__dir__"] = str(path.parent)
    return data


def find_config(task: str) -> dict[str, Any]:
    for path in sorted(_tasks_root().rglob("*.yaml")):
        text = path.read_text(errors="replace")
        if f"task: {task}\n" not in text and f'task: "{task}"' not in text:
            continue
        data = _read_yaml(path)
        if data.get("task") == task:
            return data
    raise LookupError(f"the published package has no task {task!r}")


def resolve(ref: Any, folder: str) -> Any:
    if not isinstance(ref, _Function):
        return ref
    module_name, _, attr = ref.rpartition(".")
    relative = Path(folder).relative_to(_tasks_root().parent.parent)
    package = ".".join(relative.parts)
    module = importlib.import_module(f"{package}.{module_name}")
    return getattr(module, attr)


def _target(config: dict[str, Any], doc: dict[str, Any]) -> Any:
    target = resolve(config.get("doc_to_target"), config["__dir__"])
    if callable(target):
        if len(inspect.signature(target).parameters) >= 2:  # as the published task passes them
            return target(doc, (config.get("model_specific_target_kwargs") or {}).get("default"))
        return target(doc)
    if isinstance(target, str) and target in doc:
        return doc[target]
    return target


def _filters(config: dict[str, Any]) -> list[tuple[str, list[Any]]]:
    from lmms_eval.api.registry import get_filter

    entries = config.get("filter_list") or [{"name": "none", "filter": [{"function": "take_first"}]}]
    out = []
    for entry in entries:
        steps = []
        for step in entry["filter"]:
            kwargs = {k: v for k, v in step.items() if k != "function"}
            function = resolve(step["function"], config["__dir__"])
            cls = get_filter(function) if isinstance(function, str) else function
            steps.append(cls(**kwargs))
        out.append((entry["name"], steps))
    return out


def _builtin_metrics(config: dict[str, Any], doc: dict[str, Any], pred: Any) -> dict[str, Any]:
    from lmms_eval.api.registry import get_metric

    out = {}
    gold = _target(config, doc)
    for entry in config.get("metric_list") or []:
        name = entry["metric"]
        kwargs = {k: v for k, v in entry.items() if k not in ("metric", "aggregation", "higher_is_better")}
        fn = get_metric(name)
        fn = getattr(fn, "fn", fn)
        golds = gold if isinstance(gold, list) and name != "anls" else [gold]
        if name == "anls":
            value = fn(references=gold if isinstance(gold, list) else [gold], predictions=[pred], **kwargs)
        else:
            values = [fn(references=[g], predictions=[pred], **kwargs) for g in golds]
            value = [max(_number(v, name) for v in values)]
        out[name] = _number(value, name)
    return out


def _number(value: Any, name: str) -> Any:
    if isinstance(value, dict):
        value = value.get(name, next(iter(value.values())))
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    return value


def _aggregate(config: dict[str, Any], metric: str, items: list[Any], tmp: str) -> Any:
    from lmms_eval.api.registry import get_aggregation

    agg: Any = "mean"
    for entry in config.get("metric_list") or []:
        if entry["metric"] == metric:
            agg = entry.get("aggregation", "mean")
    fn = resolve(agg, config["__dir__"])
    if isinstance(fn, str):
        fn = get_aggregation(fn)
        fn = getattr(fn, "fn", fn)
    if len(inspect.signature(fn).parameters) >= 2:
        return fn(items, argparse.Namespace(output_path=tmp, log_samples=False))
    return fn(items)


def score(case: dict[str, Any], tmp: str) -> dict[str, Any]:
    config = find_config(case["task"])
    docs, answers = case["docs"], [str(a).strip() for a in case["answers"]]
    process = resolve(config.get("process_results"), config["__dir__"])
    metric_names = [e["metric"] for e in config.get("metric_list") or []]
    scores: dict[str, Any] = {}
    random.seed(case.get("seed", 0))
    for filter_name, steps in _filters(config):
        values: list[Any] = [[a] for a in answers]
        for step in steps:
            values = list(step.apply(values, docs))
        per_metric: dict[str, list[Any]] = {}
        for doc, value in zip(docs, values):
            filtered = value if isinstance(value, str) else value[0] if isinstance(value, list) else value
            if callable(process):
                result = process(doc, [filtered])
            else:
                result = _builtin_metrics(config, doc, filtered)
            for metric, item in result.items():
                if not metric_names or metric in metric_names:
                    per_metric.setdefault(metric, []).append(item)
        for metric, items in per_metric.items():
            scores[f"{metric},{filter_name}"] = _plain(_aggregate(config, metric, items, tmp))
    return scores


def _plain(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    return value


def main() -> None:
    cases = json.load(sys.stdin)
    real_stdout, sys.stdout = sys.stdout, sys.stderr  # the published code prints; keep stdout JSON
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            try:
                out[case["task"]] = {"scores": score(case, tmp), "error": None}
            except Exception as exc:  # the published code raised: record why
                last = traceback.extract_tb(exc.__traceback__)[-1]
                where = f"{Path(last.filename).name}:{last.lineno}"
                out[case["task"]] = {"scores": {}, "error": f"{type(exc).__name__}: {exc} ({where})"}
    json.dump(out, real_stdout)


if __name__ == "__main__":
    main()
