"""Task YAML features through the real loader and evaluator: !function, include, groups, kwargs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import lmms_eval
from lmms_eval.errors import ConfigError
from lmms_eval.tasks import TaskManager

DATA = "\n".join(
    json.dumps(
        {"question": f"q{i}", "answer": "yes" if i % 2 else "no", "category": "odd" if i % 2 else "even"}
    )
    for i in range(10)
)

BASE = """dataset_path: json
dataset_kwargs:
  data_files:
    test: data.jsonl
test_split: test
doc_to_target: answer
metric_list:
  - metric: exact_match
"""

UTILS = """
def doc_to_text(doc, lmms_eval_specific_kwargs=None):
    kw = lmms_eval_specific_kwargs or {}
    return kw.get("pre_prompt", "") + doc["question"] + kw.get("post_prompt", "")


def process_results(doc, results):
    pred = results[0].strip()
    return {"correct": float(pred == doc["answer"]), "by_cat": {"cat": doc["category"], "ok": pred == doc["answer"]}}


def per_category(items):
    cats = {}
    for item in items:
        cats.setdefault(item["cat"], []).append(item["ok"])
    return sum(sum(v) / len(v) for v in cats.values()) / len(cats)
"""


def run(manager: TaskManager, tasks: list[str], **kwargs):
    return lmms_eval.simple_evaluate(
        model="dummy", tasks=tasks, task_manager=manager, show_progress=False, **kwargs
    )


@pytest.fixture
def root(write_files, tmp_path: Path) -> Path:
    return write_files(
        {
            "t/data.jsonl": DATA,
            "t/utils.py": UTILS,
            "t/_base_yaml": BASE,
            "t/_prompt_yaml": "include: _base_yaml\ndoc_to_text: !function utils.doc_to_text\n"
            "lmms_eval_specific_kwargs:\n  default:\n    pre_prompt: 'Q: '\n    post_prompt: ' A:'\n"
            "  dummy:\n    post_prompt: ' Answer:'\n",
            "t/chain.yaml": "include: _prompt_yaml\ntask: chain\n",
            "t/custom.yaml": "include: _prompt_yaml\ntask: custom\nprocess_results: !function utils.process_results\n"
            "metric_list:\n  - metric: correct\n    aggregation: mean\n  - metric: by_cat\n"
            "    aggregation: !function utils.per_category\n",
            "t/modfn.yaml": "include: _base_yaml\ntask: modfn\ndoc_to_text: !function lmms_eval.api.metrics.mean\n",
            "t/grp.yaml": "group: grp\ngroup_alias: The Group\ntask:\n  - chain\n  - task: custom\n    task_alias: Custom\n"
            "aggregate_metric_list:\n  - metric: exact_match\n    weight_by_size: true\n",
        },
        tmp_path / "tasks",
    )


def test_include_chain_and_function_with_model_specific_kwargs(root: Path) -> None:
    manager = TaskManager(include_path=str(root), include_defaults=False, model_name="dummy")
    task = manager.load_task_or_group(["chain"])["chain"]
    doc = task.eval_docs[0]
    # dummy's own entry is merged over default: pre_prompt from default, post_prompt from dummy
    task.set_model_names("dummy")
    assert task.doc_to_text(doc) == "Q: q0 Answer:"
    task.set_model_names("another_model")
    assert task.doc_to_text(doc) == "Q: q0 A:"


def test_function_resolves_as_module_path_when_no_local_file(root: Path) -> None:
    manager = TaskManager(include_path=str(root), include_defaults=False)
    task = manager.load_task_or_group(["modfn"])["modfn"]
    from lmms_eval.api.metrics import mean

    assert task.config.doc_to_text is mean


def test_custom_process_results_and_function_aggregation(root: Path) -> None:
    manager = TaskManager(include_path=str(root), include_defaults=False)
    results = run(manager, ["custom"], model_args="answer_field=answer,accuracy=0.5")
    scores = results["results"]["custom"]
    # recompute from the dummy's deterministic choice of known docs
    from lmms_eval.models.simple.dummy import _unit_hash

    knows = [_unit_hash(0, "custom", i) < 0.5 for i in range(10)]
    assert scores["correct,none"] == pytest.approx(sum(knows) / 10)
    even = [k for i, k in enumerate(knows) if i % 2 == 0]
    odd = [k for i, k in enumerate(knows) if i % 2]
    assert scores["by_cat,none"] == pytest.approx((sum(even) / 5 + sum(odd) / 5) / 2)
    assert scores["alias"] == "custom"


def test_group_aggregates_subtasks_with_alias_and_override(root: Path) -> None:
    manager = TaskManager(include_path=str(root), include_defaults=False)
    results = run(manager, ["grp"], model_args="answer_field=answer,accuracy=0.6")
    chain = results["results"]["chain"]["exact_match,none"]
    custom = results["results"]["custom"]
    assert custom["alias"] == "Custom"
    assert results["groups"]["grp"]["alias"] == "The Group"
    assert results["group_subtasks"]["grp"] == ["chain", "custom"]
    # 'custom' reports 'correct', not exact_match: the group averages the subtasks that have it
    assert results["groups"]["grp"]["exact_match,none"] == pytest.approx(chain)
    assert results["groups"]["grp"]["samples"] == 20


def test_group_weight_by_size(write_files, tmp_path: Path) -> None:
    small = "\n".join(json.dumps({"question": "q", "answer": "A"}) for _ in range(2))
    large = "\n".join(json.dumps({"question": "q", "answer": "B"}) for _ in range(6))
    task = (
        "task: {n}\ndataset_path: json\ndataset_kwargs:\n  data_files:\n    test: {n}.jsonl\ntest_split: test\n"
        "doc_to_text: question\ndoc_to_target: answer\n"
    )
    files = {
        "g/small.jsonl": small,
        "g/large.jsonl": large,
        "g/small.yaml": task.format(n="small"),
        "g/large.yaml": task.format(n="large"),
        "g/weighted.yaml": "group: weighted\ntask: [small, large]\naggregate_metric_list:\n  - metric: exact_match\n    weight_by_size: true\n",
        "g/plain.yaml": "group: plain\ntask: [small, large]\naggregate_metric_list:\n  - metric: exact_match\n    weight_by_size: false\n",
    }
    root = write_files(files, tmp_path / "groups")
    manager = TaskManager(include_path=str(root), include_defaults=False)
    # dummy answers "A" always: small scores 1.0 (2 docs), large 0.0 (6 docs)
    weighted = run(manager, ["weighted"])["groups"]["weighted"]["exact_match,none"]
    plain = run(manager, ["plain"])["groups"]["plain"]["exact_match,none"]
    assert weighted == pytest.approx(2 / 8)
    assert plain == pytest.approx(0.5)


def test_leaf_selected_twice_is_an_error(root: Path) -> None:
    manager = TaskManager(include_path=str(root), include_defaults=False)
    with pytest.raises(ConfigError, match="selected twice"):
        manager.load_task_or_group(["grp", "chain"])


def test_mistyped_value_names_file_key_and_value(write_files, tmp_path: Path) -> None:
    root = write_files({"m/bad.yaml": BASE + "task: bad\nrepeats: many\n"}, tmp_path / "m")
    manager = TaskManager(include_path=str(root), include_defaults=False)
    with pytest.raises(ConfigError) as info:
        manager.load_task_or_group(["bad"])
    message = str(info.value)
    assert "bad.yaml" in message and "repeats" in message and "'many'" in message


def test_missing_function_suggests_name(root: Path, write_files) -> None:
    write_files(
        {"t/typo_fn.yaml": "include: _base_yaml\ntask: typo_fn\ndoc_to_text: !function utils.doc_to_txt\n"},
        root,
    )
    manager = TaskManager(include_path=str(root), include_defaults=False)
    with pytest.raises(ConfigError, match=r"no attribute 'doc_to_txt'\. Did you mean 'doc_to_text'"):
        manager.load_task_or_group(["typo_fn"])


def test_templates_fields_and_choices(write_files, tmp_path: Path) -> None:
    data = json.dumps({"q": "2+2", "opts": ["3", "4", "5"], "gold": 1, "label": "four"})
    yaml_text = (
        "task: tmpl\ndataset_path: json\ndataset_kwargs:\n  data_files:\n    test: d.jsonl\ntest_split: test\n"
        "output_type: multiple_choice\ndoc_to_text: 'Question: {{q}}'\ndoc_to_choice: opts\ndoc_to_target: gold\n"
    )
    root = write_files({"c/d.jsonl": data, "c/tmpl.yaml": yaml_text}, tmp_path / "c")
    task = TaskManager(include_path=str(root), include_defaults=False).load_task_or_group(["tmpl"])["tmpl"]
    doc = task.eval_docs[0]
    assert task.doc_to_text(doc) == "Question: 2+2"
    assert task.doc_to_choice(doc) == ["3", "4", "5"]
    assert task.gold_index(doc) == 1 and task.gold_text(doc) == "4"
    requests = task.build_all_requests(chat=False)
    assert [r.args[1] for r in requests] == [" 3", " 4", " 5"]  # target_delimiter + choice
    assert all(len(r.args) == 6 for r in requests)


def test_multiple_choice_highest_loglikelihood_wins(write_files, tmp_path: Path) -> None:
    rows = [
        {"q": f"q{i}", "opts": ["red", "green", "blue"], "answer": ["red", "green", "blue"][i % 3]}
        for i in range(9)
    ]
    yaml_text = (
        "task: mc\ndataset_path: json\ndataset_kwargs:\n  data_files:\n    test: d.jsonl\ntest_split: test\n"
        "output_type: multiple_choice\ndoc_to_text: q\ndoc_to_choice: opts\ndoc_to_target: answer\n"
    )
    root = write_files(
        {"mc/d.jsonl": "\n".join(map(json.dumps, rows)), "mc/mc.yaml": yaml_text}, tmp_path / "mc"
    )
    manager = TaskManager(include_path=str(root), include_defaults=False)
    # the oracle dummy gives the gold continuation the highest log-likelihood for every doc
    scores = run(manager, ["mc"], model_args="answer_field=answer")["results"]["mc"]
    assert scores["acc,none"] == 1.0 and scores["acc_norm,none"] == 1.0
    # a chat model runs the same task through loglikelihood too (the dummy resolves to chat)
    assert (
        run(manager, ["mc"], model_args="answer_field=answer", force_simple=True)["results"]["mc"]["acc,none"]
        == 1.0
    )


def test_process_docs_repeats_and_generation_kwargs(write_files, tmp_path: Path) -> None:
    utils = "def keep_odd(ds):\n    return ds.filter(lambda d: int(d['question'][1:]) % 2 == 1)\n"
    yaml_text = BASE + (
        "task: proc\ndoc_to_text: question\nprocess_docs: !function utils.keep_odd\nrepeats: 3\n"
        'generation_kwargs:\n  max_new_tokens: 5\n  until: "\\n"\nmodel_specific_generation_kwargs:\n  dummy:\n    temperature: 0\n'
    )
    root = write_files({"p/data.jsonl": DATA, "p/utils.py": utils, "p/proc.yaml": yaml_text}, tmp_path / "p")
    manager = TaskManager(include_path=str(root), include_defaults=False)
    task = manager.load_task_or_group(["proc"])["proc"]
    task.set_model_names("dummy")
    assert len(task.eval_docs) == 5
    request = task.build_all_requests(chat=True)[0]
    assert request.args[1] == {"max_new_tokens": 5, "until": ["\n"], "temperature": 0.0}
    results = run(manager, ["proc"], model_args="answer_field=answer", log_samples=False)
    assert results["n-samples"]["proc"] == {"original": 5, "effective": 5}
    assert results["results"]["proc"]["exact_match,none"] == 1.0  # all odd docs answer "yes"


def test_few_shot_context_is_deterministic_and_excludes_the_doc(write_files, tmp_path: Path) -> None:
    yaml_text = BASE + "task: fs\ndoc_to_text: question\nfewshot_split: test\nnum_fewshot: 2\n"
    root = write_files({"f/data.jsonl": DATA, "f/fs.yaml": yaml_text}, tmp_path / "f")
    manager = TaskManager(include_path=str(root), include_defaults=False)
    task = manager.load_task_or_group(["fs"])["fs"]
    first = task.fewshot_context(task.eval_docs[3], 3)
    again = task.fewshot_context(task.eval_docs[3], 3)
    assert first == again
    parts = first.split("\n\n")
    assert len(parts) == 3 and parts[-1] == "q3"
    assert "q3 " not in parts[0] and "q3 " not in parts[1]
    assert all(p.endswith((" yes", " no")) for p in parts[:2])


def test_limit_fraction_offset_and_gen_kwargs_override(root: Path) -> None:
    manager = TaskManager(include_path=str(root), include_defaults=False)
    results = run(
        manager,
        ["chain"],
        limit=0.25,
        offset=4,
        gen_kwargs="max_new_tokens=3",
        model_args="answer_field=answer",
    )
    assert results["n-samples"]["chain"] == {"original": 10, "effective": 3}  # ceil(10 * 0.25)
    assert results["results"]["chain"]["exact_match,none"] == 1.0
    assert results["config"]["gen_kwargs"] == {"max_new_tokens": 3}
    assert math.isclose(results["results"]["chain"]["samples"], 3)


def test_group_overrides_merge_mappings_and_folders_load_groups(write_files, tmp_path: Path) -> None:
    data = "\n".join(json.dumps({"question": f"q{i}", "answer": "A"}) for i in range(3))
    task = (
        BASE + 'task: {n}\ndoc_to_text: question\ngeneration_kwargs:\n  until: ["\\n"]\n  max_new_tokens: 4\n'
    )
    group = "group: fam\ntask: [m1, m2]\ngeneration_kwargs:\n  temperature: 0.5\n"
    folder = write_files(
        {
            "fam/data.jsonl": data,
            "fam/m1.yaml": task.format(n="m1"),
            "fam/m2.yaml": task.format(n="m2"),
            "fam/fam.yaml": group,
        },
        tmp_path / "folder",
    )
    manager = TaskManager(include_defaults=False)
    nodes = manager.load_task_or_group([str(folder / "fam")])  # a folder holding a group and its tasks
    assert list(nodes) == ["fam"]
    leaf = next(nodes["fam"].leaves())
    assert leaf.generation_kwargs() == {"until": ["\n"], "max_new_tokens": 4, "temperature": 0.5}


def test_nested_groups_and_model_specific_target_kwargs(write_files, tmp_path: Path) -> None:
    rows = "\n".join(json.dumps({"question": f"q{i}", "answer": "A", "long": "A (alpha)"}) for i in range(4))
    utils = "def target(doc, style=None):\n    return doc['long'] if style == 'verbose' else doc['answer']\n"
    task = (
        BASE.replace("doc_to_target: answer\n", "")
        + "task: {n}\ndoc_to_text: question\ndoc_to_target: !function utils.target\n"
        "model_specific_target_kwargs:\n  default: short\n  verbose_model: verbose\n"
    )
    files = {
        "n/data.jsonl": rows,
        "n/utils.py": utils,
        "n/a.yaml": task.format(n="leaf_a"),
        "n/b.yaml": task.format(n="leaf_b"),
        "n/inner.yaml": "group: inner\ntask: [leaf_a]\naggregate_metric_list:\n  - metric: exact_match\n",
        "n/outer.yaml": "group: outer\ntask: [inner, leaf_b]\naggregate_metric_list:\n  - metric: exact_match\n",
    }
    root = write_files(files, tmp_path / "nested")
    manager = TaskManager(include_path=str(root), include_defaults=False)
    results = run(manager, ["outer"])  # dummy answers "A"
    assert results["group_subtasks"] == {"inner": ["leaf_a"], "outer": ["inner", "leaf_b"]}
    assert results["groups"]["inner"]["exact_match,none"] == 1.0
    assert results["groups"]["outer"]["exact_match,none"] == 1.0
    leaf = manager.load_task_or_group(["leaf_a"])["leaf_a"]
    leaf.set_model_names("verbose_model")
    assert leaf.doc_to_target(leaf.eval_docs[0]) == "A (alpha)"
    leaf.set_model_names("dummy")
    assert leaf.doc_to_target(leaf.eval_docs[0]) == "A"


def test_process_results_batch_scores_a_whole_task_in_one_call(write_files, tmp_path: Path) -> None:
    utils = (
        "CALLS = []\n"
        "def judge_all(docs, results):\n"
        "    CALLS.append(len(docs))\n"
        "    return [{'judged': float(r[0].strip() == d['answer'])} for d, r in zip(docs, results)]\n"
    )
    yaml_text = BASE.replace("metric_list:\n  - metric: exact_match\n", "") + (
        "task: batched\ndoc_to_text: question\nprocess_results_batch: !function utils.judge_all\n"
        "metric_list:\n  - metric: judged\n    aggregation: mean\n"
    )
    root = write_files(
        {"b/data.jsonl": DATA, "b/utils.py": utils, "b/batched.yaml": yaml_text}, tmp_path / "b"
    )
    manager = TaskManager(include_path=str(root), include_defaults=False)
    results = run(manager, ["batched"], model_args="answer_field=answer,accuracy=0.5")
    task = manager.load_task_or_group(["batched"])["batched"]
    import sys

    module = sys.modules[task.config.process_results_batch.__module__]
    assert module.CALLS[-1] == 10  # one call for all ten docs
    from lmms_eval.models.simple.dummy import _unit_hash

    expected = sum(_unit_hash(0, "batched", i) < 0.5 for i in range(10)) / 10
    assert results["results"]["batched"]["judged,none"] == pytest.approx(expected)
