"""``lmms_eval.__main__.parse_eval_args`` and ``cli_evaluate``, for scripts written for the published
package: parsed flags can be changed before the run, and a config file still fills what they leave."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lmms_eval.__main__ import cli_evaluate, parse_eval_args


def test_parsed_args_can_be_changed_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = parse_eval_args(["--model", "dummy", "--tasks", "demo_qa", "--limit", "8", "--verbosity", "ERROR"])
    assert args.model == "dummy" and args.limit == 8.0 and args.batch_size == 1 and args.output_path is None
    args.limit = 3
    args.model_args = "answer_field=answer"
    args.output_path = str(tmp_path)
    assert cli_evaluate(args) == 0
    results = json.loads(next(tmp_path.rglob("*_results.json")).read_text())
    assert results["n-samples"]["demo_qa"]["effective"] == 3
    assert results["results"]["demo_qa"]["exact_match,none"] == 1.0
    assert "limit: 3" in capsys.readouterr().out


def test_config_file_fills_what_the_args_leave_at_their_defaults(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "run.yaml"
    config.write_text("model: dummy\ntasks: [demo_qa]\nlimit: 2\nverbosity: ERROR\n", encoding="utf-8")
    assert cli_evaluate(parse_eval_args(["--config", str(config)])) == 0
    assert "limit: 2," in capsys.readouterr().out


def test_user_errors_are_one_line_and_exit_one(capsys: pytest.CaptureFixture[str]) -> None:
    args = parse_eval_args(["--model", "dummy", "--tasks", "demo_qaa"])
    assert cli_evaluate(args) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("lmms-eval: error: unknown task or group 'demo_qaa'. Did you mean 'demo_qa'")
