"""The ``lmms`` base class, ``create_from_arg_string`` and the ``Instance`` argument layouts.

The layouts are checked on requests that a real (local) task builds, through a model that unpacks
them exactly as the model guide says and calls the task's callables on the document it looks up in
``self.task_dict[task][split][doc_id]``.
"""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from lmms_eval.api.instance import GenerationResult, Instance
from lmms_eval.api.model import CacheHook, lmms
from lmms_eval.errors import ModelArgsError
from lmms_eval.evaluator import simple_evaluate
from lmms_eval.protocol import ChatMessages
from lmms_eval.tasks import TaskManager

# -- a small local task ---------------------------------------------------------------------------

TASK_UTILS = """
from PIL import Image


def doc_to_visual(doc):
    return [Image.new("RGB", (4, 3), (doc["shade"], 0, 0))]


def doc_to_text(doc, lmms_eval_specific_kwargs=None):
    kwargs = lmms_eval_specific_kwargs or {}
    return kwargs.get("pre_prompt", "") + doc["question"] + kwargs.get("post_prompt", "")
"""

COMMON = """dataset_path: json
dataset_kwargs:
  data_files:
    test: data.jsonl
test_split: test
doc_to_visual: !function utils.doc_to_visual
"""

TASK_FILES = {
    "tiny/utils.py": TASK_UTILS,
    "tiny/data.jsonl": "\n".join(
        [
            '{"question": "2+2?", "answer": "4", "choices": ["3", "4", "5"], "shade": 10}',
            '{"question": "3+3?", "answer": "6", "choices": ["6", "7"], "shade": 200}',
            '{"question": "1+0?", "answer": "1", "choices": ["0", "1"], "shade": 77}',
        ]
    )
    + "\n",
    "tiny/gen.yaml": "task: tiny_gen\n"
    + COMMON
    + """output_type: generate_until
doc_to_text: !function utils.doc_to_text
doc_to_target: answer
generation_kwargs:
  max_new_tokens: 4
  until: ["\\n"]
lmms_eval_specific_kwargs:
  default:
    pre_prompt: "Q: "
    post_prompt: " A:"
metric_list:
  - metric: exact_match
""",
    "tiny/ll.yaml": "task: tiny_ll\n"
    + COMMON
    + """output_type: loglikelihood
doc_to_text: question
doc_to_target: answer
""",
    "tiny/mc.yaml": "task: tiny_mc\n"
    + COMMON
    + """output_type: multiple_choice
doc_to_text: question
doc_to_target: answer
doc_to_choice: choices
metric_list:
  - metric: acc
""",
}


@pytest.fixture
def task_root(write_files: Callable[..., Path]) -> Path:
    return write_files(TASK_FILES) / "tiny"


def red_of(image: Image.Image) -> int:
    pixel = image.getpixel((0, 0))
    assert isinstance(pixel, tuple)
    return int(pixel[0])


class LayoutChecker(lmms):
    """Unpacks requests as the model guide says and answers from the doc it looks up."""

    is_simple = True

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, tuple[type, ...]]] = []

    def _doc(self, doc_id: Any, task: Any, split: Any) -> dict[str, Any]:
        assert isinstance(doc_id, int) and isinstance(task, str) and isinstance(split, str)
        return self.task_dict[task][split][doc_id]

    def _check_visual(self, doc_to_visual: Any, doc: dict[str, Any]) -> None:
        assert callable(doc_to_visual)
        visuals = doc_to_visual(doc)
        assert isinstance(visuals, list) and len(visuals) == 1
        assert visuals[0].size == (4, 3) and red_of(visuals[0]) == doc["shade"]

    def _record(self, request: Instance) -> None:
        self.seen.append((request.request_type, tuple(type(a) for a in request.args)))

    def generate_until(self, requests: list[Instance]) -> list[str | GenerationResult]:
        out: list[str | GenerationResult] = []
        for request in requests:
            self._record(request)
            assert len(request.args) == 6
            contexts, gen_kwargs, doc_to_visual, doc_id, task, split = request.args
            doc = self._doc(doc_id, task, split)
            assert isinstance(contexts, str) and contexts == f"Q: {doc['question']} A:"
            assert gen_kwargs == {"max_new_tokens": 4, "until": ["\n"]}
            self._check_visual(doc_to_visual, doc)
            out.append(doc["answer"])
        return out

    def loglikelihood(self, requests: list[Instance]) -> list[tuple[float, bool]]:
        out: list[tuple[float, bool]] = []
        for request in requests:
            self._record(request)
            assert len(request.args) == 6
            first, continuation, doc_to_visual, doc_id, task, split = request.args
            doc = self._doc(doc_id, task, split)
            self._check_first(first, doc)
            self._check_visual(doc_to_visual, doc)
            if callable(continuation):  # loglikelihood: the task's doc_to_target
                target = continuation(doc)
                assert target == " " + doc["answer"]
                out.append((-0.5, True))
            else:  # multiple_choice: one request per choice
                assert isinstance(continuation, str)
                assert continuation.strip() in doc["choices"]
                right = continuation.strip() == doc["answer"]
                out.append((-0.5 if right else -3.0, right))
        return out

    def _check_first(self, first: Any, doc: dict[str, Any]) -> None:
        assert isinstance(first, str) and first == doc["question"]


class ChatLayoutChecker(LayoutChecker):
    is_simple = False

    def _messages(self, doc_to_messages: Any, doc: dict[str, Any]) -> ChatMessages:
        assert callable(doc_to_messages)
        messages = ChatMessages.from_raw(doc_to_messages(doc))
        images, videos, audios = messages.extract_media()
        assert len(images) == 1 and red_of(images[0]) == doc["shade"]
        assert videos == [] and audios == []
        return messages

    def generate_until(self, requests: list[Instance]) -> list[str | GenerationResult]:
        out: list[str | GenerationResult] = []
        for request in requests:
            self._record(request)
            assert len(request.args) == 5
            doc_to_messages, gen_kwargs, doc_id, task, split = request.args
            doc = self._doc(doc_id, task, split)
            assert gen_kwargs == {"max_new_tokens": 4, "until": ["\n"]}
            messages = self._messages(doc_to_messages, doc)
            assert messages.text() == f"Q: {doc['question']} A:"
            hf = messages.to_hf_messages()
            assert hf[0]["role"] == "user" and [p["type"] for p in hf[0]["content"]] == ["image", "text"]
            out.append(GenerationResult(text=doc["answer"]))
        return out

    def _check_first(self, first: Any, doc: dict[str, Any]) -> None:
        messages = self._messages(first, doc)
        assert messages.text() == doc["question"]


@pytest.mark.parametrize("model_cls", [LayoutChecker, ChatLayoutChecker], ids=["simple", "chat"])
def test_requests_built_by_a_task_have_the_documented_layouts(
    task_root: Path, model_cls: type[LayoutChecker]
) -> None:
    model = model_cls()
    results = simple_evaluate(
        model=model,
        tasks=["tiny_gen", "tiny_ll", "tiny_mc"],
        task_manager=TaskManager(include_path=str(task_root)),
        log_samples=False,
    )
    # every request reached the model, and every callable answered on the looked-up doc
    kinds = [kind for kind, _ in model.seen]
    assert kinds.count("generate_until") == 3
    assert kinds.count("loglikelihood") == 3 + (3 + 2 + 2)
    assert set(model.task_dict) == {"tiny_gen", "tiny_ll", "tiny_mc"}
    assert list(model.task_dict["tiny_gen"]) == ["test"]
    assert results["results"]["tiny_gen"]["exact_match,none"] == 1.0
    assert results["results"]["tiny_mc"]["acc,none"] == 1.0
    generate_layouts = {layout for kind, layout in model.seen if kind == "generate_until"}
    assert len(generate_layouts) == 1
    layout = generate_layouts.pop()
    if model.is_simple:
        assert len(layout) == 6 and layout[0] is str and layout[1] is dict and layout[3:] == (int, str, str)
    else:
        assert len(layout) == 5 and layout[1:] == (dict, int, str, str)


def test_construct_requests_metadata_and_args(task_root: Path) -> None:
    manager = TaskManager(include_path=str(task_root))
    task = manager.load_task_or_group(["tiny_mc"])["tiny_mc"]
    requests = task.build_all_requests(chat=False)  # type: ignore[union-attr]
    assert [(r.doc_id, r.idx) for r in requests] == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (2, 0), (2, 1)]
    first = requests[0]
    assert first.request_type == "loglikelihood"
    assert (first.task_name, first.split, first.repeats) == ("tiny_mc", "test", 1)
    assert first.metadata == {"task": "tiny_mc", "doc_id": 0, "repeats": 1, "split": "test"}
    assert first.args[3:] == (0, "tiny_mc", "test")
    assert [r.args[1] for r in requests[:3]] == [" 3", " 4", " 5"]
    assert first.resps == [] and first.filtered_resps == {}


# -- Instance --------------------------------------------------------------------------------------


def test_instance_reads_identity_from_metadata() -> None:
    inst = Instance(
        "generate_until",
        ("ctx", {}, None, 3, "t", "val"),
        idx=0,
        metadata={"task": "t", "doc_id": 3, "repeats": 2, "split": "val"},
    )
    assert (inst.task_name, inst.doc_id, inst.repeats, inst.split) == ("t", 3, 2, "val")
    assert inst.args is inst.arguments
    assert inst.resps == [] and inst.filtered_resps == {} and inst.token_counts == []
    bare = Instance("loglikelihood", ["ctx", " a", None, 0, "t", "s"], idx=1)  # type: ignore[arg-type]
    assert bare.args == ("ctx", " a", None, 0, "t", "s")
    assert (bare.task_name, bare.doc_id, bare.repeats, bare.split) == ("", -1, 1, None)


def test_instance_rejects_unknown_request_type() -> None:
    with pytest.raises(ValueError, match="generate_until_multi_round"):
        Instance("multiple_choice", (), idx=0)  # type: ignore[arg-type]


# -- the lmms base class ----------------------------------------------------------------------------


class Minimal(lmms):
    def generate_until(self, requests: list[Instance]) -> list[str | GenerationResult]:
        return ["x" for _ in requests]


def test_base_class_defaults_and_optional_methods() -> None:
    with pytest.raises(TypeError):
        lmms()  # type: ignore[abstract]

    class NoGenerate(lmms):
        pass

    with pytest.raises(TypeError, match="generate_until"):
        NoGenerate()  # type: ignore[abstract]
    model = Minimal()
    assert model.is_simple is True
    assert (model.rank, model.world_size, model.batch_size) == (0, 1, 1)
    assert model.task_dict == {}
    assert isinstance(model.cache_hook, CacheHook)
    model.cache_hook.add_partial("generate_until", ("ctx", {}), "x")
    with pytest.raises(NotImplementedError, match=r"Minimal.*loglikelihood"):
        model.loglikelihood([])
    with pytest.raises(NotImplementedError, match="generate_until_multi_round"):
        model.generate_until_multi_round([])


def test_get_doc_looks_up_task_dict() -> None:
    model = Minimal()
    model.task_dict = {"t": {"test": [{"q": 0}, {"q": 1}]}}
    request = Instance("generate_until", (), 0, {"task": "t", "doc_id": 1, "split": "test"})
    assert model.get_doc(request) == {"q": 1}
    with pytest.raises(LookupError, match=re.escape("task 'other' is not in Minimal.task_dict")):
        model.get_doc(Instance("generate_until", (), 0, {"task": "other", "doc_id": 0}))


def test_system_prompt_helpers(tmp_path: Path) -> None:
    prompt_file = tmp_path / "prompt.txt"
    prompt_file.write_text("from a file", encoding="utf-8")
    assert lmms._resolve_system_prompt(str(prompt_file)) == "from a file"
    assert lmms._resolve_system_prompt("literal prompt") == "literal prompt"
    assert lmms._resolve_system_prompt(None) is None
    user = [{"role": "user", "content": [{"type": "text", "text": "q"}]}]
    with_system = lmms._apply_system_prompt(user, "be brief")
    assert with_system[0] == {"role": "system", "content": [{"type": "text", "text": "be brief"}]}
    assert with_system[1:] == user
    assert lmms._apply_system_prompt(with_system, "other") is with_system
    assert lmms._apply_system_prompt(user, None) is user


def test_clean_drops_torch_modules_and_empties_cuda_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    emptied: list[bool] = []

    class Module:
        pass

    fake_torch = types.SimpleNamespace(
        nn=types.SimpleNamespace(Module=Module),
        cuda=types.SimpleNamespace(is_available=lambda: True, empty_cache=lambda: emptied.append(True)),
    )
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    model = Minimal()
    model._model = Module()  # type: ignore[attr-defined]
    model.tokenizer = "kept"  # type: ignore[attr-defined]
    model.clean()
    assert not hasattr(model, "_model")
    assert model.tokenizer == "kept"  # type: ignore[attr-defined]
    assert emptied == [True]


# -- create_from_arg_string ----------------------------------------------------------------------------


class Strict(lmms):
    def __init__(
        self,
        pretrained: str = "org/default",
        max_pixels: int = 0,
        flag: bool = False,
        kw: dict[str, Any] | None = None,
        batch_size: int | str = 1,
        device: str = "cpu",
    ) -> None:
        super().__init__()
        self.pretrained = pretrained
        self.max_pixels = max_pixels
        self.flag = flag
        self.kw = kw
        self.batch_size_per_gpu = int(batch_size)
        self.device = device

    def generate_until(self, requests: list[Instance]) -> list[str | GenerationResult]:
        return []


class Lenient(lmms):
    def __init__(self, pretrained: str, **kwargs: Any) -> None:
        super().__init__()
        self.pretrained = pretrained
        self.kwargs = kwargs

    def generate_until(self, requests: list[Instance]) -> list[str | GenerationResult]:
        return []


def test_arg_string_values_are_typed() -> None:
    model = Strict.create_from_arg_string('pretrained=a/b,max_pixels=100,flag=true,kw={"a": [1, 2]}')
    assert isinstance(model, Strict)
    assert model.pretrained == "a/b"
    assert model.max_pixels == 100 and isinstance(model.max_pixels, int)
    assert model.flag is True
    assert model.kw == {"a": [1, 2]}


def test_quoted_values_keep_commas() -> None:
    model = Lenient.create_from_arg_string("pretrained=x,prompt='a, b, c',ratio=0.25,off=False,none=None")
    assert model.kwargs == {"prompt": "a, b, c", "ratio": 0.25, "off": False, "none": None}


def test_additional_config_fills_unset_keys_and_drops_none() -> None:
    model = Strict.create_from_arg_string(
        "batch_size=4", {"batch_size": 8, "device": None, "max_batch_size": 64}
    )
    assert model.batch_size == 4  # the argument string wins
    assert model.device == "cpu"  # None is dropped, the default stays
    model = Strict.create_from_arg_string("", {"batch_size": 8, "device": "cuda:1"})
    assert (model.batch_size, model.device) == (8, "cuda:1")
    # max_batch_size is not a parameter of Strict: it is not passed, and not an error


def test_kwargs_constructor_receives_unknown_args_and_additional_config() -> None:
    model = Lenient.create_from_arg_string(
        "pretrained=p,anything=1", {"batch_size": 2, "device": None, "max_batch_size": 16}
    )
    assert model.pretrained == "p"
    assert model.kwargs == {"anything": 1, "batch_size": 2, "max_batch_size": 16}


def test_mapping_and_empty_arg_strings() -> None:
    assert Strict.create_from_arg_string({"max_pixels": 5}).max_pixels == 5
    assert Strict.create_from_arg_string(None).pretrained == "org/default"
    assert Strict.create_from_arg_string("  ").pretrained == "org/default"


def test_unknown_argument_names_the_closest_accepted_one() -> None:
    with pytest.raises(ModelArgsError) as info:
        Strict.create_from_arg_string("pretrained=a,max_pixel=100")
    message = str(info.value)
    assert "'max_pixel'" in message and "Did you mean 'max_pixels'" in message
    assert "Strict" in message


def test_missing_required_argument_is_reported() -> None:
    with pytest.raises(ModelArgsError, match=r"needs argument.*'pretrained'"):
        Lenient.create_from_arg_string("other=1")


@pytest.mark.parametrize(
    ("arg_string", "fragment"),
    [
        ('kw={"a": [1, 2}', "unbalanced"),
        ("kw={'a': 1}", "JSON"),
        ("max_pixels=1,max_pixels=2", "twice"),
        ("flag", "key=value"),
    ],
)
def test_malformed_arg_strings_are_model_args_errors(arg_string: str, fragment: str) -> None:
    with pytest.raises(ModelArgsError, match=fragment):
        Strict.create_from_arg_string(arg_string)


def test_type_errors_inside_the_constructor_are_not_hidden() -> None:
    class Buggy(Minimal):
        def __init__(self, n: int = 1) -> None:
            super().__init__()
            self.n = n + "1"  # type: ignore[operator]

    with pytest.raises(TypeError, match="unsupported operand"):
        Buggy.create_from_arg_string("n=2")


def test_one_batch_size_parser_and_stop_strings_for_every_backend() -> None:
    from lmms_eval.errors import ModelArgsError
    from lmms_eval.models._common import apply_stop_strings, parse_batch_size

    assert parse_batch_size(None, "m") == 1 and parse_batch_size("auto:8", "m", auto=16) == 16
    assert parse_batch_size(4, "m") == 4 and parse_batch_size(" 3 ", "m") == 3
    for bad in ("0", "-2", "many", "1.5"):
        with pytest.raises(
            ModelArgsError,
            match=rf"model 'm': batch_size must be a positive integer or 'auto', got '{re.escape(bad)}'",
        ):
            parse_batch_size(bad, "m")
    assert apply_stop_strings("yes\n\nbecause", ["\n\n", "be"]) == "yes"
    assert apply_stop_strings("no stop here", None) == "no stop here"
