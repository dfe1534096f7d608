"""``lmms-eval eval``: run an evaluation (also the legacy flat form ``lmms-eval --model ...``).

Every flag is an option of :class:`~lmms_eval.settings.EvalSettings`. Options come from three layers,
later ones winning: built-in defaults < ``--config`` YAML < flags given on the command line. YAML and
command-line values go through the same checks, and the merged result is validated as a whole.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, get_args

from lmms_eval.errors import ConfigError
from lmms_eval.settings import EvalSettings, cli_of, options

logger = logging.getLogger("lmms_eval.cli")


@dataclass(frozen=True)
class ConfiguredRun:
    """One run of the command line: its validated settings and the ``env:`` of its ``--config`` entry."""

    settings: EvalSettings
    env: dict[str, str] = field(default_factory=dict)


def defaults() -> dict[str, Any]:
    """Every option's default value, by option name."""
    return EvalSettings().model_dump()


def _typed(name: str, annotation: Any) -> Callable[[str], Any]:
    """The argparse ``type`` of option ``name``: values of numeric options become numbers (so that
    errors show ``got -3``), everything else stays text. The settings model checks the values after
    the layers are merged, so a bad value is one error line, as in a ``--config`` file."""
    kinds = set(get_args(annotation) or (annotation,)) - {type(None)}
    numeric = bool(kinds) and kinds <= {int, float}

    def convert(text: str) -> Any:
        if numeric:
            for number in (int, float):
                try:
                    return number(text)
                except ValueError:
                    pass
        return text

    convert.__name__ = name  # argparse names the type in some messages
    return convert


def add_eval_arguments(parser: argparse.ArgumentParser) -> None:
    """Every option of :class:`EvalSettings` as a flag, grouped as ``--help`` shows them.

    Defaults are ``SUPPRESS`` so that the flags given explicitly can be told apart (they override a
    ``--config`` file; defaults do not).
    """
    groups: dict[str, Any] = {}
    for name, info in options():
        cli = cli_of(name)
        group = groups.get(cli.group) or groups.setdefault(cli.group, parser.add_argument_group(cli.group))
        default = info.get_default(call_default_factory=True)
        kwargs: dict[str, Any] = {"dest": name, "default": argparse.SUPPRESS, "help": info.description}
        if info.annotation is bool:
            kwargs["action"] = "store_true"
        else:
            kwargs["help"] = f"{info.description} (default: {default!r})"
            kwargs.update(type=_typed(name, info.annotation), metavar=cli.metavar or name.upper())
            if cli.nargs:
                kwargs.update(nargs=cli.nargs, const=cli.const)
        group.add_argument(*cli.flags, **kwargs)


def merge_run_configs(explicit: dict[str, Any]) -> list[ConfiguredRun]:
    """defaults < each run of ``--config`` < explicit command-line flags, validated."""
    from lmms_eval.cli.config import load_run_configs

    layers: list[tuple[dict[str, Any], dict[str, str]]] = [({}, {})]
    config_path = explicit.get("config")
    if config_path:
        layers = []
        for i, run in enumerate(load_run_configs(config_path)):
            where = f"{config_path}" + (f"[{i}]" if i else "")
            env = run.pop("env")
            register_env_secrets(env)
            given = EvalSettings.build(run, where).model_dump(include=set(run))
            layers.append((given, env))
    return [ConfiguredRun(EvalSettings.build({**layer, **explicit}), env) for layer, env in layers]


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
    for i, run in enumerate(runs):
        if len(runs) > 1:
            print(f"\n=== run {i + 1} of {len(runs)}: {run.settings.model} on {run.settings.tasks} ===")
        with temporary_env(run.env):
            status = max(status, run_one(run.settings))
    return status


def _list_tasks_shortcut(cfg: EvalSettings) -> int | None:
    shortcuts = {"list": "list", "list_groups": "groups", "list_tags": "tags", "list_subtasks": "subtasks"}
    if cfg.tasks in shortcuts:
        from lmms_eval.cli.tasks import print_listing

        return print_listing(shortcuts[cfg.tasks], cfg.include_path)
    return None


def run_one(cfg: EvalSettings) -> int:
    from lmms_eval.cli import configure_logging

    configure_logging(cfg.verbosity)
    shortcut = _list_tasks_shortcut(cfg)
    if shortcut is not None:
        return shortcut
    if cfg.power_analysis:
        from lmms_eval.cli.power import run_power_analysis

        return run_power_analysis(
            effect_size=cfg.effect_size,
            alpha=cfg.alpha,
            power=cfg.power,
            correlation=cfg.correlation,
            std_a=cfg.std_a,
            std_b=cfg.std_b,
            tasks=cfg.task_names() or None,
            include_path=cfg.include_path,
        )
    if not cfg.tasks:
        raise ConfigError("--tasks is required (run 'lmms-eval tasks list' to see the available tasks)")
    if (cfg.log_samples or cfg.predict_only) and not cfg.output_path:
        raise ConfigError(
            "--log_samples and --predict_only need --output_path to know where to write samples"
        )

    from lmms_eval.distributed import is_main_process
    from lmms_eval.evaluator import EvaluationInterrupted, run_evaluation
    from lmms_eval.tasks import TaskManager

    manager = TaskManager(include_path=cfg.include_path, model_name=cfg.model)
    main = is_main_process()  # every rank gets rank 0's results; only rank 0 prints them
    try:
        results = run_evaluation(cfg, task_manager=manager)
    except EvaluationInterrupted as exc:
        if main:
            _print_results(cfg, exc.results)
            task = exc.results.get("interrupted_task")
            print(f"lmms-eval: interrupted during task {task}; finished tasks are kept", file=sys.stderr)
        return 130
    if not main:
        return _report_failures(results, cfg.allow_failures, quiet=True)
    _print_results(cfg, results)
    status = _report_failures(results, cfg.allow_failures)
    if results.get("output_error"):
        from lmms_eval.secrets import redact_text

        print(f"lmms-eval: error: {redact_text(results['output_error'])}", file=sys.stderr)
        return 1
    return status


def _print_results(cfg: EvalSettings, results: dict[str, Any]) -> None:
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


def _report_failures(results: dict[str, Any], allowed: bool, quiet: bool = False) -> int:
    """List failed and unasked documents on stderr (unless ``quiet``); exit status 3 unless
    --allow_failures."""
    failures = results.get("failures") or {}
    if not failures:
        return 0
    if quiet:
        return 0 if allowed else 3
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
