"""``generate_until_agentic`` end to end: a small deterministic tool-use task of ours.

The task: count items in a stock with a ``count`` tool, then submit the total. Its ``doc_to_text``
is the simulator, with the published contract (learned by running the published package's
``tau2_bench`` utilities): round 0 returns the prompt; later rounds get ``previous_output`` (the
model's answers so far), ``round_idx`` and ``previous_round_info`` and return ``(visuals, prompt,
done, outputs, info)``, with the task's result payload as the last output when done.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from openai_server import OpenAIServer, last_user_text

import lmms_eval
from lmms_eval.api.agentic import STEPS_EXHAUSTED, run_agentic
from lmms_eval.api.instance import GenerationResult, Instance
from lmms_eval.models.chat.dummy import DummyChat
from lmms_eval.models.simple.dummy import DummySimple
from lmms_eval.tasks import TaskManager

DOCS = [
    {
        "question": "How many apples and pears together?",
        "stock": {"apples": 3, "pears": 5, "plums": 2},
        "answer": 8,
    },
    {
        "question": "How many pears and plums together?",
        "stock": {"apples": 1, "pears": 4, "plums": 6},
        "answer": 10,
    },
    {
        "question": "How many apples and plums together?",
        "stock": {"apples": 2, "pears": 2, "plums": 2},
        "answer": 4,
    },
]

UTILS = r"""
import json
import re

TOOL = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)
SUBMIT = re.compile(r"<submit>(.*?)</submit>", re.S)


def _prompt(doc, info):
    known = ", ".join(f"{k}={v}" for k, v in sorted(info["known"].items())) or "none"
    lines = [
        doc["question"],
        f"Known counts: {known}",
        'Call a tool: <tool_call>{"name": "count", "arguments": {"item": "apples"}}</tool_call>',
        'Or answer: <submit>{"answer": 0}</submit>',
    ]
    if info.get("error"):
        lines.insert(1, "Error: " + info["error"])
    return "\n".join(lines)


def inventory_doc_to_text(doc, lmms_eval_specific_kwargs=None, previous_output=None, round_idx=None,
                          previous_round_info=None):
    info = previous_round_info or {"known": {}, "tool_calls": 0, "invalid_steps": 0}
    if not previous_output:
        return _prompt(doc, info)
    info = {**info, "known": dict(info["known"]), "error": None}
    last = previous_output[-1]
    submit = SUBMIT.search(last)
    if submit:
        answer = json.loads(submit.group(1)).get("answer")
        payload = {"success": answer == doc["answer"], "answer": answer, "tool_calls": info["tool_calls"],
                   "trace": list(previous_output)}
        return None, None, True, [json.dumps(payload)], info
    call = TOOL.search(last)
    if call:
        request = json.loads(call.group(1))
        item = request.get("arguments", {}).get("item")
        info["tool_calls"] += 1
        if request.get("name") == "count" and item in doc["stock"]:
            info["known"][item] = doc["stock"][item]
        else:
            info["error"] = f"unknown tool or item: {request}"
    else:
        info["invalid_steps"] += 1
        info["error"] = "no <tool_call> or <submit> found"
    return [], _prompt(doc, info), False, list(previous_output), info


def inventory_process_results(doc, results):
    payload = json.loads(results[0])
    return {
        "success": float(bool(payload.get("success"))),
        "tool_calls": float(payload.get("tool_calls", 0)),
        "ran_out": float(payload.get("error") == "max_agentic_steps_reached"),
    }
"""

TASK = """task: inventory
dataset_path: json
dataset_kwargs:
  data_files:
    test: data.jsonl
test_split: test
output_type: generate_until_agentic
doc_to_text: !function utils.inventory_doc_to_text
doc_to_target: answer
generation_kwargs:
  max_new_tokens: 64
  temperature: 0
  max_agentic_steps: 4
process_results: !function utils.inventory_process_results
metric_list:
  - metric: success
  - metric: tool_calls
  - metric: ran_out
"""


def _tool(item: str) -> str:
    return f'<tool_call>{{"name": "count", "arguments": {{"item": "{item}"}}}}</tool_call>'


def _submit(answer: int) -> str:
    return f'<submit>{{"answer": {answer}}}</submit>'


SCRIPTS = [
    [_tool("apples"), _tool("pears"), _submit(8)],  # right
    [_tool("pears"), "let me think", _submit(9)],  # wrong, with an invalid step
    ["hmm"],  # never submits: runs out after 4 steps
]


@pytest.fixture
def tree(write_files, tmp_path: Path) -> Path:
    data = "\n".join(json.dumps(d) for d in DOCS)
    return write_files(
        {"a/data.jsonl": data, "a/utils.py": UTILS, "a/inventory.yaml": TASK}, tmp_path / "tasks"
    )


def _scripts(tmp_path: Path) -> Path:
    path = tmp_path / "scripts.jsonl"
    records = [{"task": "inventory", "doc_id": i, "response": s} for i, s in enumerate(SCRIPTS)]
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return path


def _run(tree: Path, out: Path, model: Any, model_args: Any = None) -> dict[str, Any]:
    return lmms_eval.simple_evaluate(
        model=model,
        model_args=model_args,
        tasks=["inventory"],
        task_manager=TaskManager(include_path=str(tree), include_defaults=False),
        output_path=str(out),
        log_samples=True,
        show_progress=False,
        bootstrap_iters=0,
    )


def _samples(out: Path) -> list[dict[str, Any]]:
    path = next(out.rglob("*_samples_inventory.jsonl"))
    return sorted((json.loads(line) for line in path.read_text().splitlines()), key=lambda s: s["doc_id"])


def test_requests_have_the_published_seven_item_layout(tree: Path) -> None:
    task = TaskManager(include_path=str(tree), include_defaults=False).load_task_or_group(["inventory"])[
        "inventory"
    ]
    for chat in (False, True):
        [request] = task.construct_requests(0, task.eval_docs[0], chat=chat)  # type: ignore[union-attr]
        assert request.request_type == "generate_until_agentic"
        context, gen_kwargs, doc_to_visual, doc_to_text, doc_id, name, split = request.args
        assert context.startswith("How many apples and pears together?")
        assert gen_kwargs["max_agentic_steps"] == 4
        assert callable(doc_to_visual) and callable(doc_to_text)
        assert (doc_id, name, split) == (0, "inventory", "test")


@pytest.mark.parametrize("model", ["dummy", "dummy_chat"])
def test_scripted_model_runs_the_tool_loop_end_to_end(tree: Path, tmp_path: Path, model: str) -> None:
    model_args = f"responses={_scripts(tmp_path)}"
    chosen = DummyChat.create_from_arg_string(model_args) if model == "dummy_chat" else "dummy"
    result = _run(tree, tmp_path / "o", chosen, None if model == "dummy_chat" else model_args)
    scores = result["results"]["inventory"]
    assert scores["success,none"] == pytest.approx(1 / 3)
    assert scores["ran_out,none"] == pytest.approx(1 / 3)
    samples = _samples(tmp_path / "o")
    right = json.loads(samples[0]["resps"][0][0])
    assert right == {"success": True, "answer": 8, "tool_calls": 2, "trace": SCRIPTS[0]}
    wrong = json.loads(samples[1]["resps"][0][0])
    assert wrong["success"] is False and wrong["answer"] == 9 and wrong["trace"] == SCRIPTS[1]
    out = json.loads(samples[2]["resps"][0][0])
    assert out["error"] == STEPS_EXHAUSTED and out["success"] is False
    assert out["last_model_output"] == "hmm" and out["trace"] == ["hmm"] * 4
    assert out["invalid_steps"] == 4  # the simulator's round info is kept
    # every round's tokens count in the usage (dummy: words of prompt and answer)
    assert result["usage"]["by_task"]["inventory"]["output_tokens"] > 0


def _policy(payload: dict[str, Any]) -> str:
    """A deterministic agent behind the fake OpenAI server: count what the question names, then submit."""
    text = last_user_text(payload)
    wanted = re.findall(r"apples|pears|plums", text.split("\n")[0])
    known = dict(re.findall(r"(\w+)=(\d+)", text.split("Known counts:")[1].split("\n")[0]))
    missing = [item for item in wanted if item not in known]
    if missing:
        return _tool(missing[0])
    return _submit(sum(int(known[item]) for item in wanted))


@pytest.mark.parametrize("backend", ["openai_compatible", "async_openai"])
def test_openai_compatible_backends_run_the_tool_loop(tree: Path, tmp_path: Path, backend: str) -> None:
    with OpenAIServer(responder=_policy) as server:
        model_args = {
            "model": "gpt-4o-mini",
            "base_url": server.base_url,
            "api_key": "sk-test",
            "max_retries": 0,
        }
        result = _run(tree, tmp_path / "o", backend, model_args)
        calls = len(server.requests)
    scores = result["results"]["inventory"]
    assert scores["success,none"] == 1.0 and scores["ran_out,none"] == 0.0
    assert scores["tool_calls,none"] == 2.0
    assert calls == 9  # three docs, two tool calls and a submit each
    assert result["usage"]["by_task"]["inventory"]["n_api_calls"] == 3  # one answer per request
    assert json.loads(_samples(tmp_path / "o")[1]["resps"][0][0])["answer"] == 10


def test_run_agentic_rejects_a_request_of_the_wrong_layout() -> None:
    model = DummySimple()
    model.task_dict = {"t": {"test": [{"q": "x"}]}}
    request = Instance(
        "generate_until_agentic", ("ctx", {}, None, 0, "t", "test"), 0, {"task": "t", "doc_id": 0}
    )
    with pytest.raises(ValueError, match="expected \\(context, gen_kwargs"):
        run_agentic(model, [request])


def test_a_task_without_a_simulator_ends_after_one_round() -> None:
    model = DummySimple(response="<submit>{}</submit>")
    model.task_dict = {"t": {"test": [{"q": "x"}]}}
    request = Instance(
        "generate_until_agentic",
        ("ctx", {}, None, None, 0, "t", "test"),
        0,
        {"task": "t", "doc_id": 0, "split": "test"},
    )
    [answer] = run_agentic(model, [request])
    assert isinstance(answer, GenerationResult)
    assert json.loads(answer.text)["error"] == "the task has no doc_to_text function"


def test_generate_visual_cot_says_the_model_does_not_support_it(write_files, tmp_path: Path) -> None:
    root = write_files(
        {
            "v/data.jsonl": json.dumps({"question": "draw", "answer": "x"}),
            "v/cot.yaml": TASK.replace("task: inventory", "task: cot")
            .replace("generate_until_agentic", "generate_visual_cot")
            .replace("!function utils.inventory_doc_to_text", "question")
            .replace("process_results: !function utils.inventory_process_results\n", "")
            .replace(
                "  - metric: success\n  - metric: tool_calls\n  - metric: ran_out\n",
                "  - metric: exact_match\n",
            ),
        },
        tmp_path / "tasks",
    )
    with pytest.raises(NotImplementedError, match="does not support generate_visual_cot"):
        lmms_eval.simple_evaluate(
            model="dummy",
            tasks=["cot"],
            task_manager=TaskManager(include_path=str(root), include_defaults=False),
            show_progress=False,
        )
