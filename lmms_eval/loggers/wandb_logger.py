"""Weights & Biases logging of a finished run (``--wandb_args``, ``--wandb_log_samples``).

One call at the end of a run, after the results file is written::

    log_to_wandb(results, samples_from_files(results) if wandb_log_samples else None,
                 wandb_args, log_samples_suffix)

logs to one W&B run:

* the run config: the run settings of the results (``config``: model, model_args, seeds, ...) at
  the top level, and the model name, versions, n-shot, n-samples and task configs beside them;
* a summary value for every number of every task and group: ``<task>/<metric>,<filter>``,
  ``<task>/<metric>_stderr,<filter>``, ``<task>/<metric>_ci_lower,<filter>``, ..., ``<task>/samples``;
* the results table ``evaluation/results`` (task, version, filter, n-shot, metric, value, stderr,
  CI bounds) and ``evaluation/groups`` when groups aggregate;
* with samples, a table ``<task>/<log_samples_suffix>`` per task: doc_id, filter, input, target,
  filtered response, one column per metric, failed, error, and the doc's images when known.

Everything sent goes through :func:`lmms_eval.secrets.redact`; the command line W&B records is
redacted too. W&B is optional (``pip install 'lmms_eval[wandb]'``) and imported only here, inside
functions. A W&B failure never loses results: :func:`log_to_wandb` logs one error line and returns
``None`` (the results files are already written). :func:`check_wandb_args` validates the arguments
up front, before the evaluation.
"""

from __future__ import annotations

import base64
import contextlib
import inspect
import io
import json
import logging
import math
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from lmms_eval.errors import ConfigError, LmmsEvalError, MissingDependencyError, did_you_mean
from lmms_eval.secrets import redact, redact_text, register_secrets_from
from lmms_eval.utils import parse_arg_string

if TYPE_CHECKING:
    from PIL.Image import Image

    from lmms_eval.results.samples import SampleRecord

logger = logging.getLogger(__name__)

#: ``images_of(task, doc_id)``: the images of a document, shown in the samples table
ImagesOf = Callable[[str, int], "Sequence[Image]"]

DEFAULT_SUFFIX = "model_outputs"
MAX_IMAGES_PER_SAMPLE = 4
WANDB_MODES = ("online", "offline", "disabled", "shared")
# set by lmms-eval from the results, not by --wandb_args
_OWN_KEYS = frozenset({"config"})
# W&B settings for a run made at the end of an evaluation: no console capture (it would copy the
# terminal into the run), no system-metrics sampler, no W&B banners (we log where the run went)
_DEFAULT_SETTINGS: dict[str, Any] = {"console": "off", "silent": True, "x_disable_stats": True}
# top-level results keys copied into the run config (beside the run settings of ``config``)
_CONFIG_KEYS = (
    "schema_version",
    "model_name",
    "model_name_sanitized",
    "system_instruction",
    "lmms_eval_version",
    "git_hash",
    "git_branch",
    "date",
    "start_time",
    "end_time",
    "total_evaluation_time_seconds",
    "status",
    "versions",
    "n-shot",
    "n-samples",
    "task_hashes",
)


# --------------------------------------------------------------------------------------------
# arguments
# --------------------------------------------------------------------------------------------


def _import_wandb() -> Any:
    try:
        import wandb
    except ImportError:
        raise MissingDependencyError("wandb", "wandb", "Logging to Weights & Biases (--wandb_args)") from None
    return wandb


def _init_keys(wandb: Any) -> set[str] | None:
    """The keyword arguments ``wandb.init`` accepts (``None``: it takes any)."""
    parameters = inspect.signature(wandb.init).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    return {p.name for p in parameters if p.kind is not inspect.Parameter.VAR_POSITIONAL} - _OWN_KEYS


def check_wandb_args(args: str | Mapping[str, Any] | None) -> dict[str, Any]:
    """Parse and validate ``--wandb_args`` (``k=v,...`` or a mapping) into ``wandb.init`` arguments.

    Raises :class:`ConfigError` for a key ``wandb.init`` does not take (naming the valid ones) or
    a bad ``mode``/``tags``/``settings`` value, and :class:`MissingDependencyError` when W&B is not
    installed. Secret-looking values (``settings={"api_key": ...}``) are registered for redaction.
    """
    try:
        parsed = parse_arg_string(args)
    except LmmsEvalError as exc:
        raise ConfigError(f"--wandb_args: {exc}") from None
    wandb = _import_wandb()
    valid = _init_keys(wandb)
    for key in parsed:
        if key in _OWN_KEYS:
            raise ConfigError(
                f"--wandb_args: {key!r} is set by lmms-eval from the results (the run's settings); remove it"
            )
        if valid is not None and key not in valid:
            raise ConfigError(
                f"--wandb_args: unknown key {key!r}.{did_you_mean(key, valid)} "
                f"Valid keys (arguments of wandb.init): {', '.join(sorted(valid))}"
            )
    return _normalise(parsed)


def _normalise(parsed: dict[str, Any]) -> dict[str, Any]:
    mode = parsed.get("mode")
    if mode is not None and mode not in WANDB_MODES:
        raise ConfigError(f"--wandb_args: mode={mode!r} is not one of {', '.join(WANDB_MODES)}")
    tags = parsed.get("tags")
    if isinstance(tags, str):
        parsed["tags"] = [tags]  # several tags: tags=["a","b"]
    elif tags is not None and not (isinstance(tags, list) and all(isinstance(t, str) for t in tags)):
        raise ConfigError(
            f'--wandb_args: tags={tags!r} must be a tag or a JSON list of tags, e.g. tags=["a","b"]'
        )
    settings = parsed.get("settings")
    if settings is not None:
        if not isinstance(settings, Mapping):
            raise ConfigError(
                f'--wandb_args: settings={settings!r} must be a JSON object, e.g. settings={{"init_timeout": 60}}'
            )
        register_secrets_from(settings)
    for key in ("name", "notes", "group", "job_type", "project", "entity", "id"):
        if parsed.get(key) is not None and not isinstance(parsed[key], str):
            parsed[key] = str(parsed[key])  # name=2024 is a name, not a number
    return parsed


# --------------------------------------------------------------------------------------------
# what is logged
# --------------------------------------------------------------------------------------------


def _plain(obj: Any) -> Any:
    """JSON-able copy: NaN/inf -> None (as in the results file), tuples -> lists, others -> str."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj
    if isinstance(obj, Mapping):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [_plain(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item):  # numpy scalars
        return _plain(obj.item())
    if callable(obj):
        return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"
    return str(obj)


def run_config(results: Mapping[str, Any]) -> dict[str, Any]:
    """The W&B run config of a results dict (secrets redacted)."""
    config: dict[str, Any] = {key: results[key] for key in _CONFIG_KEYS if key in results}
    config.update(results.get("config") or {})
    if results.get("configs"):
        config["task_configs"] = results["configs"]
    return _plain(redact(config))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def summary_values(results: Mapping[str, Any]) -> dict[str, int | float]:
    """``{"<task>/<key>": number}`` for every finite number of every task and group."""
    summary: dict[str, int | float] = {}
    for section in ("results", "groups"):
        for name, scores in (results.get(section) or {}).items():
            for key, value in scores.items():
                if _is_number(value):
                    summary[f"{name}/{key}"] = value
    return summary


def _number_or_none(value: Any) -> float | int | None:
    return value if _is_number(value) else None


def results_rows(results: Mapping[str, Any], section: str = "results") -> list[list[Any]]:
    """Rows of the results table: task, version, filter, n-shot, metric, value, stderr, CI bounds."""
    from lmms_eval.results.schema import metric_keys

    rows: list[list[Any]] = []
    versions, n_shot = results.get("versions") or {}, results.get("n-shot") or {}
    for name, scores in (results.get(section) or {}).items():
        for metric, filter_key in metric_keys(scores):
            rows.append(
                [
                    name,
                    None if versions.get(name) is None else str(versions[name]),
                    filter_key,
                    n_shot.get(name),
                    metric,
                    *(
                        _number_or_none(scores.get(f"{metric}{suffix},{filter_key}"))
                        for suffix in ("", "_stderr", "_ci_lower", "_ci_upper")
                    ),
                ]
            )
    return rows


RESULTS_COLUMNS = ["task", "version", "filter", "n-shot", "metric", "value", "stderr", "ci_lower", "ci_upper"]


def _text(value: Any) -> str | None:
    """A table cell as redacted text: strings as they are, one-element lists unwrapped, JSON else."""
    while isinstance(value, list) and len(value) == 1:
        value = value[0]
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(_plain(value), ensure_ascii=False)
    return redact_text(text)


def _cell(value: Any) -> Any:
    """A metric value: numbers and booleans as they are, anything else as text."""
    if isinstance(value, bool) or _is_number(value):
        return value
    if isinstance(value, float):
        return None  # NaN
    return _text(value)


def _metric_names(records: Sequence[SampleRecord]) -> list[str]:
    """The metric columns of a task's samples table, in the order the records give them."""
    from lmms_eval.results.samples import NOT_METRICS

    names: dict[str, None] = {}
    for record in records:
        names.update((name, None) for name in record.metrics if name not in NOT_METRICS)
    return list(names)


# --------------------------------------------------------------------------------------------
# images
# --------------------------------------------------------------------------------------------


def _media_image(ref: Any) -> Any:
    """A PIL image from a media reference: a file path, a ``data:`` URI, or a ``{"_media": "image",
    "path": ...}`` reference of a recorded doc whose file exists (``None`` for anything else)."""
    from PIL import Image as PILImage

    from lmms_eval.results.docs import MEDIA_KEY

    if isinstance(ref, Mapping):
        ref = ref.get("path") if ref.get(MEDIA_KEY) == "image" else None
    if not isinstance(ref, str):
        return None
    if ref.startswith("data:image/") and ";base64," in ref:
        return PILImage.open(io.BytesIO(base64.b64decode(ref.split(";base64,", 1)[1])))
    if os.path.isfile(ref):
        return PILImage.open(ref)
    return None  # a URL (W&B would not fetch it) or an image held only in memory during the run


def _doc_refs(doc: Any) -> Iterator[Mapping[str, Any]]:
    """The image references in a recorded doc (``{"_media": "image", ...}``), depth first."""
    from lmms_eval.results.docs import MEDIA_KEY

    if isinstance(doc, Mapping):
        if doc.get(MEDIA_KEY) == "image":
            yield doc
            return
        for value in doc.values():
            yield from _doc_refs(value)
    elif isinstance(doc, list):
        for value in doc:
            yield from _doc_refs(value)


class _Images:
    """The images of each sample: ``images_of``, else the record's ``input_media`` and ``doc`` refs."""

    def __init__(self, task: str, images_of: ImagesOf | None) -> None:
        self.task, self.images_of, self.failures = task, images_of, 0

    def __call__(self, record: SampleRecord) -> list[Any]:
        images: list[Any] = []
        try:
            if self.images_of is not None:
                images.extend(self.images_of(self.task, record.doc_id) or [])
            if not images:
                refs = [*(record.input_media or []), *_doc_refs(record.doc)]
                images.extend(
                    im for im in map(_media_image, refs[: 2 * MAX_IMAGES_PER_SAMPLE]) if im is not None
                )
        except Exception as exc:  # a missing image must not lose the table
            self.failures += 1
            if self.failures == 1:
                logger.warning(
                    "W&B samples table of %s: no images for doc %s: %s", self.task, record.doc_id, exc
                )
        return images[:MAX_IMAGES_PER_SAMPLE]


# --------------------------------------------------------------------------------------------
# samples
# --------------------------------------------------------------------------------------------

Samples = Mapping[str, Iterable["SampleRecord | Mapping[str, Any]"]]


def samples_from_files(results: Mapping[str, Any]) -> dict[str, Iterator[SampleRecord]]:
    """The sample records of each task, read lazily from the samples files the results list
    (``output_files.samples``; written with ``--output_path`` and ``--log_samples``)."""
    from lmms_eval.results.samples import read_samples

    files = (results.get("output_files") or {}).get("samples") or {}
    return {task: read_samples(path) for task, path in files.items()}


def _as_record(record: SampleRecord | Mapping[str, Any]) -> SampleRecord:
    from lmms_eval.results.samples import SampleRecord

    return record if isinstance(record, SampleRecord) else SampleRecord.from_dict(record)


def samples_table(
    wandb: Any,
    task: str,
    records: Iterable[SampleRecord | Mapping[str, Any]],
    images_of: ImagesOf | None = None,
) -> Any:
    """The ``wandb.Table`` of one task's sample records (records or samples-file lines)."""
    rows = [_as_record(r) for r in records]
    metrics = _metric_names(rows)
    images = _Images(task, images_of)
    pictures = [[wandb.Image(im) for im in images(record)] for record in rows]
    n_images = max((len(p) for p in pictures), default=0)
    columns = ["doc_id", "filter", "input", "target", "filtered_resps", *metrics, "failed", "error"]
    columns += ["image" if n_images == 1 else f"image_{i + 1}" for i in range(n_images)]
    table = wandb.Table(columns=columns, allow_mixed_types=True)
    for record, pics in zip(rows, pictures):
        table.add_data(
            record.doc_id,
            record.filter,
            _text(record.input),
            _text(record.target),
            _text(record.filtered_resps),
            *(_cell(record.metrics.get(name)) for name in metrics),
            bool(record.failed),
            redact_text("; ".join(record.errors)) if record.errors else None,
            *(pics + [None] * (n_images - len(pics))),
        )
    return table


# --------------------------------------------------------------------------------------------
# the run
# --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _redacted_argv() -> Iterator[None]:
    """W&B records ``sys.argv``: show it a redacted copy while the run starts."""
    saved = sys.argv
    cleaned = [redact_text(arg) for arg in saved]
    if cleaned != saved:
        sys.argv = cleaned
    try:
        yield
    finally:
        sys.argv = saved


def _settings(wandb: Any, given: Mapping[str, Any] | None) -> dict[str, Any]:
    fields = getattr(wandb.Settings, "model_fields", None)
    defaults = {k: v for k, v in _DEFAULT_SETTINGS.items() if fields is None or k in fields}
    if fields is None:  # an old W&B: only the settings every version has
        defaults = {k: v for k, v in defaults.items() if not k.startswith("x_")}
    return {**defaults, **(given or {})}


def _default_name(results: Mapping[str, Any], suffix: str) -> str:
    model = results.get("model_name_sanitized") or results.get("model_name") or "lmms-eval"
    return f"{model}_{suffix}" if suffix else str(model)


def _start_run(
    wandb: Any, init_args: Mapping[str, Any], results: Mapping[str, Any], suffix: str
) -> tuple[Any, bool]:
    """The W&B run to log into and whether it is ours to finish (an active run is reused)."""
    config = run_config(results)
    if wandb.run is not None:
        logger.info("logging the results into the active W&B run %s", wandb.run.id)
        wandb.run.config.update(config, allow_val_change=True)
        return wandb.run, False
    kwargs = dict(init_args)
    kwargs.setdefault("name", _default_name(results, suffix))
    kwargs.setdefault("job_type", "eval")
    kwargs["settings"] = _settings(wandb, kwargs.get("settings"))
    if kwargs.get("dir"):
        os.makedirs(os.path.expanduser(str(kwargs["dir"])), exist_ok=True)
    with _redacted_argv():
        run = wandb.init(config=config, **kwargs)
    return run, True


def _log_everything(
    wandb: Any,
    run: Any,
    results: Mapping[str, Any],
    samples: Samples | None,
    suffix: str,
    images_of: ImagesOf | None,
) -> None:
    run.summary.update(summary_values(results))
    tables: dict[str, Any] = {
        "evaluation/results": wandb.Table(
            columns=RESULTS_COLUMNS, data=results_rows(results), allow_mixed_types=True
        )
    }
    if results.get("groups"):
        columns = ["group", *RESULTS_COLUMNS[1:]]
        tables["evaluation/groups"] = wandb.Table(
            columns=columns, data=results_rows(results, "groups"), allow_mixed_types=True
        )
    run.log(tables)
    if samples is None:
        return
    if not samples:
        logger.warning(
            "no sample records to log to W&B: --wandb_log_samples needs --log_samples and --output_path"
        )
    for task, records in samples.items():
        key = f"{task}/{suffix}" if suffix else f"{task}/samples"
        run.log({key: samples_table(wandb, task, records, images_of)})


def _location(run: Any) -> str:
    """The run's URL, its folder when it is offline (upload it with ``wandb sync``), ``""`` when
    W&B is disabled."""
    mode = getattr(getattr(run, "settings", None), "mode", None)
    if mode == "disabled" or getattr(run, "disabled", False):
        return ""
    if mode in ("offline", "dryrun") or not getattr(run, "url", None):
        return os.path.dirname(run.dir)
    return str(run.url)


def log_to_wandb(
    results: Mapping[str, Any],
    samples: Samples | None = None,
    args: str | Mapping[str, Any] | None = None,
    log_samples_suffix: str = DEFAULT_SUFFIX,
    images_of: ImagesOf | None = None,
) -> str | None:
    """Log a finished run's ``results`` (and ``samples``: task -> sample records) to W&B.

    ``args`` are the ``--wandb_args`` (``wandb.init`` arguments). Without ``name`` the run is named
    ``<model_name_sanitized>_<log_samples_suffix>``. ``images_of(task, doc_id)`` gives the images
    shown in the samples tables. An active W&B run (``wandb.run``) is logged into and left open.

    Returns the run's URL (its folder when offline; ``""`` with ``mode=disabled``), or ``None``
    when W&B failed: the failure is logged as one error line and never raised, the results files
    being already written.
    """
    run, owned = None, False
    try:
        wandb = _import_wandb()
        init_args = check_wandb_args(args)
        run, owned = _start_run(wandb, init_args, results, log_samples_suffix)
        _log_everything(wandb, run, results, samples, log_samples_suffix, images_of)
        location = _location(run)
        if owned:
            run.finish()
        run = None
        if not location:
            logger.info("W&B is disabled (mode=disabled): nothing was logged")
        elif location.startswith("http"):
            logger.info("results logged to W&B: %s", location)
        else:
            logger.info("results logged to the offline W&B run %s", location)
            logger.info("upload the offline run with: wandb sync %s", location)
        return location
    except Exception as exc:
        logger.error(
            "W&B logging failed, the results files are not affected: %s",
            redact_text(f"{type(exc).__name__}: {exc}"),
        )
        return None
    finally:
        if run is not None and owned:
            with contextlib.suppress(Exception):
                run.finish(exit_code=1)


__all__ = [
    "DEFAULT_SUFFIX",
    "RESULTS_COLUMNS",
    "ImagesOf",
    "check_wandb_args",
    "log_to_wandb",
    "results_rows",
    "run_config",
    "samples_from_files",
    "samples_table",
    "summary_values",
]
