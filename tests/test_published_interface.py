"""The published interface that model and task plugins use (issue 15, part 2).

Facts from running the published package 0.7.3: untyped content parts (``{"text"}`` is text,
``{"url"}`` an image, ``{"url", "start_time"}`` a video), ``TokenCounts(input_tokens,
output_tokens, reasoning_tokens)``, a model may return ``(text, TokenCounts)``,
``lmms_eval.filters.build_filter_ensemble(name, [[function, kwargs], ...])``, and the ``efficiency``
section of the results file.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import sys
import types
from pathlib import Path
from typing import Any

import pytest

import lmms_eval
from lmms_eval.api.instance import (
    GenerationResult,
    Instance,
    RequestFailure,
    TokenCounts,
    split_generation_output,
    unwrap_generation_output,
)
from lmms_eval.api.model import lmms
from lmms_eval.models.simple.dummy import DummySimple
from lmms_eval.protocol import ChatImageContent, ChatMessages, ChatTextContent, ChatVideoContent
from lmms_eval.results import ResultsFile
from lmms_eval.tasks import TaskManager
from lmms_eval.throughput import correct_score

# -- 1. ChatMessages: content parts without "type" ------------------------------------------------


def test_untyped_content_parts_are_typed_by_their_keys() -> None:
    messages = ChatMessages.from_raw(
        [
            {
                "role": "user",
                "content": [
                    {"text": "What is shown?"},
                    {"url": "cat.png"},
                    {"url": "clip.mp4", "start_time": 1.5},
                    {"type": "audio", "url": "a.wav"},
                ],
            }
        ]
    )
    parts = messages.messages[0].content
    assert isinstance(parts[0], ChatTextContent) and parts[0].text == "What is shown?"
    assert isinstance(parts[1], ChatImageContent) and parts[1].url == "cat.png"
    assert isinstance(parts[2], ChatVideoContent) and parts[2].start_time == 1.5
    assert messages.extract_media() == (["cat.png"], ["clip.mp4"], ["a.wav"])
    assert messages.to_hf_messages()[0]["content"][:2] == [
        {"type": "text", "text": "What is shown?"},
        {"type": "image", "image": "cat.png"},
    ]


def test_the_constructor_accepts_untyped_parts_too() -> None:
    messages = ChatMessages(messages=[{"role": "user", "content": [{"text": "hi"}]}])  # type: ignore[list-item]
    assert messages.text() == "hi"


def test_a_part_with_neither_text_nor_url_is_still_an_error() -> None:
    with pytest.raises(ValueError, match="type"):
        ChatMessages.from_raw([{"role": "user", "content": [{"image": "x.png"}]}])


# -- 3. TokenCounts and unwrap_generation_output --------------------------------------------------


def test_token_counts_has_the_published_fields() -> None:
    assert [f.name for f in dataclasses.fields(TokenCounts)] == [
        "input_tokens",
        "output_tokens",
        "reasoning_tokens",
    ]
    assert TokenCounts(1, 2, 3).to_dict() == {"input_tokens": 1, "output_tokens": 2, "reasoning_tokens": 3}
    assert TokenCounts(input_tokens=4).to_dict() == {"input_tokens": 4}
    assert list(inspect.signature(unwrap_generation_output).parameters) == ["output"]


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("plain", ("plain", None)),
        (("text", TokenCounts(10, 3)), ("text", {"input_tokens": 10, "output_tokens": 3})),
        (("text", {"output_tokens": 2}), ("text", {"output_tokens": 2})),
        (("text", None), ("text", None)),
        (("text", TokenCounts()), ("text", None)),
        (GenerationResult("g", TokenCounts(output_tokens=1)), ("g", {"output_tokens": 1})),
        ((-1.5, True), ((-1.5, True), None)),  # a loglikelihood pair passes through
    ],
)
def test_split_generation_output(output: Any, expected: tuple[Any, Any]) -> None:
    assert split_generation_output(output) == expected


def test_unwrap_keeps_failures() -> None:
    failure = RequestFailure("boom", token_counts=TokenCounts(input_tokens=5))
    assert split_generation_output(failure) == (failure, {"input_tokens": 5})
    assert unwrap_generation_output(failure) == (failure, TokenCounts(input_tokens=5))


class _TupleModel(DummySimple):
    """Returns the published ``(text, TokenCounts)`` pair."""

    def generate_until(self, requests: list[Instance]) -> list[Any]:  # type: ignore[override]
        return [
            (str(self.get_doc(r)["answer"]), TokenCounts(input_tokens=7, output_tokens=2)) for r in requests
        ]


DATA = "\n".join(json.dumps({"question": f"q{i}", "answer": ("yes", "no")[i % 2]}) for i in range(6))
TASK = """task: qa
dataset_path: json
dataset_kwargs:
  data_files:
    test: data.jsonl
test_split: test
doc_to_text: question
doc_to_target: answer
metric_list:
  - metric: exact_match
"""


@pytest.fixture
def qa_tree(write_files, tmp_path: Path) -> Path:
    return write_files({"t/data.jsonl": DATA, "t/qa.yaml": TASK}, tmp_path / "tasks")


def _run(model: Any, tree: Path, out: Path, **kwargs: Any) -> dict[str, Any]:
    return lmms_eval.simple_evaluate(
        model=model,
        tasks=["qa"],
        task_manager=TaskManager(include_path=str(tree), include_defaults=False),
        output_path=str(out),
        log_samples=True,
        show_progress=False,
        **kwargs,
    )


def test_a_text_and_token_counts_pair_is_scored_as_its_text(qa_tree: Path, tmp_path: Path) -> None:
    result = _run(_TupleModel(), qa_tree, tmp_path / "o")
    assert result["results"]["qa"]["exact_match,none"] == 1.0
    assert result["usage"]["by_task"]["qa"]["input_tokens"] == 42
    line = json.loads(next((tmp_path / "o").rglob("*_samples_qa.jsonl")).read_text().splitlines()[0])
    assert line["resps"] == [["yes"]] and line["filtered_resps"] == ["yes"]


# -- 4. lmms.clean() ------------------------------------------------------------------------------


class _Module:
    pass


def _fake_torch(cuda: bool) -> tuple[types.ModuleType, list[str]]:
    calls: list[str] = []
    torch = types.ModuleType("torch")
    torch.nn = types.SimpleNamespace(Module=_Module)  # type: ignore[attr-defined]
    torch.cuda = types.SimpleNamespace(  # type: ignore[attr-defined]
        is_available=lambda: cuda, empty_cache=lambda: calls.append("empty_cache")
    )
    return torch, calls


@pytest.mark.parametrize("cuda", [True, False])
def test_clean_frees_accelerator_memory(monkeypatch: pytest.MonkeyPatch, cuda: bool) -> None:
    torch, calls = _fake_torch(cuda)
    monkeypatch.setitem(sys.modules, "torch", torch)
    collected: list[int] = []
    monkeypatch.setattr("gc.collect", lambda *a: collected.append(1) or 0)
    model = DummySimple()
    model.net = _Module()  # type: ignore[attr-defined]
    model.clean()
    assert not hasattr(model, "net")  # the weights are dropped
    assert collected and calls == (["empty_cache"] if cuda else [])


def test_clean_without_torch_only_collects(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    collected: list[int] = []
    monkeypatch.setattr("gc.collect", lambda *a: collected.append(1) or 0)
    DummySimple().clean()
    assert collected == [1]


def test_clean_is_on_the_base_class() -> None:
    assert "clean" in vars(lmms)


# -- 5. lmms_eval.filters --------------------------------------------------------------------------


def test_filters_package_exposes_the_published_helpers() -> None:
    import lmms_eval.filters as filters
    from lmms_eval.api.filter import FilterEnsemble
    from lmms_eval.api.registry import FILTER_REGISTRY, RegistryLookupError

    assert filters.FILTER_REGISTRY is FILTER_REGISTRY
    assert list(inspect.signature(filters.get_filter).parameters) == ["filter_name"]
    assert list(inspect.signature(filters.build_filter_ensemble).parameters) == ["filter_name", "components"]
    assert filters.get_filter("regex") is filters.RegexFilter
    assert filters.get_filter(len) is len  # a callable is returned as it is
    with pytest.raises(RegistryLookupError, match="regex"):
        filters.get_filter("regx")
    ensemble = filters.build_filter_ensemble(
        "get-number", [["regex", {"regex_pattern": r"(\d+)"}], ["take_first", None]]
    )
    assert isinstance(ensemble, FilterEnsemble) and ensemble.name == "get-number"
    assert ensemble.run([["it is 42", "7"], ["none"]], [{}, {}]) == ["42", "[invalid]"]


# -- 6. the efficiency section ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("metrics", "score"),
    [
        ({"acc": 1.0}, 1.0),
        ({"score": 0.5}, 0.5),
        ({"exact_match": 1.0, "acc": 0.0}, 0.0),  # acc comes first
        ({"accuracy": 0.0, "score": 1.0}, 1.0),  # score comes first
        ({"mme_score": {"score": 1, "category": "x"}}, 1.0),
        ({"acc": {"score": 0.5}}, 0.5),
        ({"relaxed_accuracy": 1.0}, 0.0),
        ({"acc": -1.0}, 0.0),
        ({"acc": float("nan"), "exact_match": 1.0}, 0.0),
        ({"acc": None, "exact_match": 1.0}, 1.0),
        ({"a_score": "x", "b_score": 0.4}, 0.4),
    ],
)
def test_correct_score_follows_the_published_rule(metrics: dict[str, Any], score: float) -> None:
    assert correct_score(metrics) == score


def test_results_carry_the_efficiency_section(qa_tree: Path, tmp_path: Path) -> None:
    # dummy: input tokens = words of the prompt, output tokens = words of the answer
    result = _run("dummy", qa_tree, tmp_path / "o", model_args="answer_field=answer,accuracy=0.5")
    entry = result["efficiency"]["by_task"]["qa"]
    correct = result["results"]["qa"]["exact_match,none"] * 6
    assert entry["docs"] == 6.0 and entry["docs_with_token_counts"] == 6.0
    assert entry["total_input_tokens"] == 6.0 and entry["total_tokens"] == entry["total_input_tokens"] + 6.0
    assert entry["total_correct_score"] == pytest.approx(correct)
    assert entry["tokens_per_correct_answer"] == pytest.approx(entry["total_output_tokens"] / correct)
    assert entry["avg_output_tokens_per_sample"] == pytest.approx(entry["total_output_tokens"] / 6)
    assert result["efficiency"]["overall"] == entry
    saved = ResultsFile.load(next((tmp_path / "o").rglob("*_results.json")))
    assert saved.efficiency is not None and saved.efficiency.by_task["qa"].docs == 6.0


def test_nothing_correct_gives_no_tokens_per_correct_answer(qa_tree: Path, tmp_path: Path) -> None:
    result = _run("dummy", qa_tree, tmp_path / "o", model_args="response=maybe")
    assert result["efficiency"]["overall"]["total_correct_score"] == 0.0
    assert result["efficiency"]["overall"]["tokens_per_correct_answer"] is None
