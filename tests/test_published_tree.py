"""Task folders written for the published package load and run unchanged through ``--include_path``.

Each test builds a miniature tree with one published YAML / import feature (quoted keys, a byte-order
mark, nested inline groups, fixed few-shot samples, ``class: !function``, ``lmms_eval.tasks.<folder>``
imports, ``_task_utils`` helpers) and checks what the loader and a ``dummy`` run make of it.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

import lmms_eval
from lmms_eval.api.task import ConfigurableTask
from lmms_eval.tasks import TaskManager

ROOT = Path(__file__).resolve().parents[1]
ROWS = [{"question": f"q{i}", "answer": "yes" if i % 2 else "no", "choices": ["no", "yes"]} for i in range(6)]
DATA = "\n".join(json.dumps(r) for r in ROWS)
BASE = "dataset_path: json\ndataset_kwargs:\n  data_files:\n    test: data.jsonl\ntest_split: test\n"


def _manager(root: Path) -> TaskManager:
    return TaskManager(include_path=str(root), include_defaults=False, use_cache=False)


def _task(manager: TaskManager, name: str) -> ConfigurableTask:
    task = manager.load_task_or_group([name])[name]
    assert isinstance(task, ConfigurableTask)
    return task


def _run(manager: TaskManager, tasks: list[str]) -> dict:
    return lmms_eval.simple_evaluate(
        model="dummy",
        model_args="answer_field=answer",
        tasks=tasks,
        task_manager=manager,
        show_progress=False,
    )


def test_quoted_keys_and_byte_order_mark_are_indexed(write_files, tmp_path: Path) -> None:
    root = write_files(
        {
            "q/data.jsonl": DATA,
            "q/quoted.yaml": '"task": "quoted_task"\n"dataset_path": json\n"include": _base\n',
            "q/_base": BASE + "doc_to_text: question\ndoc_to_target: answer\n",
            "q/bom.yaml": "\ufefftask: bom_task\ninclude: _base\n",
        },
        tmp_path / "q",
    )
    manager = _manager(root)
    assert {"quoted_task", "bom_task"} <= set(manager.all_subtasks)
    assert _run(manager, ["quoted_task"])["results"]["quoted_task"]["exact_match,none"] == 1.0


def test_task_index_has_the_published_keys(write_files, tmp_path: Path) -> None:
    root = write_files(
        {
            "g/data.jsonl": DATA,
            "g/a.yaml": BASE + "task: a\ntag: mytag\ndoc_to_text: question\ndoc_to_target: answer\n",
            "g/grp.yaml": "group: grp\ntask: [a]\n",
        },
        tmp_path / "g",
    )
    index = _manager(root).task_index
    assert index["a"]["type"] == "task" and index["a"]["yaml_path"].endswith("a.yaml")
    assert index["grp"]["type"] == "group" and index["grp"]["task"] == -1
    assert index["mytag"] == {**index["mytag"], "type": "tag", "yaml_path": -1, "task": ["a"]}


def test_nested_inline_group_and_weighted_group_score(write_files, tmp_path: Path) -> None:
    task = BASE + "doc_to_text: question\ndoc_to_target: answer\nmetric_list:\n  - metric: exact_match\n"
    group = (
        "group: outer\ntask:\n  - t1\n  - group: inner\n    task: [t2]\n"
        "    aggregate_metric_list:\n      - metric: exact_match\n"
        "aggregate_metric_list:\n  - metric: exact_match\n    weight_by_size: true\n"
    )
    root = write_files(
        {
            "n/data.jsonl": DATA,
            "n/t1.yaml": task + "task: t1\n",
            "n/t2.yaml": task + "task: t2\n",
            "n/o.yaml": group,
        },
        tmp_path / "n",
    )
    groups = _run(_manager(root), ["outer"])["groups"]
    assert groups["outer"]["exact_match,none"] == 1.0 and groups["inner"]["exact_match,none"] == 1.0


def test_fewshot_samples_without_a_split_and_class_function(write_files, tmp_path: Path) -> None:
    utils = (  # the published constructor shape: the YAML mapping arrives by keyword and may be adjusted
        "from lmms_eval.api.task import ConfigurableTask\n\n"
        "class MyTask(ConfigurableTask):\n    marker = 'mine'\n\n"
        "    def __init__(self, *args, config=None, **kwargs):\n"
        "        config = dict(config or {})\n        config['task_alias'] = 'My Task'\n"
        "        super().__init__(*args, config=config, **kwargs)\n"
    )
    yaml_text = (
        BASE + "task: shots\nclass: !function utils.MyTask\ndoc_to_text: question\ndoc_to_target: answer\n"
        "num_fewshot: 1\nfewshot_config:\n  sampler: first_n\n  samples:\n    - {question: EX, answer: ok}\n"
    )
    root = write_files({"f/data.jsonl": DATA, "f/utils.py": utils, "f/shots.yaml": yaml_text}, tmp_path / "f")
    task = _task(_manager(root), "shots")
    assert getattr(task, "marker", None) == "mine" and task.alias == "My Task"
    assert task.fewshot_context(ROWS[0], 0).startswith("EX ok")


@pytest.mark.parametrize("output_type", ["generate_until_agentic", "generate_visual_cot"])
def test_published_output_types_validate(write_files, tmp_path: Path, output_type: str) -> None:
    root = write_files(
        {"o/data.jsonl": DATA, "o/t.yaml": BASE + f"task: ot\noutput_type: {output_type}\n"}, tmp_path / "o"
    )
    task = _task(_manager(root), "ot")
    assert output_type == task.OUTPUT_TYPE


def test_folders_import_each_other_as_lmms_eval_tasks(write_files, tmp_path: Path) -> None:
    shared = "def shout(doc):\n    return doc['question'].upper()\n"
    user = (
        "from lmms_eval.tasks.helper_folder.common import shout\n"
        "from lmms_eval.tasks._task_utils.file_utils import generate_submission_file\n"
        "from lmms_eval.tasks._task_utils.mcq_extract import extract_mcq_answer\n"
        "from lmms_eval.verifiers import VerificationPipeline\n"
        "from lmms_eval.filters.extraction import ExtendedRegexFilter\n"
        "from lmms_eval.llm_judge.protocol import ServerConfig, Request\n"
        "from lmms_eval.api.metrics import levenshtein_distance\n"
        "from lmms_eval.utils import resolve_cache_dir\n"
        "CONFIG = ServerConfig(model_name='judge', num_retries=2, retry_delay=0.0)\n"
        "def doc_to_text(doc):\n    return shout(doc)\n"
    )
    root = write_files(
        {
            "helper_folder/common.py": shared,
            "user_folder/data.jsonl": DATA,
            "user_folder/utils.py": user,
            "user_folder/u.yaml": BASE
            + "task: upper\ndoc_to_text: !function utils.doc_to_text\ndoc_to_target: answer\n",
        },
        tmp_path / "tree",
    )
    task = _task(_manager(root), "upper")
    assert task.doc_to_text(ROWS[1]) == "Q1"
    assert sys.modules["lmms_eval.tasks.helper_folder.common"].shout({"question": "x"}) == "X"


def test_sibling_modules_of_two_folders_do_not_mix(write_files, tmp_path: Path) -> None:
    """``from helpers import x`` finds the file next to the task, in each folder separately."""
    files = {}
    for name in ("one", "two"):
        files[f"{name}/data.jsonl"] = DATA
        files[f"{name}/helpers.py"] = f"WORD = '{name}'\n"
        files[f"{name}/utils.py"] = "from helpers import WORD\n\ndef text(doc):\n    return WORD\n"
        files[f"{name}/t.yaml"] = BASE + f"task: sib_{name}\ndoc_to_text: !function utils.text\n"
    manager = _manager(write_files(files, tmp_path / "sib"))
    assert [_task(manager, f"sib_{n}").doc_to_text(ROWS[0]) for n in ("one", "two")] == ["one", "two"]
    assert "helpers" not in sys.modules


def test_two_include_paths_with_a_folder_of_the_same_name(write_files, tmp_path: Path) -> None:
    roots = []
    for word in ("first", "second"):
        roots.append(
            write_files(
                {
                    "same/data.jsonl": DATA,
                    "same/utils.py": f"def text(doc):\n    return '{word}'\n",
                    "same/t.yaml": BASE + f"task: same_{word}\ndoc_to_text: !function utils.text\n",
                },
                tmp_path / word,
            )
        )
    manager = TaskManager(include_path=[str(r) for r in roots], include_defaults=False, use_cache=False)
    assert [_task(manager, f"same_{w}").doc_to_text(ROWS[0]) for w in ("first", "second")] == [
        "first",
        "second",
    ]


def test_validate_names_a_missing_optional_dependency(write_files, tmp_path: Path, capsys) -> None:
    from lmms_eval.cli.tasks import validate

    root = write_files(
        {
            "v/data.jsonl": DATA,
            "v/utils.py": "import not_a_real_package_xyz\n\ndef text(doc):\n    return ''\n",
            "v/t.yaml": BASE + "task: needs_dep\ndoc_to_text: !function utils.text\n",
            "v/ok.yaml": '"task": fine\ndoc_to_text: question\n"include": t.yaml\n',
        },
        tmp_path / "v",
    )
    assert validate(str(root)) == 1
    out = capsys.readouterr().out
    assert "it imports 'not_a_real_package_xyz', which is not installed" in out
    assert "checked 2 tasks and groups in 2 YAML files: 1 problem(s)" in out


def test_user_folder_wins_over_a_builtin_with_a_notice(write_files, tmp_path: Path, caplog) -> None:
    root = write_files(
        {"pope/data.jsonl": DATA, "pope/pope.yaml": BASE + "task: pope\ndoc_to_text: question\n"},
        tmp_path / "u",
    )
    with caplog.at_level(logging.WARNING, logger="lmms_eval.tasks._index"):
        manager = TaskManager(include_path=str(root), use_cache=False)
    assert manager.task_index["pope"]["yaml_path"].startswith(str(root))
    assert "pope" not in manager.index.duplicates
    assert any("replace the built-in" in r.getMessage() and "pope" in r.getMessage() for r in caplog.records)


def test_task_kinds_run_end_to_end_with_the_dummy_model(write_files, tmp_path: Path) -> None:
    utils = (
        "from lmms_eval.tasks._task_utils.vqa_eval_metric import EvalAIAnswerProcessor\n"
        "from lmms_eval.tasks._task_utils.mcq_extract import extract_mcq_answer\n"
        "proc = EvalAIAnswerProcessor()\n"
        "def vqa(doc, results):\n    return {'acc': float(proc(results[0]) == proc(doc['answer']))}\n"
        "def yesno(doc, results):\n    return {'acc': float(results[0].lower().startswith(doc['answer']))}\n"
    )
    metric = "metric_list:\n  - metric: acc\n    aggregation: mean\n    higher_is_better: true\n"
    files = {
        "k/data.jsonl": DATA,
        "k/utils.py": utils,
        "k/vqa.yaml": BASE
        + "task: k_vqa\ndoc_to_text: question\ndoc_to_target: answer\nprocess_results: !function utils.vqa\n"
        + metric,
        "k/yn.yaml": BASE
        + "task: k_yesno\ndoc_to_text: question\ndoc_to_target: answer\nprocess_results: !function utils.yesno\n"
        + metric,
        "k/mc.yaml": BASE
        + "task: k_mc\noutput_type: multiple_choice\ndoc_to_text: question\ndoc_to_choice: choices\ndoc_to_target: answer\n",
        "k/ll.yaml": BASE
        + "task: k_ll\noutput_type: loglikelihood\ndoc_to_text: question\ndoc_to_target: answer\n",
    }
    manager = _manager(write_files(files, tmp_path / "k"))
    results = _run(manager, ["k_vqa", "k_yesno", "k_mc", "k_ll"])["results"]
    assert results["k_vqa"]["acc,none"] == 1.0 and results["k_yesno"]["acc,none"] == 1.0
    assert results["k_mc"]["acc,none"] == 1.0 and "perplexity,none" in results["k_ll"]


def test_published_helpers_behave_as_published() -> None:
    from lmms_eval.api.metrics import levenshtein_distance
    from lmms_eval.tasks._task_utils import mmmu_mcq_utils, point_format, reasoning_utils
    from lmms_eval.tasks._task_utils.mcq_extract import extract_mcq_answer
    from lmms_eval.verifiers import ExactMatchVerifier, VerificationPipeline
    from lmms_eval.verifiers.extractors import StripReasoningExtractor

    assert levenshtein_distance("kitten", "sitting") == 3
    assert (
        extract_mcq_answer("The answer is B") == "B"
        and extract_mcq_answer("<answer>D</answer>", ["A", "B", "C"]) == ""
    )
    assert mmmu_mcq_utils.get_multi_choice_info(["cat", "dog"]) == ({"A": "cat", "B": "dog"}, ["A", "B"])
    assert point_format.parse_point2d("(100, 200) [0.5, 0.25]", 1000, 800).tolist() == [
        [100, 160],
        [500, 200],
    ]
    scored = reasoning_utils.compute_score("x", "<think>t</think><answer>\\frac{1}{2}</answer>", "0.5")
    assert (
        scored["score"] == 1.0
        and reasoning_utils.compute_score("x", "<answer>B</answer>", "B")["score"] == 0.9
    )
    pipeline = VerificationPipeline([StripReasoningExtractor()], ExactMatchVerifier())
    assert pipeline.verify("q", "<think>x</think> Paris ", "paris").is_correct


# modules of the ``compat`` extra (the published dependencies the task tree imports)
COMPAT_MODULES = ("openai", "cv2", "pycocoevalcap", "math_verify", "zss", "evaluate")


@pytest.mark.compat
def test_published_task_tree_loads(tmp_path: Path) -> None:
    """Downloads lmms-eval==0.7.3 (network) and measures the load share with bench/bench_published_tree.py."""
    import importlib.util

    missing = [m for m in COMPAT_MODULES if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"install the compat extra (pip install -e '.[compat]'); missing: {', '.join(missing)}")
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "OPENAI_API_KEY": os.environ.get("OPENAI_API_KEY", "sk-offline"),
    }
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "bench_published_tree.py"), "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=1200,
        check=True,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["indexed"] >= 1900 and result["share"] >= 0.95, result


def test_file_media_and_template_helpers(tmp_path: Path, monkeypatch) -> None:
    from argparse import Namespace

    from lmms_eval.tasks._task_utils import default_template_yaml, file_utils, media_resolver, video_loader
    from lmms_eval.utils import resolve_cache_dir

    out = file_utils.generate_submission_file("s.json", Namespace(output_path=str(tmp_path)), subpath="subs")
    assert out == str(tmp_path / "subs" / "s.json") and (tmp_path / "subs").is_dir()
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.setenv("CLIPS", str(tmp_path / "clips"))
    (tmp_path / "clips").mkdir()
    (tmp_path / "clips" / "a.wav").write_bytes(b"")
    (tmp_path / "vids" / "extra").mkdir(parents=True)
    (tmp_path / "vids" / "extra" / "v.mp4").write_bytes(b"")
    assert media_resolver.resolve_media_reference("a", media_type="audio", env_vars=("CLIPS",)) == str(
        tmp_path / "clips" / "a.wav"
    )
    found = media_resolver.resolve_media_reference("v.mp4", cache_dir="vids", extra_subdirs=("extra",))
    assert found == str(tmp_path / "vids" / "extra" / "v.mp4")
    assert media_resolver.resolve_media_reference("missing.mp4", cache_dir="vids") == "missing.mp4"
    assert video_loader.get_cache_dir({"dataset_kwargs": {"cache_dir": "vids"}}, "extra") == str(
        tmp_path / "vids" / "extra"
    )
    assert video_loader.get_video(str(tmp_path / "vids" / "extra"), "v").endswith("v.mp4")
    with pytest.raises(FileNotFoundError, match="nope"):
        video_loader.get_video(str(tmp_path), "nope")
    assert resolve_cache_dir("$CLIPS/x") == str(tmp_path / "clips" / "x")
    assert resolve_cache_dir("rel", "/base") == "/base/rel" and resolve_cache_dir("/abs", "/base") == "/abs"
    (tmp_path / "_default_template_yaml").write_text(
        "dataset_path: x\ndoc_to_text: !function utils.f\nmetadata:\n  k: 1\n", encoding="utf-8"
    )
    template = default_template_yaml.load_default_template_yaml(str(tmp_path / "utils.py"))
    assert template == {"dataset_path": "x", "metadata": {"k": 1}}


def test_judge_protocol_filters_and_verifiers() -> None:
    from lmms_eval.filters.extraction import ExtendedRegexFilter
    from lmms_eval.llm_judge import get_server
    from lmms_eval.llm_judge.protocol import Request, Response, ServerConfig
    from lmms_eval.tasks._task_utils.vqa_eval_metric import EvalAIAnswerProcessor
    from lmms_eval.verifiers import (
        CompositeVerifier,
        MCQMatchVerifier,
        NumericToleranceVerifier,
        build_verification_pipeline,
        parse_binary_response,
    )
    from lmms_eval.verifiers.openai import OpenAIVerifier

    config = ServerConfig(
        model_name="judge", num_retries=2, retry_delay=0.5, max_concurrent=3, temperature=0.2
    )
    assert (config.max_retries, config.retry_backoff_s, config.num_concurrent) == (2, 0.5, 3)
    assert (config.num_retries, config.retry_delay) == (2, 0.5)
    request = Request(messages=[{"role": "user", "content": "Is 2+2=4? Answer 1 or 0."}], config=config)
    assert request.temperature == 0.2
    response = get_server("dummy", config).evaluate(request)
    assert isinstance(response, Response) and response.success and response.model_used == "judge"

    regex = ExtendedRegexFilter(r"answer: (\w+)", ignore_case=True, ignore_punctuation=True)
    assert regex.filter_ignores("Hello, World!") == "hello world"
    assert regex.apply([["answer: B"], ["none"]], [{}, {}]) == [["B"], ["[invalid]"]]

    processor = EvalAIAnswerProcessor()
    assert [processor(s) for s in ["Two dogs!", "the 3 apples", "1,000"]] == ["2 dogs", "3 apples", "1000"]

    numeric = build_verification_pipeline(
        {"extractors": [{"type": "number"}], "verifier": {"type": "numeric"}}
    )
    assert numeric.verify("q", "about 3.14 m", "3.1416").is_correct
    either = CompositeVerifier([NumericToleranceVerifier(), MCQMatchVerifier()])
    assert either.verify("q", "The answer is (B)", "B").is_correct  # numeric cannot decide, letter can
    assert [parse_binary_response(s) for s in ["Yes", "no", "1", "Incorrect", "[[1]]"]] == [
        True,
        False,
        True,
        False,
        True,
    ]
    judged = OpenAIVerifier(api_type="dummy", custom_prompt="Q {question} A {prediction} G {ground_truth}")
    assert judged.prompt("q", "p", "g") == "Q q A p G g"
