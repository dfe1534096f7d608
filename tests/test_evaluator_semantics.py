"""Evaluator semantics: output types, reasoning tags, doc-aware filters, repeats, media and prompts."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import lmms_eval
from lmms_eval.api.doc_fields import media_part
from lmms_eval.api.task import TaskRunOptions
from lmms_eval.protocol import ChatMessages
from lmms_eval.tasks import TaskManager


def _task(write_files, tmp_path: Path, name: str, rows: list[dict], extra: str) -> TaskManager:
    text = (
        f"task: {name}\ndataset_path: json\ndataset_kwargs:\n  data_files:\n    test: {name}.jsonl\ntest_split: test\n"
        + extra
    )
    root = write_files(
        {f"{name}/{name}.jsonl": "\n".join(map(json.dumps, rows)), f"{name}/{name}.yaml": text},
        tmp_path / "t",
    )
    return TaskManager(include_path=str(root), include_defaults=False)


def _run(manager: TaskManager, task: str, **kwargs):
    return lmms_eval.simple_evaluate(
        model="dummy", tasks=[task], task_manager=manager, show_progress=False, **kwargs
    )


def test_loglikelihood_task_scores_perplexity_and_acc(write_files, tmp_path: Path) -> None:
    rows = [{"ctx": f"The colour of sample {i} is", "answer": "red"} for i in range(4)]
    manager = _task(
        write_files,
        tmp_path,
        "ll",
        rows,
        "output_type: loglikelihood\ndoc_to_text: ctx\ndoc_to_target: answer\n",
    )
    task = manager.load_task_or_group(["ll"])["ll"]
    request = task.build_all_requests(chat=False)[0]
    assert len(request.args) == 6 and request.args[1](task.eval_docs[0]) == " red"
    scores = _run(manager, "ll", model_args="answer_field=answer")["results"]["ll"]
    # the oracle dummy returns (-0.5, True) for the gold continuation
    assert scores["acc,none"] == 1.0
    assert scores["perplexity,none"] == pytest.approx(math.exp(0.5))


def test_reasoning_blocks_are_stripped_before_scoring_unless_disabled(write_files, tmp_path: Path) -> None:
    rows = [{"q": "2+2", "answer": "4"}, {"q": "3+3", "answer": "6"}]
    manager = _task(write_files, tmp_path, "rt", rows, "doc_to_text: q\ndoc_to_target: answer\n")
    replies = tmp_path / "replies.jsonl"
    replies.write_text(
        json.dumps({"task": "rt", "doc_id": 0, "response": "<think>2 and 2 make 4</think>4"})
        + "\n"
        + json.dumps({"task": "rt", "doc_id": 1, "response": "so the answer is</think>6"})
        + "\n"
    )
    args = f"responses={replies}"
    assert _run(manager, "rt", model_args=args)["results"]["rt"]["exact_match,none"] == 1.0
    assert (
        _run(manager, "rt", model_args=args, reasoning_tags="none")["results"]["rt"]["exact_match,none"]
        == 0.0
    )


def test_doc_aware_filter_sees_the_doc_of_each_instance_with_offset(write_files, tmp_path: Path) -> None:
    colours = ["red", "green", "blue", "cyan"]
    rows = [
        {"q": f"q{i}", "choices": colours, "answer": "ABCD"[i % 4], "said": colours[i % 4]} for i in range(8)
    ]
    extra = (
        "doc_to_text: q\ndoc_to_target: answer\n"
        "filter_list:\n  - name: letter\n    filter:\n      - function: multi_choice_regex\n      - function: take_first\n"
    )
    manager = _task(write_files, tmp_path, "mcr", rows, extra)
    # the dummy answers with the colour *text*; the filter maps it to a letter through the doc's own choices
    results = _run(manager, "mcr", model_args="answer_field=said", offset=3, limit=4)
    assert results["results"]["mcr"]["exact_match,letter"] == 1.0
    assert results["n-samples"]["mcr"]["effective"] == 4


def test_repeats_send_each_request_k_times(write_files, tmp_path: Path) -> None:
    rows = [{"q": "q", "answer": "A"} for _ in range(3)]
    extra = (
        "doc_to_text: q\ndoc_to_target: answer\nrepeats: 4\n"
        "filter_list:\n  - name: maj\n    filter:\n      - function: majority_vote\n      - function: take_first\n"
    )
    manager = _task(write_files, tmp_path, "rep", rows, extra)
    results = _run(manager, "rep", output_path=str(tmp_path / "o"), log_samples=True)
    samples = [
        json.loads(x) for x in next((tmp_path / "o").rglob("*_samples_rep.jsonl")).read_text().splitlines()
    ]
    assert samples[0]["resps"] == [["A", "A", "A", "A"]]
    assert results["results"]["rep"]["exact_match,maj"] == 1.0
    assert _run(manager, "rep", repeats=2)["config"]["repeats"] == 2


def test_multi_round_request_layouts(write_files, tmp_path: Path) -> None:
    rows = [{"q": "hi", "answer": "A"}]
    manager = _task(
        write_files,
        tmp_path,
        "mr",
        rows,
        "output_type: generate_until_multi_round\ndoc_to_text: q\ndoc_to_target: answer\n",
    )
    task = manager.load_task_or_group(["mr"])["mr"]
    chat = task.build_all_requests(chat=True)[0]
    simple = task.build_all_requests(chat=False)[0]
    assert chat.request_type == "generate_until_multi_round" and len(chat.args) == 5
    assert len(simple.args) == 7 and simple.args[0] == "hi"
    assert _run(manager, "mr")["results"]["mr"]["exact_match,none"] == 1.0


def test_image_field_builds_chat_messages_and_system_instruction(write_files, tmp_path: Path) -> None:
    from PIL import Image

    image_path = tmp_path / "pic.png"
    Image.new("RGB", (4, 4), (255, 0, 0)).save(image_path)
    rows = [{"image": str(image_path), "q": "What colour?", "answer": "red"}]
    manager = _task(
        write_files, tmp_path, "img", rows, "doc_to_visual: image\ndoc_to_text: q\ndoc_to_target: answer\n"
    )
    task = manager.load_task_or_group(["img"])["img"]
    task.configure(TaskRunOptions(system_instruction="You are a careful annotator."))
    request = task.build_all_requests(chat=True)[0]
    doc = task.eval_docs[0]
    messages = ChatMessages.from_raw(request.args[0](doc))
    images, videos, audios = messages.extract_media()
    assert images == [str(image_path)] and videos == [] and audios == []
    assert messages.messages[0].role == "system"
    assert task.build_all_requests(chat=False)[0].args[0] == "You are a careful annotator.\n\nWhat colour?"


@pytest.mark.parametrize(
    ("visual", "kind"),
    [
        ("a.JPG", "image"),
        ("clip.mp4", "video"),
        ("s.flac", "audio"),
        ({"url": "v.mp4", "video_start": 1.0}, "video"),
    ],
)
def test_visual_typing(visual: object, kind: str) -> None:
    assert media_part(visual)["type"] == kind


def test_batch_size_and_device_reach_the_model_and_results(tmp_path: Path) -> None:
    results = lmms_eval.simple_evaluate(
        model="dummy", tasks=["demo_qa"], limit=2, batch_size=4, device="cpu", show_progress=False
    )
    assert results["config"]["batch_size"] == 4 and results["config"]["device"] == "cpu"


def test_same_run_twice_gives_identical_scores() -> None:
    kwargs = {
        "model": "dummy",
        "model_args": "answer_field=answer,accuracy=0.5",
        "tasks": ["demo_qa"],
        "show_progress": False,
    }
    first = lmms_eval.simple_evaluate(**kwargs)
    second = lmms_eval.simple_evaluate(**kwargs)
    assert first["results"] == second["results"]


def test_include_path_keyword_finds_the_folder_without_a_task_manager(write_files, tmp_path: Path) -> None:
    rows = [{"q": f"{i} + 1?", "answer": str(i + 1)} for i in range(3)]
    extra = (
        "output_type: generate_until\ndoc_to_text: q\ndoc_to_target: answer\n"
        "metric_list:\n  - metric: exact_match\n"
    )
    manager = _task(write_files, tmp_path, "my_sums", rows, extra)
    out = lmms_eval.simple_evaluate(
        model="dummy",
        model_args="answer_field=answer",
        tasks=["my_sums"],
        include_path=manager.include_path[0],
        show_progress=False,
    )
    assert out["results"]["my_sums"]["exact_match,none"] == 1.0
