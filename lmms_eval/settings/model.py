"""``EvalSettings``: the one definition of every run option.

Each field is one option: its type, default and help, and (in its :class:`Cli` annotation) how the
command line spells it, its aliases, its ``--help`` group and its scope. Everything else is derived:

* the ``lmms-eval eval`` flags (:mod:`lmms_eval.cli.eval` walks :func:`options`);
* ``--config`` YAML validation (a run of a config file is validated by :meth:`EvalSettings.build`);
* the keywords of :func:`lmms_eval.evaluator.simple_evaluate` (:meth:`EvalSettings.from_keywords`:
  unknown keywords are errors with "did you mean");
* the eval server's request body (:func:`run_settings_model`: the options of scope ``run``).

Adding an option is one edit: a field here. Scope ``run`` options change what an evaluation does and
are recorded in the results file; scope ``cli`` options only change what the command line does
(``--config``, ``--verbosity``, ``--show_config``, the power analysis).

Values arrive as command-line strings, YAML values or Python objects; the ``before`` validators
bring each to one normal form with the checks of :mod:`lmms_eval.settings.checks`, whose errors
name the option as the command line spells it.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError

from lmms_eval.api.path_types import PathArg, PathKind
from lmms_eval.errors import ConfigError, did_you_mean
from lmms_eval.secrets import redact
from lmms_eval.settings import checks

Scope = Literal["run", "cli"]

DEFAULT_REASONING_TAGS: list[list[str]] = [["<think>", "</think>"], ["<analysis>", "</analysis>"]]
SEED_KEYWORDS = ("random_seed", "numpy_random_seed", "torch_random_seed", "fewshot_random_seed")


@dataclass(frozen=True)
class Cli:
    """How the command line spells an option (first flag first), and where ``--help`` lists it."""

    flags: tuple[str, ...]
    group: str
    metavar: str | None = None
    scope: Scope = "run"
    nargs: str | None = None  # "?" for flags whose value is optional (``--apply_chat_template``)
    const: Any = None  # the value of such a flag given without a value
    python_default: Any = None  # where simple_evaluate's default differs (as in the published package)


def _opt(flags: str | tuple[str, ...], group: str, metavar: str | None = None, **kw: Any) -> Cli:
    return Cli((flags,) if isinstance(flags, str) else flags, group, metavar, **kw)


# the options whose values one rule of settings.checks turns into their normal form
CHECKS: dict[str, Callable[..., Any]] = {  # (value, option) -> normal form
    "model_args": checks.check_arg_string,
    "wandb_args": checks.check_arg_string,
    "hf_hub_log_args": checks.check_arg_string,
    "batch_size": checks.check_batch_size,
    "max_batch_size": checks.check_max_batch_size,
    "num_fewshot": checks.check_num_fewshot,
    "limit": checks.check_limit,
    "offset": checks.check_offset,
    "repeats": checks.check_repeats,
    "bootstrap_iters": checks.check_bootstrap_iters,
    "max_tokens": checks.check_max_tokens,
    "seed": checks.check_seeds,
    "verbosity": checks.check_verbosity,
    "timezone": checks.check_timezone,
}


def check_option(name: str, value: Any, option: str | None = None) -> Any:
    """``value`` of option ``name`` in its normal form: its text checked, then its rule in
    :data:`CHECKS` applied; errors name it as ``option`` (default: its flag)."""
    shown = option if option is not None else flag_name(name) if name in EvalSettings.model_fields else name
    checks.check_text(value, shown)
    return CHECKS[name](value, shown) if name in CHECKS else value


MODEL, TASKS, RUN, OUTPUT, CACHE, STATS, POWER = (
    "model",
    "tasks and prompts",
    "running",
    "outputs and logging",
    "caching",
    "statistics",
    "power analysis (prints and exits; no model runs)",
)


class EvalSettings(BaseModel):
    """Every option of a run, validated. Immutable: derive changed settings with ``model_copy``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    config: Annotated[str | None, _opt("--config", RUN, "PATH", scope="cli")] = Field(
        default=None,
        description="YAML file with options (one run, or a list of runs); command-line flags win",
    )
    # -- model --------------------------------------------------------------------------------------
    model: Annotated[str, _opt("--model", MODEL, "ID")] = Field(
        default="dummy", description="model id or alias (see 'lmms-eval models')"
    )
    model_args: Annotated[str | dict[str, Any], _opt("--model_args", MODEL, "ARGS")] = Field(
        default="", description="model arguments as k=v,k=v (JSON values allowed)"
    )
    batch_size: Annotated[int | str, _opt(("--batch_size", "-b"), MODEL, "N")] = Field(
        default=1,
        description=f"batch size: N, 'auto' or 'auto:N' (where the model supports it); N at most "
        f"{checks.MAX_BATCH_SIZE}",
    )
    max_batch_size: Annotated[int | None, _opt("--max_batch_size", MODEL, "N")] = Field(
        default=None, description=f"upper bound for automatic batch sizes (at most {checks.MAX_BATCH_SIZE})"
    )
    device: Annotated[str | None, _opt("--device", MODEL, "DEVICE")] = Field(
        default=None, description="device for local models, e.g. cuda:0 or cpu"
    )
    force_simple: Annotated[bool, _opt("--force_simple", MODEL)] = Field(
        default=False, description="use the simple (doc_to_visual + doc_to_text) variant of the model"
    )
    trust_remote_code: Annotated[bool, _opt("--trust_remote_code", MODEL)] = Field(
        default=False, description="pass trust_remote_code=True to models that accept it"
    )
    apply_chat_template: Annotated[
        bool | str,
        _opt("--apply_chat_template", MODEL, "TEMPLATE", nargs="?", const=True),
        PathArg(PathKind.FILE_OR_TEXT),
    ] = Field(
        default=False,
        description="require the model's chat template (a flag), or replace it (a Jinja file or inline "
        "template); false: each model's own choice",
    )
    # -- tasks and prompts --------------------------------------------------------------------------
    tasks: Annotated[str | None, _opt("--tasks", TASKS, "TASKS"), PathArg(PathKind.TASK, many=True)] = Field(
        default=None, description="comma-separated tasks, groups, tags, fnmatch patterns or YAML paths"
    )
    include_path: Annotated[
        str | None, _opt("--include_path", TASKS, "DIR"), PathArg(PathKind.DATA, many=True)
    ] = Field(default=None, description="extra folder(s) of task YAMLs (comma-separated)")
    num_fewshot: Annotated[int | None, _opt("--num_fewshot", TASKS, "N")] = Field(
        default=None,
        description=f"few-shot examples per prompt, 0 to {checks.MAX_FEWSHOT} (tasks that set 0 keep 0)",
    )
    fewshot_as_multiturn: Annotated[bool, _opt("--fewshot_as_multiturn", TASKS)] = Field(
        default=False, description="chat models: give few-shot examples as earlier user/assistant turns"
    )
    system_instruction: Annotated[str | None, _opt("--system_instruction", TASKS, "TEXT")] = Field(
        default=None, description="system instruction prepended to every prompt"
    )
    gen_kwargs: Annotated[str | dict[str, Any], _opt("--gen_kwargs", TASKS, "ARGS")] = Field(
        default="", description="generation overrides for all generate tasks, k=v,k=v"
    )
    reasoning_tags: Annotated[Any, _opt("--reasoning_tags", TASKS, "TAGS")] = Field(
        default_factory=lambda: json.dumps(DEFAULT_REASONING_TAGS),
        description="reasoning blocks stripped before scoring: 'none' or a JSON list of [start, end] pairs",
    )
    dataset_root: Annotated[
        str | None, _opt(("--dataset_root", "--dataset-root"), TASKS, "DIR"), PathArg(PathKind.DATA)
    ] = Field(
        default=None,
        description="folder of local copies of Hub datasets (DIR/<owner>/<name>: save_to_disk folders or "
        "<split>.parquet/.jsonl files) used instead of the Hub (default: $LMMS_EVAL_DATASET_ROOT)",
    )
    process_with_media: Annotated[bool, _opt("--process_with_media", TASKS)] = Field(
        default=False, description="give process_results the documents with their images, video and audio"
    )
    # -- running ------------------------------------------------------------------------------------
    limit: Annotated[int | float | None, _opt("--limit", RUN, "N")] = Field(
        default=None,
        description=f"docs per task: a count (at most {checks.MAX_DOCS}), or a fraction in (0, 1)",
    )
    offset: Annotated[int, _opt("--offset", RUN, "N")] = Field(
        default=0, description=f"skip this many docs of each task before --limit (at most {checks.MAX_DOCS})"
    )
    repeats: Annotated[int | None, _opt(("--repeats", "-n", "--num_samples"), RUN, "K")] = Field(
        default=None,
        description=f"run every request k times, 1 to {checks.MAX_REPEATS} (stability metrics need k > 1)",
    )
    seed: Annotated[list[int | None], _opt("--seed", RUN, "SEEDS")] = Field(
        default_factory=lambda: [0, 1234, 1234, 1234],
        description="seeds for python, numpy, torch and few-shot sampling: one value or four "
        "(simple_evaluate: random_seed, numpy_random_seed, torch_random_seed, fewshot_random_seed)",
    )
    predict_only: Annotated[bool, _opt(("--predict_only", "-x"), RUN)] = Field(
        default=False, description="generate and log outputs without scoring (implies --log_samples)"
    )
    max_tokens: Annotated[int | None, _opt("--max_tokens", RUN, "N")] = Field(
        default=None,
        description=f"total token budget (at most {checks.MAX_TOKEN_BUDGET}); once spent, remaining requests "
        "fail instead of running",
    )
    allow_failures: Annotated[bool, _opt("--allow_failures", RUN, scope="cli")] = Field(
        default=False,
        description="exit 0 even when some requests failed (they are still listed and not scored)",
    )
    # -- outputs and logging ------------------------------------------------------------------------
    output_path: Annotated[
        str | None, _opt(("--output_path", "-o"), OUTPUT, "DIR"), PathArg(PathKind.OUTPUT)
    ] = Field(default=None, description="folder for results JSON and samples JSONL")
    log_samples: Annotated[bool, _opt(("--log_samples", "-s"), OUTPUT, python_default=True)] = Field(
        default=False,
        description="write per-document samples JSONL (needs --output_path; simple_evaluate: on by default)",
    )
    log_samples_suffix: Annotated[str, _opt("--log_samples_suffix", OUTPUT, "SUFFIX")] = Field(
        default="model_outputs", description="suffix of the W&B run name and samples tables"
    )
    timezone: Annotated[str, _opt("--timezone", OUTPUT, "ZONE")] = Field(
        default="UTC", description="time zone of the timestamps in output file names, e.g. Asia/Singapore"
    )
    write_out: Annotated[bool, _opt(("--write_out", "-w"), OUTPUT)] = Field(
        default=False, description="print the prompt and target of the first doc of each task"
    )
    show_config: Annotated[bool, _opt("--show_config", OUTPUT, scope="cli")] = Field(
        default=False, description="print each task's full config after the run"
    )
    verbosity: Annotated[str, _opt("--verbosity", OUTPUT, "LEVEL", scope="cli")] = Field(
        default="INFO", description="log level: DEBUG, INFO, WARNING or ERROR"
    )
    wandb_args: Annotated[str | dict[str, Any], _opt("--wandb_args", OUTPUT, "ARGS")] = Field(
        default="", description="log the run to Weights & Biases: wandb.init arguments, e.g. project=p,name=n"
    )
    wandb_log_samples: Annotated[bool, _opt("--wandb_log_samples", OUTPUT)] = Field(
        default=False, description="with --wandb_args, also log a samples table per task"
    )
    hf_hub_log_args: Annotated[str | dict[str, Any], _opt("--hf_hub_log_args", OUTPUT, "ARGS")] = Field(
        default="",
        description="push results to the Hugging Face Hub, e.g. hub_results_org=org,push_results_to_hub=true",
    )
    # -- caching ------------------------------------------------------------------------------------
    use_cache: Annotated[
        str | None, _opt(("--use_cache", "--use-cache", "-c"), CACHE, "DIR"), PathArg(PathKind.CACHE)
    ] = Field(
        default=None,
        description="response cache folder: reuse stored answers, store new ones as they arrive "
        "(resumable runs; default: $LMMS_EVAL_USE_CACHE)",
    )
    cache_sampling: Annotated[bool, _opt(("--cache_sampling", "--cache-sampling"), CACHE)] = Field(
        default=False,
        description="with --use_cache, also cache sampled generations (temperature > 0, do_sample)",
    )
    cache_requests: Annotated[
        Literal["true", "refresh", "delete"] | None,
        _opt(("--cache_requests", "--cache-requests"), CACHE, "MODE"),
    ] = Field(default=None, description="store built requests between runs: true, refresh or delete")
    # -- statistics ---------------------------------------------------------------------------------
    bootstrap_iters: Annotated[int, _opt("--bootstrap_iters", STATS, "N")] = Field(
        default=1000,
        description=f"bootstrap resamples for errors of non-mean metrics, 0 (off) to "
        f"{checks.MAX_BOOTSTRAP_ITERS}; seeded from --seed, reproducible",
    )
    ci_method: Annotated[
        Literal["wilson", "clopper-pearson"], _opt(("--ci_method", "--ci-method"), STATS, "METHOD")
    ] = Field(
        default="wilson",
        description="interval of 0/1 (accuracy-like) means: wilson, or clopper-pearson (exact, wider); "
        "other metrics keep their t or bootstrap interval",
    )
    baseline: Annotated[str | None, _opt("--baseline", STATS, "PATH"), PathArg(PathKind.OUTPUT)] = Field(
        default=None,
        description="compare with an earlier run, doc by doc (a results folder, results JSON or samples JSONL)",
    )
    # -- power analysis -----------------------------------------------------------------------------
    power_analysis: Annotated[bool, _opt(("--power_analysis", "--power-analysis"), POWER, scope="cli")] = (
        Field(default=False, description="print a power analysis (needs no model run) and exit")
    )
    effect_size: Annotated[float, _opt(("--effect_size", "--effect-size"), POWER, "D", scope="cli")] = Field(
        default=0.03, description="the difference to detect (0.03 = 3 points)"
    )
    alpha: Annotated[float, _opt("--alpha", POWER, "A", scope="cli")] = Field(
        default=0.05, description="significance level"
    )
    power: Annotated[float, _opt("--power", POWER, "P", scope="cli")] = Field(
        default=0.8, description="wanted power"
    )
    correlation: Annotated[float, _opt("--correlation", POWER, "R", scope="cli")] = Field(
        default=0.5, description="correlation of the two models' per-question scores"
    )
    std_a: Annotated[float | None, _opt(("--std_a", "--std-a"), POWER, "SD", scope="cli")] = Field(
        default=None, description="std of model A's per-question scores (default 0.5)"
    )
    std_b: Annotated[float | None, _opt(("--std_b", "--std-b"), POWER, "SD", scope="cli")] = Field(
        default=None, description="std of model B's per-question scores (default: std_a)"
    )

    # -- normal forms -------------------------------------------------------------------------------

    @field_validator("tasks", "include_path", mode="before")
    @classmethod
    def _comma_list(cls, value: Any) -> Any:
        if isinstance(value, (list, tuple)):
            return ",".join(str(v).strip() for v in value)
        return value

    @field_validator("model_args", "gen_kwargs", "wandb_args", "hf_hub_log_args", mode="before")
    @classmethod
    def _arg_string(cls, value: Any) -> Any:
        return "" if value is None else value

    @field_validator("gen_kwargs", mode="after")
    @classmethod
    def _check_gen_kwargs(cls, value: Any) -> Any:
        """Checked here, kept as given (a ``k=v`` string stays a string in ``resolved_cli_args``)."""
        if value:
            checks.check_gen_kwargs(value)
        return value

    @model_validator(mode="before")
    @classmethod
    def _checked(cls, data: Any) -> Any:
        """Options with a rule in :mod:`~lmms_eval.settings.checks` get it, and every option's text
        is checked (no NUL byte, UTF-8, bounded nesting); the errors name the flag."""
        if isinstance(data, Mapping):
            data = {k: check_option(k, v) for k, v in data.items()}
        return data

    @field_validator("cache_requests", mode="before")
    @classmethod
    def _cache_requests(cls, value: Any) -> Any:
        from lmms_eval.caching.request_cache import parse_cache_requests

        return parse_cache_requests(value)

    @field_validator("reasoning_tags", mode="before")
    @classmethod
    def _reasoning_tags(cls, value: Any) -> Any:
        from lmms_eval.api.reasoning import parse_reasoning_tags_config

        parse_reasoning_tags_config(value)  # raises on a bad value; the value is kept as given
        return value

    @field_validator("apply_chat_template", mode="before")
    @classmethod
    def _chat_template(cls, value: Any) -> Any:
        if value is None:
            return False
        if isinstance(value, str) and value.strip().lower() in ("true", "false", ""):
            return value.strip().lower() == "true"
        return value

    @field_validator(
        "force_simple",
        "trust_remote_code",
        "fewshot_as_multiturn",
        "process_with_media",
        "predict_only",
        "allow_failures",
        "log_samples",
        "write_out",
        "show_config",
        "wandb_log_samples",
        "cache_sampling",
        "power_analysis",
        mode="before",
    )
    @classmethod
    def _flag(cls, value: Any) -> Any:
        """Flags take true/false (any case, also yes/no/1/0) or nothing (``None`` is false)."""
        if value is None:
            return False
        if isinstance(value, str):
            text = value.strip().lower()
            if text in ("true", "yes", "1", "on"):
                return True
            if text in ("false", "no", "0", "off", ""):
                return False
        return value

    # -- derived views ------------------------------------------------------------------------------

    @classmethod
    def build(cls, values: Mapping[str, Any], where: str = "") -> EvalSettings:
        """Validated settings from option values; a bad or unknown option is one ConfigError line."""
        prefix = f"{where}: " if where else ""
        for key in values:
            if key not in cls.model_fields:
                raise ConfigError(
                    f"{prefix}unknown option '{key}'.{did_you_mean(str(key), cls.model_fields)} "
                    f"Valid options: {', '.join(sorted(cls.model_fields))}"
                )
        try:
            return cls.model_validate(dict(values))
        except ValidationError as exc:
            raise ConfigError(prefix + _one_line(exc)) from None
        except ConfigError as exc:  # a check's own message already names the option
            raise ConfigError(prefix + str(exc)) from None

    @classmethod
    def from_keywords(cls, caller: str = "simple_evaluate", **keywords: Any) -> EvalSettings:
        """Settings from Python keywords: option names, plus the four seed keywords.

        Unknown keywords are errors with "did you mean"; options that only the command line uses
        (``verbosity``, ``show_config``, the power analysis) are errors that say so.
        """
        values = dict(keywords)
        seeds = {k: values.pop(k) for k in SEED_KEYWORDS if k in values}
        if seeds:
            current = checks.check_seeds(
                values.get("seed", cls.model_fields["seed"].get_default(call_default_factory=True))
            )
            values["seed"] = [seeds.get(k, current[i]) for i, k in enumerate(SEED_KEYWORDS)]
        for name, _ in options("run"):
            if cli_of(name).python_default is not None:
                values.setdefault(name, cli_of(name).python_default)
        run_names = [name for name, _ in options("run")]
        for key in values:
            if key not in cls.model_fields:
                raise ConfigError(
                    f"{caller}: unknown argument '{key}'.{did_you_mean(key, [*run_names, *SEED_KEYWORDS])}"
                )
            if cli_of(key).scope == "cli":
                raise ConfigError(
                    f"{caller}: '{key}' is a command-line option ({cli_of(key).flags[0]}); it has no effect here"
                )
        return cls.build(values, caller)

    def seeds(self) -> dict[str, int | None]:
        """The four seeds by their ``simple_evaluate`` keyword."""
        return dict(zip(SEED_KEYWORDS, self.seed))

    def task_names(self) -> list[str]:
        return [t.strip() for t in (self.tasks or "").split(",") if t.strip()]

    def run_values(self) -> dict[str, Any]:
        """The options of scope ``run``, as recorded in the results file."""
        return {name: getattr(self, name) for name, _ in options("run")}

    def explicit(self) -> dict[str, Any]:
        """The options that differ from their defaults (a short description of the run)."""
        defaults = EvalSettings()
        return {k: v for k, v in self.model_dump().items() if getattr(defaults, k) != v}


def _field_cli(info: FieldInfo) -> Cli:
    return next(m for m in info.metadata if isinstance(m, Cli))


@functools.cache
def _clis() -> dict[str, Cli]:
    """Each option's :class:`Cli`, read once (the eval server asks on every submission)."""
    return {name: _field_cli(info) for name, info in EvalSettings.model_fields.items()}


def cli_of(name: str) -> Cli:
    """The command-line spelling of option ``name``."""
    return _clis()[name]


def options(scope: Scope | None = None) -> Iterator[tuple[str, FieldInfo]]:
    """``(name, field)`` of every option (of one scope), in definition order."""
    clis = _clis()
    for name, info in EvalSettings.model_fields.items():
        if scope is None or clis[name].scope == scope:
            yield name, info


def flag_name(name: str) -> str:
    """``--limit`` for ``limit``: how messages name an option."""
    return cli_of(name).flags[0]


def is_flag(info: FieldInfo) -> bool:
    """Options that are on/off switches on the command line (``--log_samples``)."""
    return info.annotation is bool


@functools.cache
def run_settings_model() -> type[BaseModel]:
    """A pydantic model of the ``run`` options only: the body of an evaluation request."""
    fields: dict[str, Any] = {}
    for name, info in options("run"):
        fields[name] = (info.annotation, info)
    validators: dict[str, Any] = {"_checked": field_validator("*", mode="before")(_request_check)}
    return create_model(
        "RunSettings", __config__=ConfigDict(extra="forbid"), __validators__=validators, **fields
    )


def _request_check(cls: type, value: Any, info: ValidationInfo) -> Any:
    """The rules of :func:`check_option` for a request body, field by field (kept as given: the
    settings built from the request normalize it)."""
    try:
        check_option(info.field_name or "", value, option="")
    except ConfigError as exc:
        raise PydanticCustomError("invalid_option", "{message}", {"message": str(exc).lstrip(": ")}) from None
    return value


def _one_line(exc: ValidationError) -> str:
    """The first validation error as ``--num_fewshot: Input should be a valid integer (got 'x')``."""
    error = exc.errors()[0]
    loc = [str(p) for p in error["loc"]]
    name = loc[0] if loc else ""
    option = flag_name(name) if name in EvalSettings.model_fields else name
    detail = f"{option}{'.' + '.'.join(loc[1:]) if len(loc) > 1 else ''}"
    given = redact(error.get("input"))  # a wrong type of --model_args may still hold a key
    return f"{detail}: {error['msg']} (got {checks.show_value(given)})"
