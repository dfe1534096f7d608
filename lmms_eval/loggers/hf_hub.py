"""Pushing a finished run to the Hugging Face Hub (``--hf_hub_log_args``).

One call at the end of a run, after the results file is written::

    push_results_to_hub(results, results.get("output_files"), hf_hub_log_args)

pushes, as one commit per dataset repository,

* with ``push_results_to_hub=true``: the results JSON to ``<hub_results_org>/<results_repo_name>``
  under ``<model_name_sanitized>/``;
* with ``push_samples_to_hub=true``: the samples JSONL files to ``<hub_results_org>/<details_repo_name>``
  under ``<model_name_sanitized>/``;
* a dataset card ``README.md`` to each: the model, the run, the results table, the files, and the
  ``leaderboard_url`` and ``point_of_contact`` when given.

A repository is created when missing: private unless ``public_repo=true``, gated when ``gated`` is
set. The token (``token=`` or ``HF_TOKEN``, then the one saved by ``hf auth login``) is registered
as a secret, so it is redacted from every output; everything uploaded is redacted again on the way
out. ``huggingface_hub`` is imported only inside functions.

:func:`check_hf_hub_args` validates the arguments before the evaluation (unknown keys, types, a push
without a token); :func:`push_results_to_hub` never raises: a failure is logged as one error line
(the results files are already written).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
from collections.abc import Mapping
from typing import Any, Literal

from lmms_eval.errors import ConfigError, LmmsEvalError, did_you_mean
from lmms_eval.secrets import redact, redact_text, register_secret
from lmms_eval.utils import parse_arg_string

logger = logging.getLogger(__name__)

DEFAULT_REPO_NAME = "lmms-eval-results"
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
_OPTION = "--hf_hub_log_args"


@dataclasses.dataclass(frozen=True)
class HubArgs:
    """The ``--hf_hub_log_args`` keys (the published names)."""

    hub_results_org: str = ""
    hub_repo_name: str = ""  # both repos (older name); details_repo_name / results_repo_name win
    details_repo_name: str = ""
    results_repo_name: str = ""
    push_results_to_hub: bool = False
    push_samples_to_hub: bool = False
    public_repo: bool = False
    token: str = dataclasses.field(default="", repr=False)
    leaderboard_url: str = ""
    point_of_contact: str = ""
    gated: bool | Literal["auto", "manual"] = False

    @property
    def pushes(self) -> bool:
        return self.push_results_to_hub or self.push_samples_to_hub

    @property
    def details_repo(self) -> str:
        return self.details_repo_name or self.hub_repo_name or DEFAULT_REPO_NAME

    @property
    def results_repo(self) -> str:
        return self.results_repo_name or self.hub_repo_name or self.details_repo


_FIELDS = {f.name: f for f in dataclasses.fields(HubArgs)}
_BOOLS = ("push_results_to_hub", "push_samples_to_hub", "public_repo")
_NAMES = ("hub_results_org", "hub_repo_name", "details_repo_name", "results_repo_name")


def _check_value(key: str, value: Any) -> Any:
    if key in _BOOLS:
        if not isinstance(value, bool):
            raise ConfigError(f"{_OPTION}: {key}={value!r} must be true or false")
        return value
    if key == "gated":
        if isinstance(value, bool) or value in ("auto", "manual"):
            return value
        raise ConfigError(f"{_OPTION}: gated={value!r} must be true, false, auto or manual")
    if value is None:
        return ""
    if key == "token" and not isinstance(value, str):
        raise ConfigError(f"{_OPTION}: token must be a string")
    text = str(value)
    if key in _NAMES and text and not _NAME_RE.match(text):
        raise ConfigError(
            f"{_OPTION}: {key}={text!r} is not a Hub name: use letters, digits, '-', '_' and '.' "
            "(at most 96 characters)"
        )
    return text


def _find_token(given: str) -> str:
    """``token=``, else ``HF_TOKEN``, else the token saved by ``hf auth login`` (or ``""``)."""
    if given:
        return given
    if os.environ.get("HF_TOKEN"):
        return os.environ["HF_TOKEN"]
    try:
        from huggingface_hub import get_token
    except ImportError:
        return ""
    return get_token() or ""


def check_hf_hub_args(args: str | Mapping[str, Any] | None) -> HubArgs:
    """Parse and validate ``--hf_hub_log_args`` into :class:`HubArgs` (with the token resolved).

    Raises :class:`ConfigError` for an unknown key (with the closest valid one), a value of the
    wrong kind, or a push without a token. The token is registered as a secret.
    """
    try:
        parsed = parse_arg_string(args)
    except LmmsEvalError as exc:
        raise ConfigError(f"{_OPTION}: {exc}") from None
    if isinstance(parsed.get("token"), str):
        register_secret(parsed["token"])  # before anything can echo it
    values: dict[str, Any] = {}
    for key, value in parsed.items():
        if key not in _FIELDS:
            raise ConfigError(
                f"{_OPTION}: unknown key {key!r}.{did_you_mean(key, _FIELDS)} Valid keys: {', '.join(_FIELDS)}"
            )
        values[key] = _check_value(key, value)
    if values.get("push_results_to_hub") or values.get("push_samples_to_hub"):
        values["token"] = _find_token(values.get("token", ""))
        register_secret(values["token"])
    hub = HubArgs(**values)
    if hub.pushes and not hub.token:
        wanted = "push_results_to_hub" if hub.push_results_to_hub else "push_samples_to_hub"
        raise ConfigError(
            f"{_OPTION}: {wanted}=true needs a Hugging Face token: add token=... or set HF_TOKEN "
            "(or log in with `hf auth login`)"
        )
    if parsed and not hub.pushes:
        logger.warning(
            "%s: nothing is pushed without push_results_to_hub=true or push_samples_to_hub=true", _OPTION
        )
    return hub


# --------------------------------------------------------------------------------------------
# what is pushed
# --------------------------------------------------------------------------------------------


def _redacted_file(path: str) -> bytes:
    with open(path, encoding="utf-8") as handle:
        return redact_text(handle.read()).encode("utf-8")


def _model_folder(results: Mapping[str, Any]) -> str:
    name = str(results.get("model_name_sanitized") or results.get("model_name") or "model")
    return name.replace("/", "__").strip(".") or "model"


def _samples_files(files: Mapping[str, Any] | None) -> dict[str, str]:
    samples = (files or {}).get("samples") or {}
    return {task: path for task, path in samples.items() if isinstance(path, str) and os.path.isfile(path)}


def _run_lines(results: Mapping[str, Any]) -> list[str]:
    config = redact(results.get("config") or {})
    lines = [f"- model: `{results.get('model_name', '?')}`"]
    for key in ("model_args", "limit", "num_fewshot", "batch_size", "random_seed"):
        if config.get(key) not in (None, "", {}):
            lines.append(f"- {key}: `{config[key]}`")
    for key in ("lmms_eval_version", "git_hash", "date", "status"):
        if results.get(key):
            lines.append(f"- {key}: `{results[key]}`")
    return lines


def dataset_card(results: Mapping[str, Any], hub: HubArgs, paths: list[str]) -> str:
    """The ``README.md`` of a results repository: the run and its results table."""
    from lmms_eval.loggers.table import make_table

    model = results.get("model_name", "?")
    parts = [
        "---",
        f"pretty_name: lmms-eval results of {_yaml_text(str(model))}",
        "tags:",
        "- lmms-eval",
        "- evaluation",
        "---",
        f"# Evaluation results of `{model}`",
        "",
        "Evaluated with [lmms-eval](https://github.com/EvolvingLMMs-Lab/lmms-eval).",
        "",
    ]
    if hub.leaderboard_url:
        parts += [f"Leaderboard: {hub.leaderboard_url}", ""]
    if hub.point_of_contact:
        parts += [f"Point of contact: {hub.point_of_contact}", ""]
    parts += ["## Run", "", *_run_lines(results), "", "## Results", "", make_table(dict(results)), ""]
    if results.get("groups"):
        parts += ["## Groups", "", make_table(dict(results), "groups"), ""]
    parts += ["## Files", "", *(f"- [`{p}`]({p})" for p in paths), ""]
    return redact_text("\n".join(parts))


def _yaml_text(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def plan_uploads(
    results: Mapping[str, Any], files: Mapping[str, Any] | None, hub: HubArgs, org: str
) -> dict[str, dict[str, bytes]]:
    """``{repo_id: {path_in_repo: content}}`` of what a push uploads (README cards included)."""
    folder = _model_folder(results)
    plan: dict[str, dict[str, bytes]] = {}
    if hub.push_results_to_hub:
        results_path = (files or {}).get("results")
        if not isinstance(results_path, str) or not os.path.isfile(results_path):
            raise ConfigError(
                f"{_OPTION}: push_results_to_hub=true needs the results file (set --output_path)"
            )
        repo = plan.setdefault(f"{org}/{hub.results_repo}", {})
        repo[f"{folder}/{os.path.basename(results_path)}"] = _redacted_file(results_path)
    if hub.push_samples_to_hub:
        samples = _samples_files(files)
        if not samples:
            raise ConfigError(
                f"{_OPTION}: push_samples_to_hub=true needs samples files (set --log_samples and --output_path)"
            )
        repo = plan.setdefault(f"{org}/{hub.details_repo}", {})
        for path in samples.values():
            repo[f"{folder}/{os.path.basename(path)}"] = _redacted_file(path)
    for uploads in plan.values():
        uploads["README.md"] = dataset_card(results, hub, sorted(uploads)).encode("utf-8")
    return plan


# --------------------------------------------------------------------------------------------
# the push
# --------------------------------------------------------------------------------------------


def _make_api(token: str) -> Any:
    from huggingface_hub import HfApi

    return HfApi(token=token)


def _push_repo(api: Any, repo_id: str, uploads: Mapping[str, bytes], hub: HubArgs, message: str) -> str:
    from huggingface_hub import CommitOperationAdd

    url = api.create_repo(repo_id, repo_type="dataset", private=not hub.public_repo, exist_ok=True)
    if hub.gated:
        api.update_repo_settings(
            repo_id, repo_type="dataset", gated="auto" if hub.gated is True else hub.gated
        )
    operations = [
        CommitOperationAdd(path_in_repo=path, path_or_fileobj=data) for path, data in uploads.items()
    ]
    api.create_commit(repo_id, operations, commit_message=message, repo_type="dataset")
    return str(url)


def push_results_to_hub(
    results: Mapping[str, Any],
    files: Mapping[str, Any] | None,
    args: str | Mapping[str, Any] | HubArgs | None,
    api: Any = None,
) -> list[str]:
    """Push a finished run's files (``results["output_files"]``) as ``--hf_hub_log_args`` ask.

    ``api`` is an ``huggingface_hub.HfApi`` (made with the token when not given). Returns the URLs
    of the repositories pushed to (``[]`` when nothing was asked). A failure is logged as one
    error line and never raised: the results files are already written.
    """
    try:
        hub = args if isinstance(args, HubArgs) else check_hf_hub_args(args)
        register_secret(hub.token)
        if not hub.pushes:
            return []
        api = api if api is not None else _make_api(hub.token)
        org = hub.hub_results_org or str(api.whoami()["name"])
        plan = plan_uploads(results, files, hub, org)
        message = f"lmms-eval results of {results.get('model_name', '?')} ({results.get('date', '')})"
        urls = [_push_repo(api, repo_id, uploads, hub, message) for repo_id, uploads in plan.items()]
        for url in urls:
            logger.info("results pushed to the Hugging Face Hub: %s", url)
        return urls
    except Exception as exc:
        logger.error(
            "pushing to the Hugging Face Hub failed, the results files are not affected: %s",
            redact_text(f"{type(exc).__name__}: {exc}"),
        )
        return []


__all__ = [
    "DEFAULT_REPO_NAME",
    "HubArgs",
    "check_hf_hub_args",
    "dataset_card",
    "plan_uploads",
    "push_results_to_hub",
]
