"""CLI: subcommands, the legacy flat form, --config layering and typing, errors and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lmms_eval.cli import main
from lmms_eval.cli.eval import merge_run_configs
from lmms_eval.errors import ConfigError


def _results(output: Path) -> dict:
    return json.loads(next(output.glob("*/*_results.json")).read_text())


def test_no_arguments_prints_banner(capsys) -> None:
    assert main([]) == 0
    assert "commands:" in capsys.readouterr().out


def test_eval_subcommand_and_flat_form_agree(tmp_path: Path) -> None:
    args = [
        "--model",
        "dummy",
        "--model_args",
        "answer_field=answer,accuracy=0.5",
        "--tasks",
        "demo_qa",
        "--limit",
        "20",
    ]
    assert main(["eval", *args, "--output_path", str(tmp_path / "a")]) == 0
    assert main([*args, "--output_path", str(tmp_path / "b")]) == 0
    a, b = _results(tmp_path / "a"), _results(tmp_path / "b")
    assert a["results"] == b["results"]
    assert a["n-samples"]["demo_qa"]["effective"] == 20


def test_config_file_layers_types_env_and_cli_priority(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("LIMIT_FROM_ENV", "7")
    monkeypatch.delenv("UNSET_VAR", raising=False)
    config = tmp_path / "run.yaml"
    config.write_text(
        "env:\n  OUT_DIR: " + str(tmp_path / "cfg_out") + "\n"
        "model: dummy\n"
        "model_args: {answer_field: answer}\n"
        "tasks: [demo_qa]\n"
        "limit: ${LIMIT_FROM_ENV}\n"
        "seed: '42,42,42,42'\n"
        "output_path: ${OUT_DIR}\n"
        "system_instruction: ${UNSET_VAR:-be brief}\n"
        "log_samples: 'true'\n"
    )
    (run,) = merge_run_configs({"config": str(config), "limit": 5.0})
    cfg = run.settings
    assert cfg.limit == 5.0  # the command line wins over the file
    assert cfg.seed == [42, 42, 42, 42]  # typed like the CLI value, not left a string
    assert cfg.tasks == "demo_qa" and cfg.log_samples is True
    assert cfg.system_instruction == "be brief"
    assert cfg.output_path == str(tmp_path / "cfg_out")
    assert main(["eval", "--config", str(config)]) == 0
    results = _results(tmp_path / "cfg_out")
    assert results["n-samples"]["demo_qa"]["effective"] == 7
    assert results["config"]["random_seed"] == 42


def test_config_list_runs_each_entry(tmp_path: Path) -> None:
    config = tmp_path / "batch.yaml"
    out = tmp_path / "out"
    config.write_text(
        f"- {{model: dummy, tasks: demo_qa, limit: 3, output_path: {out}/one}}\n"
        f"- {{model: dummy, tasks: demo_qa, limit: 4, output_path: {out}/two}}\n"
    )
    assert main(["--config", str(config)]) == 0
    assert _results(out / "one")["n-samples"]["demo_qa"]["effective"] == 3
    assert _results(out / "two")["n-samples"]["demo_qa"]["effective"] == 4


def test_unknown_config_key_is_an_error_with_suggestion(tmp_path: Path, capsys) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("model: dummy\ntasks: demo_qa\nmodel_arg: x=1\n")
    with pytest.raises(ConfigError, match=r"unknown option 'model_arg'\. Did you mean 'model_args'"):
        merge_run_configs({"config": str(config)})
    assert main(["--config", str(config)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "model_arg" in err


def test_unset_variable_without_default_is_an_error(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("NOT_THERE", raising=False)
    config = tmp_path / "env.yaml"
    config.write_text("model: dummy\ntasks: demo_qa\noutput_path: ${NOT_THERE}\n")
    with pytest.raises(ConfigError, match="NOT_THERE"):
        merge_run_configs({"config": str(config)})


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--model", "dumy", "--tasks", "demo_qa"], "Did you mean 'dummy'"),
        (["--model", "dummy", "--model_args", "anser_field=answer", "--tasks", "demo_qa"], "anser_field"),
        (["--model", "dummy", "--model_args", "broken", "--tasks", "demo_qa"], "expected key=value"),
        (["--model", "dummy", "--tasks", "demo_qa", "--log_samples"], "--output_path"),
        (["--model", "dummy"], "--tasks is required"),
    ],
)
def test_bad_input_gives_one_clear_line_and_nonzero_exit(argv: list[str], fragment: str, capsys) -> None:
    assert main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("lmms-eval: error:") and fragment in err[0]


def test_bad_flag_value_is_one_error_line(capsys) -> None:
    assert main(["--model", "dummy", "--tasks", "demo_qa", "--seed", "abc"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--seed values must be whole numbers" in err[0] and "'abc'" in err[0]


def test_tasks_subcommands(capsys) -> None:
    assert main(["tasks", "list"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Available tasks (") and "demo_qa" in out
    assert main(["tasks", "subtasks"]) == 0
    assert "| demo_qa" in capsys.readouterr().out
    assert main(["tasks", "groups"]) == 0 and main(["tasks", "tags"]) == 0
    assert main(["--tasks", "list"]) == 0  # the legacy spelling
    assert "demo_qa" in capsys.readouterr().out


def test_models_and_version(capsys) -> None:
    assert main(["models", "--aliases"]) == 0
    out = capsys.readouterr().out
    assert "dummy" in out and "chat+simple" in out and "dummy_video_reader" in out and "from_log" in out
    assert main(["version"]) == 0
    assert "lmms_eval" in capsys.readouterr().out


def test_help_and_task_listing_do_not_import_heavy_packages() -> None:
    script = (
        "import sys, contextlib, io\n"
        "from lmms_eval.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['tasks', 'list'])\n"
        "    try:\n        main(['--help'])\n    except SystemExit:\n        pass\n"
        "heavy = [m for m in ('torch', 'transformers', 'datasets', 'pandas') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == ""


def test_config_env_applies_to_its_own_run_only(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("RUN_LABEL", raising=False)
    config = tmp_path / "two.yaml"
    config.write_text(
        f"- {{env: {{RUN_LABEL: one}}, model: dummy, tasks: demo_qa, limit: 1, output_path: '{tmp_path}/${{RUN_LABEL}}'}}\n"
        f"- {{env: {{RUN_LABEL: two}}, model: dummy, tasks: demo_qa, limit: 1, output_path: '{tmp_path}/${{RUN_LABEL}}'}}\n"
    )
    first, second = merge_run_configs({"config": str(config)})
    assert (first.env, second.env) == ({"RUN_LABEL": "one"}, {"RUN_LABEL": "two"})
    assert first.settings.output_path == f"{tmp_path}/one"
    assert second.settings.output_path == f"{tmp_path}/two"
    import os

    assert "RUN_LABEL" not in os.environ  # loading exports nothing
    assert main(["--config", str(config)]) == 0
    assert "RUN_LABEL" not in os.environ  # and each run restores the environment afterwards
    assert (tmp_path / "one").is_dir() and (tmp_path / "two").is_dir()


@pytest.mark.parametrize(
    ("text", "env", "expected"),
    [
        ("${V:-d}", {"V": ""}, "d"),
        ("${V-d}", {"V": ""}, ""),
        ("${V-d}", {}, "d"),
        ("$V/x", {"V": "a"}, "a/x"),
    ],
)
def test_variable_expansion_forms(text: str, env: dict, expected: str) -> None:
    from lmms_eval.cli.config import expand_vars

    assert expand_vars(text, "here", env) == expected


def test_validate_reports_a_duplicate_name_once(write_files, tmp_path: Path, capsys) -> None:
    task = "task: twin\ndataset_path: json\ntest_split: test\n"
    root = write_files({"a/one.yaml": task, "b/two.yaml": task}, tmp_path / "dups")
    assert main(["tasks", "validate", "--include_path", str(root)]) == 1
    out = capsys.readouterr().out
    assert out.count("twin") == 1 and "1 problem(s)" in out


@pytest.mark.parametrize(
    ("argv", "hint"),
    [(["--limt", "3"], "Did you mean '--limit'?"), (["tasks", "list", "--jsn"], "Did you mean '--json'?")],
)
def test_a_mistyped_flag_gets_a_suggestion_from_its_command(argv: list[str], hint: str, capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("lmms-eval: error: unrecognized arguments:") and last.endswith(hint)


def test_a_closed_stdout_ends_quietly_with_status_0(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "lmms_eval", "tasks", "benchmarks"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader left, as `| head` does
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0 and "Traceback" not in err and "BrokenPipe" not in err
