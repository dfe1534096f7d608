"""``simple_evaluate`` and ``evaluate``: the orchestrator over the pipeline stages.

model resolve -> task load -> configure -> requests -> inference -> filters -> scoring ->
aggregation -> outputs. Each stage lives in its own module; this file only wires them together.
"""

from __future__ import annotations

import inspect
import logging
import math
import os
import random
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from lmms_eval import aggregation, inference, postprocess, throughput
from lmms_eval.api.context import AggregationContext
from lmms_eval.api.gate import RequestGate
from lmms_eval.api.group import ConfigurableGroup, Node
from lmms_eval.api.model import lmms
from lmms_eval.api.reasoning import parse_reasoning_tags_config
from lmms_eval.api.task import ConfigurableTask, TaskRunOptions
from lmms_eval.distributed import RankFailed, RunGroup, run_group
from lmms_eval.errors import ConfigError, ModelArgsError
from lmms_eval.loggers.run_loggers import RunLoggers
from lmms_eval.preflight import preflight
from lmms_eval.results import SCHEMA_VERSION, OutputWriter
from lmms_eval.results.docs import doc_hash
from lmms_eval.secrets import register_secrets_from
from lmms_eval.settings import EvalSettings
from lmms_eval.settings import checks as settings_checks
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


@dataclass(frozen=True)
class RunProgress:
    """Where a run is: its ``task_number``-th task of ``task_count``, requests answered of ``total``."""

    task: str
    task_number: int
    task_count: int
    request_type: str
    done: int
    total: int
    elapsed_s: float

    def eta_s(self) -> float | None:
        """Seconds left in this task's current request type, at the rate so far."""
        if self.done <= 0 or self.total <= 0:
            return None
        return round(self.elapsed_s / self.done * (self.total - self.done), 1)


ProgressCallback = Callable[[RunProgress], None]


def set_seeds(random_seed: int | None, numpy_seed: int | None, torch_seed: int | None) -> None:
    """Seed python, numpy and (only if already imported) torch, and the published-fallback stream
    (:mod:`lmms_eval.scoring.published`, its own ``random.Random`` seeded like python's)."""
    from lmms_eval.scoring import published

    published.reseed(random_seed)
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


def build_model(settings: EvalSettings, lm: lmms | None = None) -> tuple[lmms, dict[str, Any]]:
    """The model instance (``lm``, or built from the settings) and its description for the results."""
    model: str | lmms = lm if lm is not None else settings.model
    info = describe_model(model, settings.force_simple)
    if isinstance(model, lmms):
        _check_chat_template(model, settings.apply_chat_template, info["model"])
        return model, info
    from lmms_eval.models import ensure_registry

    cls = ensure_registry().get_model_class(model, settings.force_simple)
    extra: dict[str, Any] = {
        "batch_size": settings.batch_size,
        "max_batch_size": settings.max_batch_size,
        "device": settings.device,
    }
    if settings.trust_remote_code:  # only models whose constructor takes it receive it
        extra["trust_remote_code"] = True
    template = settings.apply_chat_template
    if isinstance(template, str):
        if "chat_template" not in inspect.signature(cls.__init__).parameters:
            raise ConfigError(
                f"--apply_chat_template: model '{model}' does not take a chat template "
                "(its constructor has no chat_template argument)"
            )
        extra["chat_template"] = template
    try:
        instance = cls.create_from_arg_string(settings.model_args or "", extra)
    except ModelArgsError as exc:
        raise ModelArgsError(f"--model {model}: {exc}") from None
    instance._model_name = info["model_id"]
    _check_chat_template(instance, template, model)
    return instance, info


def _check_chat_template(lm: lmms, wanted: bool | str, name: str) -> None:
    """``--apply_chat_template`` asks for a chat template: a model that has none is an error."""
    if wanted is True and hasattr(lm, "chat_template") and not getattr(lm, "chat_template", None):
        raise ConfigError(f"--apply_chat_template: model '{name}' has no chat template; pass one as TEMPLATE")


def task_options(settings: EvalSettings, model_names: Sequence[str]) -> TaskRunOptions:
    """The run options every task receives at configure time."""
    return TaskRunOptions(
        model_names=tuple(n for n in model_names if n),
        gen_kwargs=settings_checks.check_gen_kwargs(settings.gen_kwargs),
        num_fewshot=settings.num_fewshot,
        repeats=settings.repeats,
        predict_only=settings.predict_only,
        system_instruction=settings.system_instruction,
        fewshot_seed=settings.seed[3],
        dataset_root=settings.dataset_root,
        fewshot_as_multiturn=settings.fewshot_as_multiturn,
        process_with_media=settings.process_with_media,
    )


def configure_tasks(leaves: Sequence[ConfigurableTask], options: TaskRunOptions, chat: bool) -> None:
    """Give each task the run's options (before the model loads)."""
    for task in leaves:
        task.configure(options)
    if options.fewshot_as_multiturn:
        if not chat:
            raise ConfigError(
                "--fewshot_as_multiturn needs a chat model; this model takes plain text prompts"
            )
        if not any(task.config.num_fewshot for task in leaves):
            raise ConfigError(
                "--fewshot_as_multiturn: no selected task uses few-shot examples (pass --num_fewshot N)"
            )


def leaf_tasks(nodes: Mapping[str, Node]) -> list[ConfigurableTask]:
    leaves: list[ConfigurableTask] = []
    for node in nodes.values():
        leaves.extend(node.leaves() if isinstance(node, ConfigurableGroup) else [node])
    return leaves


def simple_evaluate(
    model: str | lmms,
    model_args: str | Mapping[str, Any] | None = None,
    tasks: str | Sequence[str] = (),
    *,
    task_manager: TaskManager | None = None,
    show_progress: bool | None = None,
    cli_args: Mapping[str, Any] | None = None,
    **options: Any,
) -> dict[str, Any]:
    """Evaluate ``model`` (an id or an ``lmms`` instance) on ``tasks`` and return the results dict.

    Every other keyword is a run option of :class:`~lmms_eval.settings.EvalSettings` under its
    command-line name (``limit=8``, ``num_fewshot=0``, ``output_path=...``, ``log_samples=True``,
    ``use_cache=...``), plus the seed keywords ``random_seed``, ``numpy_random_seed``,
    ``torch_random_seed`` and ``fewshot_random_seed``. An unknown keyword is an error that names
    the closest option. See ``lmms-eval eval --help`` for every option.

    With ``output_path`` the results JSON (and with ``log_samples`` the per-sample JSONL files) are
    written under ``{output_path}/{model_name_sanitized}/`` as the run progresses. For a model
    instance, ``model_args`` (otherwise unused) tell the response cache apart different
    configurations of it.
    """
    keywords: dict[str, Any] = {
        "model": model if isinstance(model, str) else type(model).__name__,
        "model_args": model_args or "",
        "tasks": [tasks] if isinstance(tasks, str) else list(tasks),
        **options,
    }
    settings = EvalSettings.from_keywords("simple_evaluate", **keywords)
    lm = model if isinstance(model, lmms) else None
    return run_evaluation(settings, lm, task_manager, show_progress, cli_args)


def run_evaluation(
    settings: EvalSettings,
    lm: lmms | None = None,
    task_manager: TaskManager | None = None,
    show_progress: bool | None = None,
    cli_args: Mapping[str, Any] | None = None,
    progress: ProgressCallback | None = None,
) -> dict[str, Any]:
    """Evaluate with validated ``settings`` (the command line and :func:`simple_evaluate` end here).

    Everything that can be checked without the model (tasks, caches, output folder, baseline) is
    checked before the model loads. ``progress`` hears each answered request (the eval server's
    workers report it). Launched as several processes (torchrun, accelerate, srun), each rank
    answers its share and rank 0 scores and writes; every rank returns rank 0's results, and a
    failure on any rank fails all of them with :class:`~lmms_eval.distributed.RankFailed`.
    """
    from lmms_eval.data.dataset_root import exported_root

    group = run_group()
    try:
        with exported_root(settings.dataset_root):
            return _run_evaluation(settings, lm, task_manager, show_progress, cli_args, progress, group)
    except BaseException as exc:
        failure = group.failed(exc)
        group.finish(failed=True)
        if failure is exc:
            raise
        raise failure from None


def _run_evaluation(
    settings: EvalSettings,
    lm: lmms | None,
    task_manager: TaskManager | None,
    show_progress: bool | None,
    cli_args: Mapping[str, Any] | None,
    progress: ProgressCallback | None,
    group: RunGroup,
) -> dict[str, Any]:
    started = utc_now()
    start_clock = time.perf_counter()
    register_secrets_from(parse_arg_string(settings.model_args))
    seeds = settings.seeds()
    set_seeds(seeds["random_seed"], seeds["numpy_random_seed"], seeds["torch_random_seed"])
    task_names = settings.task_names()
    if not task_names:
        raise ConfigError("no tasks given; pass --tasks (run 'lmms-eval tasks list' to see them)")
    baseline_scores = None
    if settings.baseline:  # loaded first: a bad path fails before any model time is spent
        from lmms_eval.compare import load_doc_scores

        baseline_scores = load_doc_scores(settings.baseline)
    loggers = RunLoggers.from_settings(settings)
    cache, request_cache = _open_caches(settings.use_cache, settings.cache_requests)
    model_info = describe_model(lm if lm is not None else settings.model, settings.force_simple)
    model_names = [settings.model if lm is None else "", model_info["model_id"]]
    chat = _is_chat(lm if lm is not None else settings.model, settings.force_simple)
    manager = task_manager or TaskManager(
        include_path=settings.include_path, model_name=model_names[0] or None
    )
    nodes = manager.load_task_or_group(task_names)
    leaves = leaf_tasks(nodes)
    configure_tasks(leaves, task_options(settings, model_names), chat)
    output_path = settings.output_path if group.is_main else None  # rank 0 writes the files
    preflight(leaves, output_path=output_path, chat=chat)
    model_args = parse_arg_string(settings.model_args) if lm is None else {}
    writer = None
    if output_path:
        folder = sanitize_model_name(model_info["model_id"], model_args)
        stamp = file_timestamp(started, settings.timezone)
        writer = OutputWriter(output_path, folder, timestamp=stamp)

    lm, model_info = build_model(settings, lm)
    for task in leaves:
        lm.task_dict[task.task_name] = task.model_docs()
    recorded = _recorded(settings, cache, request_cache, cli_args)
    header = _results_header(model_info, model_args, recorded, settings.system_instruction, started)
    header.update(_chat_template_info(lm))
    if group.world_size > 1:
        header["distributed"] = {"world_size": group.world_size, "launcher": group.info.launcher}
    session = _cache_session(cache, model_info, settings, lm)
    try:
        results = evaluate(
            lm,
            nodes,
            limit=settings.limit,
            offset=settings.offset,
            bootstrap_iters=settings.bootstrap_iters,
            ci_method=settings.ci_method,
            log_samples=settings.log_samples or settings.predict_only or loggers.writes_samples,
            reasoning_tags=parse_reasoning_tags_config(settings.reasoning_tags),
            writer=writer,
            header=header,
            show_progress=show_progress,
            seed=_bootstrap_seed(settings),
            write_out=settings.write_out,
            baseline=baseline_scores,
            max_tokens=settings.max_tokens,
            response_cache=session,
            request_cache=request_cache,
            progress=progress if group.is_main else None,
            group=group,
        )
    except EvaluationInterrupted as exc:
        _finish(exc.results, header, writer, started, start_clock)
        raise
    except RankFailed as exc:  # another rank failed: keep the tasks finished before
        if exc.results is not None and group.is_main:
            _finish(exc.results, header, writer, started, start_clock)
        raise
    finally:
        if writer is not None:
            writer.close()
        if session is not None:
            session.close()
        elif cache is not None:
            cache.close()
    results = _finish(results, header, writer, started, start_clock)
    results = group.share(results)
    if group.is_main:
        loggers.log(results, _images_of(leaves))
    return results


def _bootstrap_seed(settings: EvalSettings) -> int:
    return settings.seed[0] if settings.seed[0] is not None else 1234


def _recorded(
    settings: EvalSettings,
    cache: ResponseCache | None,
    request_cache: RequestCache | None,
    cli_args: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The run's settings as the results file records them (``config``): every run option, the
    seeds under their published names, and the resolved cache and bootstrap settings."""
    seeds = settings.seeds()
    recorded = settings.run_values()
    recorded.pop("seed")
    recorded.update(
        model_args=settings.model_args,
        gen_kwargs=settings_checks.check_gen_kwargs(settings.gen_kwargs),
        reasoning_tags=parse_reasoning_tags_config(settings.reasoning_tags),
        bootstrap_seed=_bootstrap_seed(settings),
        random_seed=seeds["random_seed"],
        numpy_seed=seeds["numpy_random_seed"],
        torch_seed=seeds["torch_random_seed"],
        fewshot_seed=seeds["fewshot_random_seed"],
        use_cache=str(cache.path) if cache is not None else None,
        cache_requests=request_cache.mode if request_cache is not None else None,
        resolved_cli_args=dict(cli_args) if cli_args is not None else settings.model_dump(),
    )
    return recorded


def _chat_template_info(lm: lmms) -> dict[str, Any]:
    """``chat_template`` and its hash, as the published results record them, where the model has one."""
    template = getattr(lm, "chat_template", None)
    if not isinstance(template, str) or not template:
        return {}
    return {"chat_template": template, "chat_template_sha": hash_string(template)}


def _cache_session(
    cache: ResponseCache | None, model_info: Mapping[str, Any], settings: EvalSettings, lm: lmms
) -> ResponseCacheSession | None:
    if cache is None:
        return None
    from lmms_eval.caching import ResponseCacheSession

    return ResponseCacheSession(
        cache,
        model_info["model_id"],
        parse_arg_string(settings.model_args),
        cache_sampling=settings.cache_sampling,
        lm=lm,
    )


def _images_of(leaves: Sequence[ConfigurableTask]) -> Callable[[str, int], list[Any]]:
    """The images a task shows the model for a doc (for loggers' sample tables)."""
    by_name = {task.task_name: task for task in leaves}

    def images(task_name: str, doc_id: int) -> list[Any]:
        task = by_name[task_name]
        return [v for v in task.doc_to_visual(task.eval_docs[doc_id]) if hasattr(v, "mode")]

    return images


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
        "schema_version": SCHEMA_VERSION,
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
    progress: ProgressCallback | None = None,
    group: RunGroup | None = None,
    ci_method: str = "wilson",
) -> dict[str, Any]:
    """Run the loaded tasks through ``lm`` and aggregate the scores.

    Tasks run one after another (requests -> inference -> filters -> scoring -> files), so a
    failure in a later task leaves every earlier task's scores and samples on disk. With a
    multi-process ``group`` each rank answers its share of every task and only rank 0 goes on
    to filters, scores and files (the other ranks return the results without scores).
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
    run.progress = progress
    run.group = group or RunGroup()
    run.ci_method = ci_method
    current = ""
    try:
        with inference.fewer_collections():
            for number, task in enumerate(leaves, 1):
                current = task.task_name
                run.position = (number, len(leaves))
                run.task(task, bootstrap_iters, seed, write_out, baseline, response_cache, request_cache)
    except KeyboardInterrupt:
        gate.stop("interrupted")
        results["status"] = "interrupted"
        results["interrupted_task"] = current
        _usage_totals(results, gate)
        logger.warning("interrupted during task %s; the tasks finished before are kept", current)
        raise EvaluationInterrupted(results) from None
    except RankFailed as exc:
        results.update(status="interrupted", interrupted_task=current, error=str(exc))
        _usage_totals(results, gate)
        exc.results = results
        raise
    cache_counts = run.group.sum_counts(response_cache.counts()) if response_cache is not None else None
    if not run.group.is_main:
        return results

    group_scores, group_subtasks = aggregation.aggregate_groups(task_dict, run.task_results, run.scores)
    results["groups"] = group_scores
    results["group_subtasks"] = group_subtasks
    for name, node in _all_groups(task_dict).items():
        results["versions"][name] = node.VERSION
    _usage_totals(results, gate)
    results["status"] = "completed_with_failures" if results["failures"] else "completed"
    if response_cache is not None:
        results["cache"] = response_cache.summary(cache_counts)
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
        self.progress: ProgressCallback | None = None
        self.group = RunGroup()
        self.ci_method = "wilson"  # the interval of 0/1 means (--ci_method)
        self.position: tuple[int, int] = (1, 1)
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
        self.group.stage = f"task {name}"
        requests = _build_requests(
            lm, task, self.limit, self.offset, write_out and self.group.is_main, request_cache
        )
        results["n-samples"][name] = {
            "original": len(task.eval_docs),
            "effective": len({r.doc_id for r in requests}),
        }
        model_call = None
        if response_cache is not None:
            model_call = response_cache.model_call(lm, {name: task.fingerprint()})
        self.gate.start_task(name)
        share = self.group.shard(requests)  # all of them in a single process
        timings = inference.run_requests(
            lm,
            share,
            model_call=model_call,
            show_progress=self.show_progress,
            gate=self.gate,
            listener=self._listener(name),
        )
        self.group.collect(requests, share, where=f"task {name}")
        if not self.group.is_main:  # rank 0 filters, scores and writes
            return
        results["timings"][name] = {k: round(v, 4) for k, v in timings.items()}
        results["throughput"][name] = throughput.summarize(name, requests, sum(timings.values()))
        postprocess.apply_filters(task, requests, self.reasoning_tags)
        sink = writer.write_sample if writer is not None else None
        task_result = postprocess.score_task(task, requests, self.log_samples, sink, self.show_progress)
        self.task_results[name] = task_result
        results["usage"]["by_task"][name] = throughput.usage(requests)
        throughput.add_efficiency(results, name, requests, task_result)
        if task_result.failed:
            results["n-samples"][name]["failed"] = len(task_result.failed)
            results["failures"][name] = throughput.failure_summary(task_result.failed)
            _log_not_sent(name, results["failures"][name], self.gate)
        context = AggregationContext(
            name,
            writer.directory if writer is not None else None,
            writer.timestamp if writer is not None else None,
        )
        self.scores[name] = aggregation.aggregate_task(
            task_result, bootstrap_iters, seed, context, binary_method=self.ci_method
        )
        if context.written:
            results.setdefault("submissions", {})[name] = context.written
        if baseline is not None:
            self.scores[name].update(_against_baseline(task_result, baseline))
        results["results"][name] = self.scores[name]
        results["task_hashes"][name] = _task_hash(task, requests)
        if writer is not None:
            writer.close_samples(name)
            writer.write_results({**(self.header or {}), **results, "status": "running"})

    def _listener(self, name: str) -> inference.ProgressListener | None:
        callback = self.progress
        if callback is None:
            return None
        number, count = self.position
        started: dict[str, float] = {}  # per request type: the ETA is for the current one

        def hear(request_type: str, done: int, total: int) -> None:
            elapsed = time.perf_counter() - started.setdefault(request_type, time.perf_counter())
            callback(RunProgress(name, number, count, request_type, done, total, elapsed))

        return hear


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
    # every rank builds every request; the run's RunGroup shards them
    where = {"limit": task_limit, "offset": offset, "rank": 0, "world_size": 1}
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
                doc_hash(docs[doc_id]),
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
    return hash_string("".join(doc_hash(docs[i]) for i in ids))
