"""Pre-flight checks: everything about a run that can be checked without the model, checked before
the model loads or a request is paid for.

:func:`check_tasks` returns the problems it finds; :func:`preflight` raises them as one
:class:`PreflightError`. The checks, per task:

- configuration (no data needed): an evaluation split is set (``test_split`` or
  ``validation_split``), metric and aggregation names are registered (metric names only when the
  built-in scoring uses them, not for keys a ``process_results`` returns), the filter chains build,
  ``generation_kwargs`` are valid and Jinja templates compile;
- data (``data=True``): the dataset loads (a Hub dataset that cannot be reached is one line that
  names it and points at ``--dataset_root``), the evaluation split (and the few-shot split, when
  few-shot examples are drawn) exists, ``process_docs`` runs, and the media paths of the first
  ``media_docs`` documents exist. With ``chat`` given, the requests of those documents are built
  too: when every one of them fails the same way (``doc_to_text`` raising ``KeyError``), the task is
  broken. A single bad document is not a pre-flight problem of a run: the run records it as failed
  (also a single missing media file). ``tasks validate --data`` (no model, so ``chat`` is None)
  calls each sampled document's ``doc_to_*`` functions and reports every one that raises, and
  every missing media file.

The output folder is created when missing and must be writable. Loading the data here costs nothing
extra: the task keeps it, and the run uses what pre-flight loaded.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lmms_eval.errors import ConfigError, LmmsEvalError, did_you_mean

if TYPE_CHECKING:
    from lmms_eval.api.task import ConfigurableTask, DocFailure

logger = logging.getLogger(__name__)

MEDIA_PART_TYPES = ("image", "video", "audio")
_TEMPLATE_KEYS = ("doc_to_text", "doc_to_target", "doc_to_choice")


@dataclass(frozen=True)
class Problem:
    """One thing that would make a run fail or give wrong scores, found before it starts."""

    task: str | None  # None for run-level problems (the output folder)
    where: str  # the key or place: "metric_list", "test_split", "dataset", "doc 3", "output_path"
    message: str

    def __str__(self) -> str:
        prefix = f"task '{self.task}': " if self.task else ""
        return f"{prefix}{self.where}: {self.message}"


class PreflightError(ConfigError):
    """Pre-flight found problems; the message lists each one (the first on the first line)."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = list(problems)
        super().__init__(format_problems(self.problems))


def format_problems(problems: Sequence[Problem]) -> str:
    """The first problem, then ``(and N more:`` and one indented line per further problem."""
    if not problems:
        return "no problems"
    first = str(problems[0])
    if len(problems) == 1:
        return first
    rest = "\n".join(f"  {p}" for p in problems[1:])
    return f"{first} (and {len(problems) - 1} more:)\n{rest}"


def preflight(
    tasks: Sequence[ConfigurableTask],
    *,
    output_path: str | None = None,
    media_docs: int = 3,
    chat: bool | None = None,
    data: bool = True,
) -> None:
    """Run :func:`check_tasks` and raise :class:`PreflightError` listing every problem found.

    Before a run, a missing media file is a problem only when every sampled document misses its
    media (the data is not where the task looks); one missing file is that document's failure."""
    problems = check_tasks(
        tasks, output_path=output_path, media_docs=media_docs, chat=chat, data=data, each_missing_file=False
    )
    if problems:
        raise PreflightError(problems)
    logger.debug("pre-flight: %d task(s) checked, no problems", len(tasks))


def check_tasks(
    tasks: Sequence[ConfigurableTask],
    *,
    output_path: str | None = None,
    media_docs: int = 3,
    chat: bool | None = None,
    data: bool = True,
    each_missing_file: bool = True,
) -> list[Problem]:
    """Every problem of ``tasks`` (configured for the run) and of ``output_path`` that can be found
    without the model. ``data=False`` skips loading datasets (configuration checks only);
    ``chat`` (the model's request layout, when known) also builds the first documents' requests;
    ``each_missing_file=False`` reports missing media only when all sampled documents miss theirs."""
    problems: list[Problem] = []
    if output_path:
        problems.extend(check_output_path(output_path))
    for task in tasks:
        problems.extend(check_config(task))
        if data:
            problems.extend(
                check_data(task, media_docs=media_docs, chat=chat, each_missing_file=each_missing_file)
            )
    return problems


# -- the output folder ---------------------------------------------------------------------------


def check_output_path(output_path: str) -> list[Problem]:
    """The output folder's problem, if it cannot be created or written (the results writer's rule)."""
    from lmms_eval.results.writer import check_output_path as check_folder

    try:
        check_folder(output_path)
    except ConfigError as exc:
        where = f"--output_path {output_path}"
        return [Problem(None, where, str(exc).removeprefix(f"{where}: "))]
    return []


# -- configuration -------------------------------------------------------------------------------


def _problem(task: ConfigurableTask, where: str, message: str) -> Problem:
    """A problem of ``task``; a leading ``task 'x': `` in ``message`` is dropped (it is in the prefix)."""
    prefix = f"task '{task.task_name}': "
    message = message[len(prefix) :] if message.startswith(prefix) else message
    return Problem(task.task_name, where, " ".join(message.split()))


def check_config(task: ConfigurableTask) -> list[Problem]:
    """Problems of the task's configuration that need no data."""
    problems: list[Problem] = []
    cfg = task.config
    if not cfg.test_split and not cfg.validation_split:
        problems.append(
            _problem(
                task,
                "test_split",
                "no test_split or validation_split is set; set test_split to the split to evaluate",
            )
        )
    problems.extend(_metric_problems(task))
    try:
        from lmms_eval.api.filter import build_filter_ensembles

        build_filter_ensembles(cfg.filter_list, task.task_name)
    except Exception as exc:
        problems.append(_problem(task, "filter_list", _error_text(exc)))
    if cfg.output_type.startswith("generate"):
        try:
            task.generation_kwargs()
        except LmmsEvalError as exc:
            problems.append(_problem(task, "generation_kwargs", str(exc)))
    problems.extend(_template_problems(task))
    return problems


def _metric_problems(task: ConfigurableTask) -> Iterator[Problem]:
    from lmms_eval.api.registry import known_aggregations, known_metrics

    cfg = task.config
    if task.predict_only or not cfg.metric_list:
        return
    metrics, aggregations = known_metrics(), known_aggregations()
    builtin_scoring = cfg.process_results is None and cfg.process_results_batch is None
    for metric in cfg.metric_list:
        name = metric.metric
        if builtin_scoring and isinstance(name, str) and name not in metrics:
            yield _problem(
                task,
                "metric_list",
                f"unknown metric '{name}'.{did_you_mean(name, metrics)} The built-in "
                f"scoring knows: {', '.join(metrics)}; other names need a process_results",
            )
        agg = metric.aggregation
        if isinstance(agg, str) and agg not in aggregations:
            yield _problem(
                task,
                "metric_list",
                f"metric '{metric.name}': unknown aggregation '{agg}'."
                f"{did_you_mean(agg, aggregations)} Known: {', '.join(aggregations)}",
            )


def _template_problems(task: ConfigurableTask) -> Iterator[Problem]:
    from lmms_eval.api.doc_fields import compile_template

    for key in _TEMPLATE_KEYS:
        spec = getattr(task.config, key)
        if isinstance(spec, str) and ("{{" in spec or "{%" in spec):
            try:
                compile_template(spec, task.task_name, key)
            except ConfigError as exc:
                yield _problem(task, key, str(exc))


def _error_text(exc: BaseException) -> str:
    return str(exc) if isinstance(exc, LmmsEvalError) else f"{type(exc).__name__}: {exc}"


# -- data ----------------------------------------------------------------------------------------


def check_data(
    task: ConfigurableTask, *, media_docs: int = 3, chat: bool | None = None, each_missing_file: bool = True
) -> list[Problem]:
    """Problems found by loading the task's dataset and looking at its first ``media_docs`` docs."""
    cfg = task.config
    split_key = "test_split" if cfg.test_split else "validation_split"
    split = cfg.test_split or cfg.validation_split
    if not split:
        return []  # reported by check_config
    try:
        splits = task.dataset
    except Exception as exc:
        return [_problem(task, "dataset", _error_text(exc))]
    wanted = [(split_key, split)]
    fewshot = task._fewshot_split_name()
    if cfg.num_fewshot and fewshot:
        wanted.append(("fewshot_split", fewshot))
    missing = [
        _problem(
            task,
            key,
            f"split '{name}' is not in dataset '{cfg.dataset_path}'.{did_you_mean(name, splits)} "
            f"Splits: {', '.join(sorted(splits))}",
        )
        for key, name in wanted
        if name not in splits
    ]
    if missing:
        return missing
    try:
        docs = task.eval_docs
    except Exception as exc:
        where = "process_docs" if cfg.process_docs is not None else "dataset"
        return [_problem(task, where, _error_text(exc))]
    if len(docs) == 0:
        logger.warning("task %s: split '%s' has no documents", task.task_name, split)
        return []
    sample = range(min(max(media_docs, 0), len(docs)))
    if chat is not None:
        problems = _input_problems(task, docs, sample, chat)
    else:  # no model known (tasks validate): each document under every layout the task has
        problems = _each_input_problem(task, docs, sample) if each_missing_file else []
    media = [_media_problems(task, doc_id, docs[doc_id], chat) for doc_id in sample]
    if each_missing_file or (media and all(media)):  # all missing: the data is not where it is looked for
        problems.extend(problem for found in media for problem in found)
    else:  # a few missing files are those documents' failures (recorded, not scored), not the run's
        for problem in (problem for found in media for problem in found):
            logger.warning("%s; that document will be recorded as a failure", problem)
    return problems


def _input_problems(task: ConfigurableTask, docs: Any, sample: range, chat: bool) -> list[Problem]:
    """A problem when every sampled doc's requests fail to build the same way (a broken task)."""
    failures: list[DocFailure] = []
    for doc_id in sample:
        failure = task.check_doc_inputs(doc_id, docs[doc_id], chat)
        if failure is None:
            return []
        failures.append(failure)
    if not failures or not all(failures[0].same_kind(f) for f in failures[1:]):
        return []
    first = failures[0]
    if isinstance(first.exception, LmmsEvalError):
        return [_problem(task, first.function, str(first.exception))]
    n = len(failures)
    return [
        _problem(
            task,
            first.function,
            f"raised on {'each of the first ' + str(n) + ' documents' if n > 1 else 'the first document'}; "
            f"doc {first.doc_id}: {first.error}",
        )
    ]


def _each_input_problem(task: ConfigurableTask, docs: Any, sample: range) -> list[Problem]:
    """One problem per sampled doc whose ``doc_to_*`` functions raise, for the request layouts the
    task has (chat messages when it has ``doc_to_messages``, the simple layout when it has more)."""
    cfg = task.config
    layouts = [True] if cfg.doc_to_messages is not None else []
    if cfg.doc_to_messages is None or cfg.doc_to_visual is not None or cfg.doc_to_text is not None:
        layouts.append(False)
    problems: list[Problem] = []
    for doc_id in sample:
        for chat in layouts:
            failure = task.check_doc_inputs(doc_id, docs[doc_id], chat)
            if failure is not None:
                problems.append(_problem(task, f"doc {doc_id}", f"{failure.function} raised {failure.error}"))
                break
    return problems


def _media_problems(task: ConfigurableTask, doc_id: int, doc: Any, chat: bool | None) -> list[Problem]:
    """Media paths of one doc (from doc_to_visual / doc_to_audio / doc_to_messages) that do not exist."""
    try:
        values, source = _media_values(task, doc_id, doc, chat)
    except LmmsEvalError as exc:
        return [_problem(task, f"doc {doc_id}", str(exc))]
    except Exception as exc:  # one bad doc is the run's per-document failure, not a pre-flight problem
        logger.debug("task %s doc %s: %s raised %r during pre-flight", task.task_name, doc_id, "media", exc)
        return []
    problems = []
    for path in dict.fromkeys(_local_paths(values)):
        if not os.path.exists(path):
            problems.append(
                _problem(
                    task, f"doc {doc_id}", f"{source} gives the media file '{path}', which does not exist"
                )
            )
    return problems


def _media_values(task: ConfigurableTask, doc_id: int, doc: Any, chat: bool | None) -> tuple[list[Any], str]:
    cfg = task.config
    use_messages = cfg.doc_to_messages is not None and (
        chat is True or (chat is None and cfg.doc_to_visual is None and cfg.doc_to_audio is None)
    )
    if use_messages:
        values: list[Any] = []
        for message in task.build_messages(doc, doc_id):
            content = message.get("content") if isinstance(message, dict) else None
            for part in content if isinstance(content, list) else []:
                if isinstance(part, dict) and part.get("type") in MEDIA_PART_TYPES:
                    values.append(part.get("url"))
        return values, "doc_to_messages"
    values = list(task.doc_to_visual(doc)) if cfg.doc_to_visual is not None else []
    if cfg.doc_to_audio is not None:
        values.extend(task.doc_to_audio(doc))
    return values, "doc_to_visual" if cfg.doc_to_audio is None else "doc_to_visual/doc_to_audio"


def _local_paths(values: Sequence[Any]) -> Iterator[str]:
    """The values that are local file paths (strings, or the path of a media dict); URLs and data
    URIs are left alone."""
    for value in values:
        if isinstance(value, dict):
            value = value.get("path") or value.get("url") or value.get("video")
        if not isinstance(value, str) or not value or len(value) > 4096 or "\n" in value:
            continue
        if "://" in value or value.startswith("data:"):
            continue
        yield value
