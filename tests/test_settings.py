"""``EvalSettings`` is the one definition of every run option: the command line, ``--config`` files,
``simple_evaluate`` keywords and the server's request model are all derived from it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from lmms_eval.api.task import TaskRunOptions
from lmms_eval.cli import build_parser, main
from lmms_eval.cli.eval import merge_run_configs
from lmms_eval.errors import ConfigError
from lmms_eval.evaluator import simple_evaluate
from lmms_eval.settings import EvalSettings, cli_of, options, run_settings_model
from lmms_eval.tasks import TaskManager

SEEDS = Path(__file__).resolve().parents[2] / "shared" / "seeds"
# the flags seed 001 lists, plus those of the published package's eval command (behaviour doc 2.2)
SEED_FLAGS = [
    "--model", "--model_args", "--tasks", "--batch_size", "--limit", "--device", "--output_path",
    "--log_samples", "--cache_requests", "--include_path", "--gen_kwargs", "--num_fewshot",
    "--predict_only", "--system_instruction", "--apply_chat_template", "--seed", "--wandb_args",
    "--write_out", "--show_config", "--config", "--verbosity", "--reasoning_tags", "--max_batch_size",
    "--offset", "--use_cache", "--log_samples_suffix", "--wandb_log_samples", "--timezone",
    "--hf_hub_log_args", "--fewshot_as_multiturn", "--trust_remote_code", "--process_with_media",
    "--force_simple", "--repeats", "--num_samples", "--baseline", "--max_tokens", "--power-analysis",
    "--effect-size", "--alpha", "--power", "--correlation", "--std-a", "--std-b",
]  # fmt: skip


def _eval_help() -> str:
    parser = build_parser()
    return next(
        action.choices["eval"].format_help()
        for action in parser._actions
        if getattr(action, "choices", None) and "eval" in action.choices
    )


def test_help_lists_every_seed_flag() -> None:
    text = _eval_help()
    if SEEDS.is_dir():  # every flag the user's specification spells out
        seed_text = " ".join(p.read_text(encoding="utf-8") for p in SEEDS.glob("00*.txt"))
        for flag in set(re.findall(r"`(--[a-z_]+)", seed_text)):
            assert re.search(rf"{flag}\b", text), flag
    for flag in SEED_FLAGS:
        assert re.search(rf"{flag}\b", text), flag


def test_every_option_is_a_flag_a_config_key_and_a_keyword() -> None:
    """Adding a field is the one edit: the parser, --config and simple_evaluate follow."""
    help_text = _eval_help()
    request_fields = set(run_settings_model().model_fields)
    for name, info in options():
        cli = cli_of(name)
        assert info.description, name
        assert all(re.search(rf"{re.escape(f)}\b", help_text) for f in cli.flags), name
        assert EvalSettings.build({name: info.get_default(call_default_factory=True)}) is not None
        if cli.scope == "run":
            assert name in request_fields
        else:
            assert name not in request_fields
            with pytest.raises(ConfigError, match="command-line option"):
                EvalSettings.from_keywords(**{name: info.get_default(call_default_factory=True)})


def test_simple_evaluate_rejects_unknown_keywords_with_a_suggestion() -> None:
    with pytest.raises(
        ConfigError, match=r"simple_evaluate: unknown argument 'limt'\. Did you mean 'limit'\?"
    ):
        simple_evaluate(model="dummy", tasks=["demo_qa"], limt=3)
    with pytest.raises(ConfigError, match=r"'verbosity' is a command-line option \(--verbosity\)"):
        simple_evaluate(model="dummy", tasks=["demo_qa"], verbosity="DEBUG")


def test_the_same_value_rule_holds_on_every_surface(tmp_path: Path, capsys) -> None:
    message = "--offset must be a whole number >= 0, got -2"
    with pytest.raises(ConfigError, match=re.escape(message)):
        simple_evaluate(model="dummy", tasks=["demo_qa"], offset=-2)
    config = tmp_path / "run.yaml"
    config.write_text("model: dummy\ntasks: demo_qa\noffset: -2\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=re.escape(f"{config}: {message}")):
        merge_run_configs({"config": str(config)})
    assert main(["--model", "dummy", "--tasks", "demo_qa", "--offset", "-2"]) == 1
    assert message in capsys.readouterr().err


def test_seed_keywords_and_the_seed_flag_are_one_option(tmp_path: Path) -> None:
    by_keyword = simple_evaluate(
        model="dummy", tasks=["demo_qa"], limit=2, random_seed=7, fewshot_random_seed=None, bootstrap_iters=0
    )
    config = by_keyword["config"]
    assert (config["random_seed"], config["numpy_seed"], config["torch_seed"], config["fewshot_seed"]) == (
        7,
        1234,
        1234,
        None,
    )
    (run,) = merge_run_configs({"seed": "7,1234,1234,None"})
    assert run.settings.seeds() == {
        "random_seed": 7,
        "numpy_random_seed": 1234,
        "torch_random_seed": 1234,
        "fewshot_random_seed": None,
    }


def test_results_record_every_run_option(tmp_path: Path) -> None:
    results = simple_evaluate(model="dummy", tasks="demo_qa", limit=2, output_path=str(tmp_path))
    recorded = results["config"]
    for name, _ in options("run"):
        if name != "seed":
            assert name in recorded, name
    assert recorded["resolved_cli_args"]["limit"] == 2


def test_timezone_names_the_output_files(tmp_path: Path) -> None:
    utc = simple_evaluate(model="dummy", tasks="demo_qa", limit=1, output_path=str(tmp_path / "a"))
    east = simple_evaluate(
        model="dummy", tasks="demo_qa", limit=1, output_path=str(tmp_path / "b"), timezone="Asia/Kolkata"
    )
    stamp = re.compile(r"(\d{8}_\d{6})_results\.json$")
    first = stamp.search(utc["output_files"]["results"])
    second = stamp.search(east["output_files"]["results"])
    assert first and second
    from datetime import datetime

    delta = datetime.strptime(second[1], "%Y%m%d_%H%M%S") - datetime.strptime(first[1], "%Y%m%d_%H%M%S")
    assert 5.5 * 3600 - 120 < delta.total_seconds() < 5.5 * 3600 + 120  # Kolkata is UTC+5:30
    with pytest.raises(ConfigError, match=r"unknown time zone 'Asia/Kolkatta'\. Did you mean 'Asia/Kolkata'"):
        simple_evaluate(model="dummy", tasks="demo_qa", timezone="Asia/Kolkatta")


FEWSHOT_TASK = {
    "fs/data.jsonl": "".join(json.dumps({"q": f"{i} + 1 =", "a": str(i + 1)}) + "\n" for i in range(6)),
    "fs/fs.yaml": (
        "task: fewshot_demo\n"
        "dataset_path: json\n"
        "dataset_kwargs:\n  data_files:\n    train: data.jsonl\n    test: data.jsonl\n"
        "training_split: train\ntest_split: test\n"
        "output_type: generate_until\n"
        "doc_to_text: q\ndoc_to_target: a\n"
        "description: 'Add.\n\n'\n"
        "metric_list:\n  - metric: exact_match\n"
    ),
}


def _fewshot_task(write_files: Any, tmp_path: Path, **options: Any) -> Any:
    root = write_files(FEWSHOT_TASK)
    task = TaskManager(include_path=str(root)).load_task_or_group(["fewshot_demo"])["fewshot_demo"]
    task.configure(TaskRunOptions(**options))
    return task


def test_fewshot_as_multiturn_gives_examples_as_earlier_turns(write_files: Any, tmp_path: Path) -> None:
    task = _fewshot_task(
        write_files, tmp_path, num_fewshot=2, fewshot_as_multiturn=True, system_instruction="S"
    )
    doc = task.eval_docs[0]
    messages = task.build_all_requests(chat=True, limit=1)[0].args[0](doc)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    shots = [task.eval_docs[int(m["content"][0]["text"].split()[0])] for m in messages[1:5:2]]
    assert [m["content"][0]["text"] for m in messages[2:5:2]] == [s["a"] for s in shots]
    assert messages[-1]["content"][-1]["text"] == task.config.description + "0 + 1 =" == "Add.\n0 + 1 ="
    # without the option the examples are part of one user message
    single = _fewshot_task(write_files, tmp_path, num_fewshot=2)
    flat = single.build_all_requests(chat=True, limit=1)[0].args[0](doc)
    assert [m["role"] for m in flat] == ["user"] and flat[0]["content"][-1]["text"].count(" + 1 =") == 3


def test_fewshot_as_multiturn_needs_a_chat_model_and_few_shot_examples(write_files: Any) -> None:
    root = write_files(FEWSHOT_TASK)
    common = {"tasks": ["fewshot_demo"], "task_manager": TaskManager(include_path=str(root)), "limit": 2}
    with pytest.raises(ConfigError, match="needs a chat model"):
        simple_evaluate("dummy", force_simple=True, num_fewshot=1, fewshot_as_multiturn=True, **common)
    with pytest.raises(ConfigError, match="no selected task uses few-shot examples"):
        simple_evaluate("dummy", fewshot_as_multiturn=True, **common)
    results = simple_evaluate(
        "dummy", model_args="echo=True", num_fewshot=2, fewshot_as_multiturn=True, bootstrap_iters=0, **common
    )
    assert results["configs"]["fewshot_demo"]["fewshot_as_multiturn"] is True
    assert results["n-shot"]["fewshot_demo"] == 2


def test_process_with_media_gives_process_results_the_images(write_files: Any) -> None:
    import datasets
    from PIL import Image

    data = datasets.Dataset.from_dict({"image": [Image.new("RGB", (2, 2), (0, 255, 0))], "q": ["colour?"]})
    data = data.cast_column("image", datasets.Image())
    root = write_files(
        {
            "m/m.yaml": "task: media_demo\ndataset_path: json\ntest_split: test\n"
            "output_type: generate_until\ndoc_to_visual: image\ndoc_to_text: q\ndoc_to_target: q\n"
        }
    )
    task = TaskManager(include_path=str(root)).load_task_or_group(["media_demo"])["media_demo"]
    task.download(dataset_loader=lambda *_: {"test": data})
    assert "image" not in task.scoring_docs[0]  # by default process_results gets no media
    task.configure(TaskRunOptions(process_with_media=True))
    task.download(dataset_loader=lambda *_: {"test": data})
    assert task.scoring_docs[0]["image"].getpixel((0, 0)) == (0, 255, 0)


def test_apply_chat_template_needs_a_model_that_takes_one() -> None:
    with pytest.raises(
        ConfigError, match="--apply_chat_template: model 'dummy' does not take a chat template"
    ):
        simple_evaluate("dummy", tasks=["demo_qa"], limit=1, apply_chat_template="{{ messages }}")
    (run,) = merge_run_configs({"apply_chat_template": True})
    assert run.settings.apply_chat_template is True
    (run,) = merge_run_configs({"apply_chat_template": "false"})
    assert run.settings.apply_chat_template is False


def test_the_cli_reference_lists_every_option() -> None:
    text = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text(encoding="utf-8")
    table = text.split("## `lmms-eval eval`", 1)[1].split("\n## `lmms-eval tasks`", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| `--")]
    documented = set(re.findall(r"`(--[a-z_-]+)", "\n".join(rows)))
    for name, _ in options():
        assert set(cli_of(name).flags) & documented, f"{cli_of(name).flags[0]} is missing from docs/cli.md"
    known = {flag for name, _ in options() for flag in cli_of(name).flags}
    assert documented <= known | {"--effect_size", "--std_a", "--std_b"}, documented - known


def test_loggers_that_need_files_stop_the_run_before_it_starts() -> None:
    with pytest.raises(ConfigError, match="--wandb_log_samples needs --wandb_args and --output_path"):
        simple_evaluate("dummy", tasks=["demo_qa"], wandb_args="mode=disabled", wandb_log_samples=True)
    with pytest.raises(ConfigError, match="pushing to the Hub needs --output_path"):
        simple_evaluate(
            "dummy",
            tasks=["demo_qa"],
            hf_hub_log_args="hub_results_org=me,push_results_to_hub=true,token=hf_test_token_123456",
        )


def test_a_folder_without_task_files_is_not_an_empty_run(tmp_path: Path, monkeypatch, capsys) -> None:
    (tmp_path / "bench").mkdir()
    (tmp_path / "demo_qa").mkdir()  # a known task name wins over a folder of the same name
    monkeypatch.chdir(tmp_path)
    assert main(["--model", "dummy", "--tasks", "bench"]) == 1
    assert "--tasks bench: is a folder with no task files" in capsys.readouterr().err
    assert main(["--model", "dummy", "--tasks", "demo_qa", "--limit", "2", "--bootstrap_iters", "0"]) == 0
    assert "|demo_qa" in capsys.readouterr().out
