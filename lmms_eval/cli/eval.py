"""``lmms-eval eval``: run an evaluation (also the legacy flat form ``lmms-eval --model ...``).

Options come from three layers, later ones winning: built-in defaults < ``--config`` YAML < flags
given on the command line. YAML values go through the same typing as command-line values, and the
merged result is validated as a :class:`RunConfig`.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lmms_eval.errors import ConfigError, did_you_mean
from lmms_eval.utils import parse_value

if TYPE_CHECKING:  # pydantic is imported only when a run is configured
    from lmms_eval.cli.run_config import RunConfig

logger = logging.getLogger("lmms_eval.cli")


def _limit(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a count or a fraction, got {text!r}") from None
    return value


def _seed(text: str) -> list[int | None]:
    """``"42"`` -> four seeds of 42; ``"0,1234,None,1"`` -> python, numpy, torch, few-shot."""
    parts = [p.strip() for p in str(text).split(",")]
    if len(parts) == 1:
        parts *= 4
    if len(parts) != 4:
        raise argparse.ArgumentTypeError(
            f"--seed takes one value or four comma-separated values, got {text!r}"
        )
    seeds: list[int | None] = []
    for part in parts:
        if part.lower() == "none":
            seeds.append(None)
        elif part.lstrip("-").isdigit():
            seeds.append(int(part))
        else:
            raise argparse.ArgumentTypeError(f"--seed values must be integers or None, got {part!r}")
    return seeds


def _batch_size(text: str) -> int | str:
    text = str(text)
    if text.isdigit() and int(text) > 0:
        return int(text)
    if text == "auto" or (text.startswith("auto:") and text[5:].isdigit()):
        return text
    raise argparse.ArgumentTypeError(
        f"--batch_size must be a positive integer, 'auto' or 'auto:N', got {text!r}"
    )


def _cache_requests(text: str) -> str | None:
    from lmms_eval.caching.request_cache import parse_cache_requests

    try:
        return parse_cache_requests(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc).split(": ", 1)[-1]) from None


def _bool(text: str) -> bool:
    value = parse_value(str(text))
    if not isinstance(value, bool):
        raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
    return value


@dataclass(frozen=True)
class Flag:
    names: tuple[str, ...]
    default: Any
    help: str
    type: Any = str
    action: str | None = None
    metavar: str | None = None


FLAGS: list[Flag] = [
    Flag(
        ("--config",),
        None,
        "YAML file with options (one run, or a list of runs); command-line flags win",
        metavar="PATH",
    ),
    Flag(("--model",), "dummy", "model id or alias (see 'lmms-eval models')", metavar="ID"),
    Flag(("--model_args",), "", "model arguments as k=v,k=v (JSON values allowed)", metavar="ARGS"),
    Flag(
        ("--tasks",),
        None,
        "comma-separated tasks, groups, tags, fnmatch patterns or YAML paths",
        metavar="TASKS",
    ),
    Flag(
        ("--num_fewshot",),
        None,
        "few-shot examples per prompt (tasks that set 0 keep 0)",
        type=int,
        metavar="N",
    ),
    Flag(
        ("--batch_size", "-b"),
        1,
        "batch size: N, 'auto' or 'auto:N' (where the model supports it)",
        type=_batch_size,
    ),
    Flag(("--max_batch_size",), None, "upper bound for automatic batch sizes", type=int, metavar="N"),
    Flag(("--device",), None, "device for local models, e.g. cuda:0 or cpu"),
    Flag(("--output_path", "-o"), None, "folder for results JSON and samples JSONL", metavar="DIR"),
    Flag(("--limit",), None, "docs per task: a count, or a fraction in (0, 1)", type=_limit, metavar="N"),
    Flag(("--offset",), 0, "skip this many docs of each task before --limit", type=int, metavar="N"),
    Flag(
        ("--log_samples", "-s"),
        False,
        "write per-document samples JSONL (needs --output_path)",
        action="store_true",
    ),
    Flag(
        ("--predict_only", "-x"),
        False,
        "generate and log outputs without scoring (implies --log_samples)",
        action="store_true",
    ),
    Flag(("--gen_kwargs",), "", "generation overrides for all generate tasks, k=v,k=v", metavar="ARGS"),
    Flag(("--system_instruction",), None, "system instruction prepended to every prompt", metavar="TEXT"),
    Flag(("--include_path",), None, "extra folder(s) of task YAMLs (comma-separated)", metavar="DIR"),
    Flag(
        ("--dataset_root", "--dataset-root"),
        None,
        "folder of local copies of Hub datasets (DIR/<owner>/<name>: save_to_disk folders or "
        "<split>.parquet/.jsonl files) used instead of the Hub (default: $LMMS_EVAL_DATASET_ROOT)",
        metavar="DIR",
    ),
    Flag(
        ("--seed",),
        [0, 1234, 1234, 1234],
        "seeds for python, numpy, torch and few-shot sampling: one value or four",
        type=_seed,
    ),
    Flag(
        ("--repeats", "-n"),
        None,
        "run every request k times (stability metrics need k > 1)",
        type=int,
        metavar="K",
    ),
    Flag(
        ("--bootstrap_iters",),
        1000,
        "bootstrap resamples for errors of non-mean metrics (0: off); seeded from --seed, reproducible",
        type=int,
        metavar="N",
    ),
    Flag(
        ("--reasoning_tags",),
        json.dumps([list(p) for p in (("<think>", "</think>"), ("<analysis>", "</analysis>"))]),
        "reasoning blocks stripped before scoring: 'none' or a JSON list of [start, end] pairs",
        metavar="TAGS",
    ),
    Flag(
        ("--force_simple",),
        False,
        "use the simple (doc_to_visual + doc_to_text) variant of the model",
        action="store_true",
    ),
    Flag(
        ("--trust_remote_code",),
        False,
        "pass trust_remote_code=True to models that accept it",
        action="store_true",
    ),
    Flag(("--show_config",), False, "print each task's full config after the run", action="store_true"),
    Flag(
        ("--write_out", "-w"),
        False,
        "print the prompt and target of the first doc of each task",
        action="store_true",
    ),
    Flag(("--verbosity",), "INFO", "log level: DEBUG, INFO, WARNING or ERROR", metavar="LEVEL"),
    Flag(
        ("--max_tokens",),
        None,
        "total token budget; once spent, remaining requests fail instead of running",
        type=int,
        metavar="N",
    ),
    Flag(
        ("--allow_failures",),
        False,
        "exit 0 even when some requests failed (they are still listed and not scored)",
        action="store_true",
    ),
    Flag(
        ("--use_cache", "--use-cache"),
        None,
        "response cache folder: reuse stored answers, store new ones as they arrive (resumable runs; "
        "default: $LMMS_EVAL_USE_CACHE)",
        metavar="DIR",
    ),
    Flag(
        ("--cache_sampling", "--cache-sampling"),
        False,
        "with --use_cache, also cache sampled generations (temperature > 0, do_sample)",
        action="store_true",
    ),
    Flag(
        ("--cache_requests", "--cache-requests"),
        None,
        "store built requests between runs: true, refresh or delete",
        type=_cache_requests,
        metavar="MODE",
    ),
    Flag(
        ("--baseline",),
        None,
        "compare with an earlier run, doc by doc (a results folder, results JSON or samples JSONL)",
        metavar="PATH",
    ),
    Flag(
        ("--power_analysis", "--power-analysis"),
        False,
        "print a power analysis (needs no model run) and exit",
        action="store_true",
    ),
    Flag(
        ("--effect_size", "--effect-size"),
        0.03,
        "power analysis: the difference to detect (0.03 = 3 points)",
        type=float,
    ),
    Flag(("--alpha",), 0.05, "power analysis: significance level", type=float),
    Flag(("--power",), 0.8, "power analysis: wanted power", type=float),
    Flag(
        ("--correlation",),
        0.5,
        "power analysis: correlation of the two models' per-question scores",
        type=float,
    ),
    Flag(
        ("--std_a", "--std-a"),
        None,
        "power analysis: std of model A's per-question scores (default 0.5)",
        type=float,
    ),
    Flag(
        ("--std_b", "--std-b"),
        None,
        "power analysis: std of model B's per-question scores (default: std_a)",
        type=float,
    ),
]

DEFAULTS: dict[str, Any] = {f.names[0].lstrip("-"): f.default for f in FLAGS}


def add_eval_arguments(parser: argparse.ArgumentParser) -> None:
    """Every eval flag, with SUPPRESS defaults so explicitly given flags can be told apart."""
    for flag in FLAGS:
        kwargs: dict[str, Any] = {
            "default": argparse.SUPPRESS,
            "help": f"{flag.help} (default: {flag.default!r})",
        }
        dest = flag.names[0].lstrip("-")
        if flag.action:
            kwargs["action"] = flag.action
        else:
            kwargs["type"] = flag.type
            if flag.metavar:
                kwargs["metavar"] = flag.metavar
        parser.add_argument(*flag.names, dest=dest, **kwargs)


def _type_config_value(key: str, value: Any, where: str) -> Any:
    """Give a YAML value the type its command-line flag would have."""
    flag = next((f for f in FLAGS if f.names[0].lstrip("-") == key), None)
    if flag is None:
        raise ConfigError(
            f"{where}: unknown option '{key}'.{did_you_mean(key, DEFAULTS)} Valid: {', '.join(sorted(DEFAULTS))}"
        )
    if value is None:
        return None
    if key == "tasks" and isinstance(value, list):
        return ",".join(str(v) for v in value)
    if key in ("model_args", "gen_kwargs") and isinstance(value, dict):
        return value
    if key == "reasoning_tags" and isinstance(value, list):
        return json.dumps(value)
    if key == "include_path" and isinstance(value, list):
        return ",".join(str(v) for v in value)
    if flag.action == "store_true":
        return value if isinstance(value, bool) else _bool(str(value))
    if key == "seed" and isinstance(value, list):
        return _seed(",".join("None" if v is None else str(v) for v in value))
    converter = flag.type
    try:
        return converter(str(value)) if converter is not str else str(value)
    except (argparse.ArgumentTypeError, ValueError) as exc:
        raise ConfigError(f"{where}: option '{key}': {exc}") from None


def merge_run_configs(explicit: dict[str, Any]) -> list[RunConfig]:
    """defaults < each run of ``--config`` < explicit command-line flags, validated."""
    from pydantic import ValidationError

    from lmms_eval.cli.config import load_run_configs
    from lmms_eval.cli.run_config import RunConfig

    layers: list[dict[str, Any]] = [{}]
    config_path = explicit.get("config")
    if config_path:
        layers = []
        for i, run in enumerate(load_run_configs(config_path)):
            where = f"{config_path}" + (f"[{i}]" if i else "")
            env = run.pop("env")
            register_env_secrets(env)
            layers.append({"env": env, **{k: _type_config_value(k, v, where) for k, v in run.items()}})
    runs = []
    for layer in layers:
        merged = {**DEFAULTS, **layer, **explicit}
        try:
            runs.append(RunConfig.model_validate(merged))
        except ValidationError as exc:
            error = exc.errors()[0]
            key = ".".join(str(p) for p in error["loc"])
            raise ConfigError(f"option '{key}': {error['msg']} (got {error.get('input')!r})") from None
    return runs


def register_env_secrets(env: dict[str, str]) -> None:
    """Values of a ``--config`` ``env:`` block that hold secrets never reach an output.

    Environment names are upper case by convention, so ``*_KEY``, ``*_PASS`` and ``*_PWD`` count
    too (``AZURE_OPENAI_KEY``), besides every name :func:`~lmms_eval.secrets.is_secret_name` knows.
    """
    from lmms_eval.secrets import is_secret_name, register_secret

    for name, value in env.items():
        if is_secret_name(name) or name.upper().endswith(("KEY", "PASS", "PWD")):
            register_secret(value)


def build_parser(prog: str = "lmms-eval eval") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Evaluate a model on tasks. Example: lmms-eval eval --model dummy --tasks demo_qa --limit 8",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_eval_arguments(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    from lmms_eval.cli.config import temporary_env

    explicit = {k: v for k, v in vars(args).items() if k not in ("handler", "command")}
    runs = merge_run_configs(explicit)
    status = 0
    for i, cfg in enumerate(runs):
        if len(runs) > 1:
            print(f"\n=== run {i + 1} of {len(runs)}: {cfg.model} on {cfg.tasks} ===")
        with temporary_env(cfg.env):
            status = max(status, run_one(cfg))
    return status


def _list_tasks_shortcut(cfg: RunConfig) -> int | None:
    shortcuts = {"list": "list", "list_groups": "groups", "list_tags": "tags", "list_subtasks": "subtasks"}
    if cfg.tasks in shortcuts:
        from lmms_eval.cli.tasks import print_listing

        return print_listing(shortcuts[cfg.tasks], cfg.include_path)
    return None


def run_one(cfg: RunConfig) -> int:
    from lmms_eval.cli import configure_logging

    configure_logging(cfg.verbosity)
    shortcut = _list_tasks_shortcut(cfg)
    if shortcut is not None:
        return shortcut
    if cfg.power_analysis:
        from lmms_eval.cli.power import run_power_analysis

        tasks = [t.strip() for t in (cfg.tasks or "").split(",") if t.strip()]
        return run_power_analysis(
            effect_size=cfg.effect_size,
            alpha=cfg.alpha,
            power=cfg.power,
            correlation=cfg.correlation,
            std_a=cfg.std_a,
            std_b=cfg.std_b,
            tasks=tasks or None,
            include_path=cfg.include_path,
        )
    if not cfg.tasks:
        raise ConfigError("--tasks is required (run 'lmms-eval tasks list' to see the available tasks)")
    log_samples = cfg.log_samples or cfg.predict_only
    if log_samples and not cfg.output_path:
        raise ConfigError(
            "--log_samples and --predict_only need --output_path to know where to write samples"
        )

    from lmms_eval.evaluator import EvaluationInterrupted, simple_evaluate
    from lmms_eval.tasks import TaskManager

    manager = TaskManager(include_path=cfg.include_path, model_name=cfg.model)
    random_seed, numpy_seed, torch_seed, fewshot_seed = cfg.seed
    try:
        results = simple_evaluate(
            model=cfg.model,
            model_args=cfg.model_args,
            trust_remote_code=cfg.trust_remote_code,
            tasks=[t.strip() for t in cfg.tasks.split(",") if t.strip()],
            num_fewshot=cfg.num_fewshot,
            batch_size=cfg.batch_size,
            max_batch_size=cfg.max_batch_size,
            device=cfg.device,
            limit=cfg.limit,
            offset=cfg.offset,
            bootstrap_iters=cfg.bootstrap_iters,
            gen_kwargs=cfg.gen_kwargs or None,
            task_manager=manager,
            predict_only=cfg.predict_only,
            random_seed=random_seed,
            numpy_random_seed=numpy_seed,
            torch_random_seed=torch_seed,
            fewshot_random_seed=fewshot_seed,
            system_instruction=cfg.system_instruction,
            log_samples=log_samples,
            force_simple=cfg.force_simple,
            repeats=cfg.repeats,
            reasoning_tags=cfg.reasoning_tags,
            output_path=cfg.output_path,
            baseline=cfg.baseline,
            max_tokens=cfg.max_tokens,
            cli_args=cfg.model_dump(),
            write_out=cfg.write_out,
            use_cache=cfg.use_cache,
            cache_sampling=cfg.cache_sampling,
            cache_requests=cfg.cache_requests,
            dataset_root=cfg.dataset_root,
        )
    except EvaluationInterrupted as exc:
        _print_results(cfg, exc.results)
        task = exc.results.get("interrupted_task")
        print(f"lmms-eval: interrupted during task {task}; finished tasks are kept", file=sys.stderr)
        return 130
    _print_results(cfg, results)
    status = _report_failures(results, cfg.allow_failures)
    if results.get("output_error"):
        from lmms_eval.secrets import redact_text

        print(f"lmms-eval: error: {redact_text(results['output_error'])}", file=sys.stderr)
        return 1
    return status


def _print_results(cfg: RunConfig, results: dict[str, Any]) -> None:
    """The score tables on stdout; where the files went (or that nothing was saved) on stderr."""
    from lmms_eval.loggers import make_table
    from lmms_eval.secrets import redact_text

    model_args = cfg.model_args if isinstance(cfg.model_args, str) else json.dumps(cfg.model_args)
    print(
        redact_text(
            f"\n{cfg.model} ({model_args or 'default args'}), limit: {cfg.limit}, "
            f"num_fewshot: {cfg.num_fewshot}, batch_size: {cfg.batch_size}"
        )
    )
    if results.get("results"):
        print(make_table(results))
    if results.get("groups"):
        print()
        print(make_table(results, "groups"))
    if cfg.show_config:
        print(json.dumps(results.get("configs", {}), indent=2, default=str))
    if "cache" in results:
        cache = results["cache"]
        print(
            f"Response cache {cache['path']}: {cache['hits']} hits, {cache['model_calls']} requests "
            f"sent to the model, {cache['stored']} answers stored",
            file=sys.stderr,
        )
    files = results.get("output_files")
    if results.get("output_error"):
        print(f"\nThe output files are incomplete: {results['output_error']}", file=sys.stderr)
        return
    if not files:
        print("\nNothing was saved: pass --output_path DIR to keep results and samples.", file=sys.stderr)
        return
    print(f"\nResults: {files['results']}", file=sys.stderr)
    for task, path in (files.get("samples") or {}).items():
        print(f"Samples ({task}): {path}", file=sys.stderr)


def _report_failures(results: dict[str, Any], allowed: bool) -> int:
    """List failed and unasked documents on stderr; exit status 3 unless --allow_failures."""
    failures = results.get("failures") or {}
    if not failures:
        return 0
    total = sum(entry["docs"] for entry in failures.values())
    print(f"\n{total} document(s) had failed requests and were not scored:", file=sys.stderr)
    for task, entry in failures.items():
        first = entry["examples"][0]
        kinds = ", ".join(f"{n} {kind}" for kind, n in entry.get("by_kind", {}).items())
        print(
            f"  {task}: {entry['docs']} ({kinds}; e.g. doc {first['doc_id']}: {first['errors'][0]})",
            file=sys.stderr,
        )
    usage = results.get("usage", {})
    if usage.get("budget_exceeded"):
        print(
            f"  the --max_tokens budget of {usage.get('budget_total_tokens')} was spent "
            f"({usage.get('budget_used_tokens')} tokens); the documents not asked are listed under "
            "'not_sent_doc_ids' in the results",
            file=sys.stderr,
        )
    if allowed:
        return 0
    kinds = {kind for entry in failures.values() for kind in entry.get("by_kind", {})}
    if kinds & {"error", "not_sent"}:
        print("Rerun to retry them, or pass --allow_failures to accept a partial run.", file=sys.stderr)
    if kinds & {"input", "refusal", "filtered"}:
        print(
            "Documents that failed as 'input', 'refusal' or 'filtered' fail again on a rerun: fix the "
            "task or data, or pass --allow_failures to accept the run without them.",
            file=sys.stderr,
        )
    return 3
