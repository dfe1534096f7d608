"""``simple_evaluate`` and ``evaluate``: the orchestrator over the pipeline stages.

model resolve -> task load -> configure -> requests -> inference -> filters -> scoring ->
aggregation -> outputs. Each stage lives in its own module; this file only wires them together.
"""

from __future__ import annotations

import logging
import math
import os
import random
import sys
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from lmms_eval import aggregation, inference, postprocess, settings, throughput
from lmms_eval.api.context import AggregationContext
from lmms_eval.api.gate import RequestGate
from lmms_eval.api.group import ConfigurableGroup, Node
from lmms_eval.api.model import lmms
from lmms_eval.api.reasoning import DEFAULT_REASONING_TAGS, parse_reasoning_tags_config
from lmms_eval.api.task import ConfigurableTask
from lmms_eval.errors import ConfigError, ModelArgsError
from lmms_eval.loggers.results import RESULTS_SCHEMA_VERSION, OutputWriter
from lmms_eval.preflight import preflight
from lmms_eval.secrets import register_secrets_from
from lmms_eval.tasks import TaskManager
from lmms_eval.utils import (
    file_timestamp,
    hash_string,
    iso_timestamp,
    parse_arg_string,
    redact,
    sanitize_model_name,
    utc_now,
)

if TYPE_CHECKING:
    from lmms_eval.caching import RequestCache, ResponseCache, ResponseCacheSession

logger = logging.getLogger(__name__)

_DEFAULT = object()


def set_seeds(random_seed: int | None, numpy_seed: int | None, torch_seed: int | None) -> None:
    """Seed python, numpy and (only if already imported) torch."""
    if random_seed is not None:
        random.seed(random_seed)
    if numpy_seed is not None:
        np.random.seed(numpy_seed)
    if torch_seed is not None and "torch" in sys.modules:
        sys.modules["torch"].manual_seed(torch_seed)


def resolve_limit(limit: int | float | None, total: int) -> int | None:
    """``None``/negative: all; ``0 < limit < 1``: that fraction (rounded up); otherwise a count."""
    if limit is None or limit < 0:
        return None
    if 0 < limit < 1:
        return math.ceil(total * limit)
    if limit != int(limit):
        raise ConfigError(f"--limit must be a count or a fraction between 0 and 1, got {limit}")
    return int(limit)


def describe_model(model: str | lmms, force_simple: bool = False) -> dict[str, Any]:
    """Model id, backend class and name for the results file, without loading the model."""
    if isinstance(model, lmms):
        cls = type(model)
        return {
            "model": cls.__name__,
            "model_id": getattr(model, "_model_name", None) or cls.__name__,
            "model_backend": f"{cls.__module__}.{cls.__qualname__} ({'simple' if cls.is_simple else 'chat'})",
        }
    from lmms_eval.models import ensure_registry

    resolved = ensure_registry().resolve(model, force_simple)
    return {
        "model": model,
        "model_id": resolved.model_id,
        "model_backend": f"{resolved.class_path} ({resolved.model_type})",
    }


def _is_chat(model: str | lmms, force_simple: bool) -> bool:
    if isinstance(model, lmms):
        return not model.is_simple
    from lmms_eval.models import ensure_registry

    return not ensure_registry().resolve(model, force_simple).is_simple


def build_model(
    model: str | lmms,
    model_args: str | Mapping[str, Any] | None,
    batch_size: int | str | None,
    max_batch_size: int | None,
    device: str | None,
    force_simple: bool,
    trust_remote_code: bool = False,
) -> tuple[lmms, dict[str, Any]]:
    """The model instance and a description of it for the results file."""
    info = describe_model(model, force_simple)
    if isinstance(model, lmms):
        return model, info
    from lmms_eval.models import ensure_registry

    cls = ensure_registry().get_model_class(model, force_simple)
    extra = {"batch_size": batch_size, "max_batch_size": max_batch_size, "device": device}
    if trust_remote_code:  # only models whose constructor takes it receive it
        extra["trust_remote_code"] = True
    try:
        instance = cls.create_from_arg_string(model_args or "", extra)
    except ModelArgsError as exc:
        raise ModelArgsError(f"--model {model}: {exc}") from None
    instance._model_name = info["model_id"]
    return instance, info


def configure_tasks(
    leaves: Sequence[ConfigurableTask],
    model_names: Sequence[str],
    gen_kwargs: Mapping[str, Any] | None,
    num_fewshot: int | None,
    predict_only: bool,
    repeats: int | None,
    system_instruction: str | None,
    fewshot_seed: int | None,
    dataset_root: str | None = None,
) -> None:
    """Apply run-level overrides to each task (before the model loads)."""
    for task in leaves:
        task.set_model_names(*model_names)
        task.dataset_root = dataset_root
        if gen_kwargs and task.config.output_type.startswith("generate"):
            task.gen_kwargs_override = dict(gen_kwargs)
        if num_fewshot is not None and task.config.num_fewshot != 0:
            if num_fewshot and not task._fewshot_split_name():
                raise ConfigError(
                    f"task '{task.task_name}' has no split to draw {num_fewshot} few-shot examples from"
                )
            task.config.num_fewshot = num_fewshot
        elif task.config.num_fewshot is None:
            task.config.num_fewshot = 0
        if repeats is not None:
            task.config.repeats = int(repeats)
        task.predict_only = predict_only
        task.system_instruction = system_instruction
        if fewshot_seed is not None:
            task.fewshot_seed = fewshot_seed


def leaf_tasks(nodes: Mapping[str, Node]) -> list[ConfigurableTask]:
    leaves: list[ConfigurableTask] = []
    for node in nodes.values():
        leaves.extend(node.leaves() if isinstance(node, ConfigurableGroup) else [node])
    return leaves


def simple_evaluate(
    model: str | lmms,
    model_args: str | Mapping[str, Any] | None = None,
    tasks: str | Sequence[str] = (),
    num_fewshot: int | None = None,
    batch_size: int | str | None = None,
    max_batch_size: int | None = None,
    device: str | None = None,
    limit: int | float | None = None,
    offset: int = 0,
    bootstrap_iters: int = 1000,
    gen_kwargs: str | Mapping[str, Any] | None = None,
    task_manager: TaskManager | None = None,
    predict_only: bool = False,
    random_seed: int | None = 0,
    numpy_random_seed: int | None = 1234,
    torch_random_seed: int | None = 1234,
    fewshot_random_seed: int | None = 1234,
    system_instruction: str | None = None,
    log_samples: bool = True,
    force_simple: bool = False,
    trust_remote_code: bool = False,
    repeats: int | None = None,
    reasoning_tags: Any = _DEFAULT,
    output_path: str | None = None,
    show_progress: bool | None = None,
    write_out: bool = False,
    baseline: str | None = None,
    max_tokens: int | None = None,
    cli_args: Mapping[str, Any] | None = None,
    use_cache: str | None = None,
    cache_sampling: bool = False,
    cache_requests: str | bool | None = None,
    dataset_root: str | None = None,
    **unused: Any,
) -> dict[str, Any]:
    """Evaluate ``model`` (an id or an ``lmms`` instance) on ``tasks`` and return the results dict.

    With ``output_path`` the results JSON and (with ``log_samples``) per-sample JSONL files are
    written under ``{output_path}/{model_name_sanitized}/`` as the run progresses.

    ``use_cache`` (a folder; default from ``LMMS_EVAL_USE_CACHE``) puts the response cache in front
    of the model: answers are stored as they arrive and reused by later runs (deterministic
    requests only, unless ``cache_sampling``). For a model instance, ``model_args`` (otherwise
    unused) tell the cache apart different configurations of it. ``cache_requests``
    (``true``/``refresh``/``delete``) stores the built requests of tasks (see
    :mod:`lmms_eval.caching.request_cache`).

    ``dataset_root`` (default from ``LMMS_EVAL_DATASET_ROOT``) is a folder of local copies of Hub
    datasets, used instead of the Hub (see :mod:`lmms_eval.data.dataset_root`).
    """
    if unused:
        logger.warning("simple_evaluate ignores unknown arguments: %s", ", ".join(sorted(unused)))
    started = utc_now()
    start_clock = time.perf_counter()
    register_secrets_from(parse_arg_string(model_args))
    limit, offset = settings.check_limit(limit), settings.check_offset(offset)
    repeats, max_tokens = settings.check_repeats(repeats), settings.check_max_tokens(max_tokens)
    bootstrap_iters = settings.check_bootstrap_iters(bootstrap_iters)
    for seed in (random_seed, numpy_random_seed, torch_random_seed, fewshot_random_seed):
        settings.check_seed(seed)
    set_seeds(random_seed, numpy_random_seed, torch_random_seed)
    task_names = [t.strip() for t in tasks.split(",")] if isinstance(tasks, str) else list(tasks)
    if not task_names:
        raise ConfigError("no tasks given; pass --tasks (run 'lmms-eval tasks list' to see them)")
    parsed_gen_kwargs = settings.check_gen_kwargs(gen_kwargs)
    baseline_scores = None
    if baseline:  # loaded first: a bad path fails before any model time is spent
        from lmms_eval.compare import load_doc_scores

        baseline_scores = load_doc_scores(baseline)
    # everything that can be checked without the model is checked before it loads
    cache, request_cache = _open_caches(use_cache, cache_requests)
    model_info = describe_model(model, force_simple)
    model_names = [str(model) if isinstance(model, str) else "", model_info["model_id"]]
    manager = task_manager or TaskManager(model_name=model_names[0] or None)
    nodes = manager.load_task_or_group(task_names)
    leaves = leaf_tasks(nodes)
    configure_tasks(
        leaves,
        model_names,
        parsed_gen_kwargs,
        num_fewshot,
        predict_only,
        repeats,
        system_instruction,
        fewshot_random_seed,
        dataset_root,
    )
    preflight(leaves, output_path=output_path, chat=_is_chat(model, force_simple))
    model_args_dict = parse_arg_string(model_args) if not isinstance(model, lmms) else {}
    writer = None
    if output_path:
        folder = sanitize_model_name(model_info["model_id"], model_args_dict)
        writer = OutputWriter(output_path, folder, timestamp=file_timestamp(started))

    lm, model_info = build_model(
        model, model_args, batch_size, max_batch_size, device, force_simple, trust_remote_code
    )
    for task in leaves:
        lm.task_dict[task.task_name] = task.model_docs()
    tags = parse_reasoning_tags_config(
        DEFAULT_REASONING_TAGS if reasoning_tags is _DEFAULT else reasoning_tags
    )
    recorded = {
        "model_args": model_args_dict if not isinstance(model_args, str) else model_args,
        "batch_size": batch_size,
        "max_batch_size": max_batch_size,
        "device": device,
        "limit": limit,
        "offset": offset,
        "bootstrap_iters": bootstrap_iters,
        "bootstrap_seed": random_seed if random_seed is not None else 1234,
        "gen_kwargs": parsed_gen_kwargs,
        "random_seed": random_seed,
        "numpy_seed": numpy_random_seed,
        "torch_seed": torch_random_seed,
        "fewshot_seed": fewshot_random_seed,
        "repeats": repeats,
        "predict_only": predict_only,
        "reasoning_tags": tags,
        "baseline": baseline,
        "max_tokens": max_tokens,
        "use_cache": str(cache.path) if cache is not None else None,
        "cache_sampling": cache_sampling,
        "cache_requests": request_cache.mode if request_cache is not None else None,
        "dataset_root": dataset_root,
        "resolved_cli_args": dict(cli_args or {}),
    }
    header = _results_header(model_info, model_args_dict, recorded, system_instruction, started)
    session = None
    if cache is not None:
        from lmms_eval.caching import ResponseCacheSession

        session = ResponseCacheSession(
            cache,
            model_info["model_id"],
            parse_arg_string(model_args),
            cache_sampling=cache_sampling,
            lm=lm,
        )
    try:
        results = evaluate(
            lm,
            nodes,
            limit=limit,
            offset=offset,
            bootstrap_iters=bootstrap_iters,
            log_samples=log_samples,
            reasoning_tags=tags,
            writer=writer,
            header=header,
            show_progress=show_progress,
            seed=random_seed if random_seed is not None else 1234,
            write_out=write_out,
            baseline=baseline_scores,
            max_tokens=max_tokens,
            response_cache=session,
            request_cache=request_cache,
        )
    except EvaluationInterrupted as exc:
        _finish(exc.results, header, writer, started, start_clock)
        raise
    finally:
        if writer is not None:
            writer.close()
        if session is not None:
            session.close()
        elif cache is not None:
            cache.close()
    return _finish(results, header, writer, started, start_clock)


def _finish(
    results: dict[str, Any],
    header: Mapping[str, Any],
    writer: OutputWriter | None,
    started: Any,
    start_clock: float,
) -> dict[str, Any]:
    """Add the run description, times, versions and file names; write the final results file."""
    results.update(header)
    results["end_time"] = iso_timestamp(utc_now())
    results["date"] = file_timestamp(started)
    results["total_evaluation_time_seconds"] = round(time.perf_counter() - start_clock, 3)
    results.update(_version_info())
    if writer is not None:
        files: dict[str, Any] = {"results": writer.results_path}
        samples = {t: writer.samples_path(t) for t in results["results"]}
        samples = {t: path for t, path in samples.items() if os.path.exists(path)}
        if samples:
            files["samples"] = samples
        if results.get("submissions"):
            files["submissions"] = results.pop("submissions")
        results["output_files"] = files
        writer.write_results(results)
        if writer.error:  # a full disk: the scores are still returned (and printed by the CLI)
            results["output_error"] = writer.error
    return results


def _open_caches(
    use_cache: str | None, cache_requests: str | bool | None
) -> tuple[ResponseCache | None, RequestCache | None]:
    """The response cache (``use_cache`` or ``LMMS_EVAL_USE_CACHE``) and the request cache, if on."""
    from lmms_eval.caching import RequestCache, ResponseCache, parse_cache_requests, resolve_cache_path

    mode = parse_cache_requests(cache_requests)
    request_cache = RequestCache(mode) if mode else None
    path = resolve_cache_path(use_cache)
    return (ResponseCache(path) if path is not None else None), request_cache


def _results_header(
    model_info: Mapping[str, Any],
    model_args: Mapping[str, Any],
    settings: Mapping[str, Any],
    system_instruction: str | None,
    started: Any,
) -> dict[str, Any]:
    """The run description stored at the top of the results file (secrets redacted)."""
    return {
        "schema_version": RESULTS_SCHEMA_VERSION,
        "config": redact({**model_info, **settings}),
        "model_name": model_info["model_id"],
        "model_name_sanitized": sanitize_model_name(model_info["model_id"], model_args),
        "system_instruction": system_instruction,
        "system_instruction_sha": hash_string(system_instruction) if system_instruction else None,
        "start_time": iso_timestamp(started),
    }


def _version_info() -> dict[str, Any]:
    from lmms_eval import __version__
    from lmms_eval.utils import git_info

    git = git_info()
    return {"lmms_eval_version": __version__, "git_hash": git.get("commit"), "git_branch": git.get("branch")}


def evaluate(
    lm: lmms,
    task_dict: Mapping[str, Node],
    limit: int | float | None = None,
    offset: int = 0,
    bootstrap_iters: int = 1000,
    log_samples: bool = True,
    reasoning_tags: list[tuple[str, str]] | None = None,
    writer: OutputWriter | None = None,
    header: Mapping[str, Any] | None = None,
    show_progress: bool | None = None,
    seed: int = 1234,
    write_out: bool = False,
    baseline: Any = None,
    max_tokens: int | None = None,
    response_cache: ResponseCacheSession | None = None,
    request_cache: RequestCache | None = None,
) -> dict[str, Any]:
    """Run the loaded tasks through ``lm`` and aggregate the scores.

    Tasks run one after another (requests -> inference -> filters -> scoring -> files), so a
    failure in a later task leaves every earlier task's scores and samples on disk.
    """
    leaves = leaf_tasks(task_dict)
    results: dict[str, Any] = {
        "results": {},
        "groups": {},
        "group_subtasks": {},
        "configs": {t.task_name: t.dump_config() for t in leaves},
        "versions": {t.task_name: t.VERSION for t in leaves},
        "n-shot": {t.task_name: t.config.num_fewshot or 0 for t in leaves},
        "higher_is_better": {t.task_name: t.higher_is_better() for t in leaves},
        "n-samples": {},
        "task_hashes": {},
        "timings": {},
        "throughput": {},
        "usage": {"by_task": {}},
        "failures": {},
    }
    gate = RequestGate(max_tokens)
    run = _TaskRunner(
        lm, gate, results, limit, offset, log_samples, reasoning_tags, writer, header, show_progress
    )
    current = ""
    try:
        for task in leaves:
            current = task.task_name
            run.task(task, bootstrap_iters, seed, write_out, baseline, response_cache, request_cache)
    except KeyboardInterrupt:
        gate.stop("interrupted")
        results["status"] = "interrupted"
        results["interrupted_task"] = current
        _usage_totals(results, gate)
        logger.warning("interrupted during task %s; the tasks finished before are kept", current)
        raise EvaluationInterrupted(results) from None

    group_scores, group_subtasks = aggregation.aggregate_groups(task_dict, run.task_results, run.scores)
    results["groups"] = group_scores
    results["group_subtasks"] = group_subtasks
    for name, node in _all_groups(task_dict).items():
        results["versions"][name] = node.VERSION
    _usage_totals(results, gate)
    results["status"] = "completed_with_failures" if results["failures"] else "completed"
    if response_cache is not None:
        results["cache"] = response_cache.summary()
    if request_cache is not None:
        results["request_cache"] = request_cache.summary()
    return results


class EvaluationInterrupted(KeyboardInterrupt):
    """Ctrl-C during a run. ``results`` holds the tasks finished before it (``status: interrupted``)."""

    def __init__(self, results: dict[str, Any]) -> None:
        super().__init__("interrupted")
        self.results = results


def _usage_totals(results: dict[str, Any], gate: RequestGate) -> None:
    state = gate.state()
    usage = results["usage"]
    usage["total"] = throughput.total_usage(usage["by_task"].values())
    usage["budget_total_tokens"] = state.budget
    usage["budget_used_tokens"] = state.used_tokens if state.budget is not None else None
    usage["budget_exceeded"] = state.budget_exhausted


class _TaskRunner:
    """Runs one task at a time: requests -> inference -> filters -> scoring -> files."""

    def __init__(
        self,
        lm: lmms,
        gate: RequestGate,
        results: dict[str, Any],
        limit: int | float | None,
        offset: int,
        log_samples: bool,
        reasoning_tags: list[tuple[str, str]] | None,
        writer: OutputWriter | None,
        header: Mapping[str, Any] | None,
        show_progress: bool | None,
    ) -> None:
        self.lm, self.gate, self.results = lm, gate, results
        self.limit, self.offset, self.log_samples = limit, offset, log_samples
        self.reasoning_tags, self.writer, self.header = reasoning_tags, writer, header
        self.show_progress = show_progress
        self.scores: dict[str, dict[str, Any]] = {}
        self.task_results: dict[str, aggregation.TaskResult] = {}

    def task(
        self,
        task: ConfigurableTask,
        bootstrap_iters: int,
        seed: int,
        write_out: bool,
        baseline: Any,
        response_cache: ResponseCacheSession | None,
        request_cache: RequestCache | None,
    ) -> None:
        lm, results, name, writer = self.lm, self.results, task.task_name, self.writer
        requests = _build_requests(lm, task, self.limit, self.offset, write_out, request_cache)
        results["n-samples"][name] = {
            "original": len(task.eval_docs),
            "effective": len({r.doc_id for r in requests}),
        }
        model_call = None
        if response_cache is not None:
            model_call = response_cache.model_call(lm, {name: task.fingerprint()})
        self.gate.start_task(name)
        timings = inference.run_requests(
            lm, requests, model_call=model_call, show_progress=self.show_progress, gate=self.gate
        )
        results["timings"][name] = {k: round(v, 4) for k, v in timings.items()}
        results["throughput"][name] = throughput.summarize(name, requests, sum(timings.values()))
        postprocess.apply_filters(task, requests, self.reasoning_tags)
        sink = writer.write_sample if writer is not None else None
        task_result = postprocess.score_task(task, requests, self.log_samples, sink, self.show_progress)
        self.task_results[name] = task_result
        results["usage"]["by_task"][name] = throughput.usage(requests)
        if task_result.failed:
            results["n-samples"][name]["failed"] = len(task_result.failed)
            results["failures"][name] = throughput.failure_summary(task_result.failed)
            _log_not_sent(name, results["failures"][name], self.gate)
        context = AggregationContext(
            name,
            writer.directory if writer is not None else None,
            writer.timestamp if writer is not None else None,
        )
        self.scores[name] = aggregation.aggregate_task(task_result, bootstrap_iters, seed, context)
        if context.written:
            results.setdefault("submissions", {})[name] = context.written
        if baseline is not None:
            self.scores[name].update(_against_baseline(task_result, baseline))
        results["results"][name] = self.scores[name]
        results["task_hashes"][name] = _task_hash(task, requests)
        if writer is not None:
            writer.close_samples(name)
            writer.write_results({**(self.header or {}), **results, "status": "running"})


def _log_not_sent(task_name: str, summary: Mapping[str, Any], gate: RequestGate) -> None:
    """Say why documents were not asked (token budget, circuit breaker)."""
    not_sent = summary.get("by_kind", {}).get("not_sent", 0)
    if not not_sent:
        return
    state = gate.state()
    if state.breaker_open:
        logger.error("task %s: %s", task_name, state.breaker_open.removeprefix("not sent: "))
    elif state.budget_exhausted:
        logger.warning(
            "task %s: the --max_tokens budget of %s was spent (%d tokens used); %d document(s) were not asked",
            task_name,
            state.budget,
            state.used_tokens,
            not_sent,
        )


def _build_requests(
    lm: lmms,
    task: ConfigurableTask,
    limit: int | float | None,
    offset: int,
    write_out: bool,
    request_cache: RequestCache | None = None,
) -> list[Any]:
    lm.task_dict.setdefault(task.task_name, task.model_docs())
    task_limit = resolve_limit(limit, len(task.eval_docs))
    where = {"limit": task_limit, "offset": offset, "rank": lm.rank, "world_size": lm.world_size}
    if request_cache is not None:
        requests = request_cache.build(task, chat=not lm.is_simple, **where)
    else:
        requests = task.build_all_requests(chat=not lm.is_simple, **where)
    if write_out and requests:
        _write_out(task, requests[0])
    logger.info("task %s: %d requests", task.task_name, len(requests))
    return requests


def _against_baseline(result: aggregation.TaskResult, baseline: Any) -> dict[str, Any]:
    """Paired comparison of one task's per-doc scores with the baseline run's (``--baseline``)."""
    from lmms_eval.compare import RunScores, TaskScores, baseline_comparison

    task = result.task
    current = TaskScores(task.task_name, task.config.score_key, task.config.cluster_key)
    docs = task.scoring_docs
    for (metric, filter_key), values in result.sample_metrics.items():
        for doc_id, value in zip(result.sample_doc_ids[(metric, filter_key)], values):
            current.add(
                doc_id,
                metric,
                filter_key,
                value,
                postprocess.doc_hash(docs[doc_id]),
                result.clusters.get(doc_id),
            )
    run = RunScores("current run", {task.task_name: current})
    return baseline_comparison(run, baseline).get(task.task_name, {})


def _write_out(task: ConfigurableTask, request: Any) -> None:
    """Print the prompt and target of a task's first request (``--write_out``)."""
    doc = task.eval_docs[request.doc_id]
    prompt = postprocess.prompt_text(task, request)
    try:
        target = task.gold_text(doc) if task.config.doc_to_target is not None else ""
    except Exception as exc:  # the target is informative only
        target = f"<could not render: {exc}>"
    print(f"--- {task.task_name} doc {request.doc_id} ---\nprompt: {prompt!r}\ntarget: {target!r}")


def _all_groups(task_dict: Mapping[str, Node]) -> dict[str, ConfigurableGroup]:
    found: dict[str, ConfigurableGroup] = {}

    def visit(node: Node) -> None:
        if isinstance(node, ConfigurableGroup):
            found[node.group_name] = node
            for child in node.children:
                visit(child)

    for node in task_dict.values():
        visit(node)
    return found


def _task_hash(task: ConfigurableTask, requests: Sequence[Any]) -> str:
    docs = task.scoring_docs
    ids = sorted({r.doc_id for r in requests})
    return hash_string("".join(postprocess.doc_hash(docs[i]) for i in ids))
