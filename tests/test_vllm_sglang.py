"""vLLM and SGLang chat backends: message and sampling builders, engine calls against fake engines,
and the install hint when the engines are missing (they are never installed in CI)."""

from __future__ import annotations

import json
import logging
import sys
import types
from pathlib import Path
from typing import Any, ClassVar

import pytest
from PIL import Image

from lmms_eval.api.instance import GenerationResult, Instance
from lmms_eval.errors import ConfigError, LmmsEvalError, MissingDependencyError, ModelArgsError
from lmms_eval.models import get_model, resolve_model
from lmms_eval.models.chat.sglang import (
    SGLang,
    build_hf_chat,
    build_sglang_prompt,
    sglang_result,
    sglang_sampling_params,
)
from lmms_eval.models.chat.vllm import (
    VLLM,
    SamplingSettings,
    build_vllm_messages,
    import_engine,
    parse_engine_kwargs,
    read_chat_template,
    request_chat_messages,
    sampling_settings,
    vllm_result,
    vllm_sampling_kwargs,
)
from lmms_eval.protocol import ChatMessages


def red(size: int = 4) -> Image.Image:
    return Image.new("RGB", (size, size), (255, 0, 0))


def chat(*content: dict[str, Any], system: str | None = None) -> ChatMessages:
    messages: list[dict[str, Any]] = []
    if system is not None:
        messages.append({"role": "system", "content": [{"type": "text", "text": system}]})
    messages.append({"role": "user", "content": list(content)})
    return ChatMessages.from_raw(messages)


def chat_request(doc_id: int, gen_kwargs: dict[str, Any] | None = None, task: str = "t") -> Instance:
    def doc_to_messages(doc: dict[str, Any]) -> list[dict[str, Any]]:
        content: list[dict[str, Any]] = [{"type": "text", "text": doc["q"]}]
        if doc.get("image") is not None:
            content.insert(0, {"type": "image", "url": doc["image"]})
        return [{"role": "user", "content": content}]

    meta = {"task": task, "doc_id": doc_id, "split": "test"}
    return Instance("generate_until", (doc_to_messages, gen_kwargs or {}, doc_id, task, "test"), 0, meta)


# -- sampling ------------------------------------------------------------------------------------------


def test_sampling_defaults_are_greedy() -> None:
    settings = sampling_settings({}, default_max_new_tokens=99)
    assert settings == SamplingSettings(max_new_tokens=99, temperature=0.0, top_p=1.0, stop=())
    assert settings.greedy
    assert sampling_settings(None, 5).max_new_tokens == 5


def test_sampling_from_gen_kwargs() -> None:
    settings = sampling_settings(
        {"max_new_tokens": 32, "temperature": 0.7, "top_p": 0.9, "until": ["\n\n", "", "Q:"]}, 4096
    )
    assert settings == SamplingSettings(max_new_tokens=32, temperature=0.7, top_p=0.9, stop=("\n\n", "Q:"))
    assert sampling_settings({"until": "END"}, 8).stop == ("END",)
    greedy = sampling_settings({"temperature": 0.8, "top_p": 0.5, "do_sample": False}, 8)
    assert greedy.temperature == 0.0 and greedy.top_p == 1.0  # top_p is not used when greedy
    assert sampling_settings({"temperature": 0, "top_p": 0.5}, 8).top_p == 1.0


@pytest.mark.parametrize(
    "gen_kwargs",
    [{"max_new_tokens": 0}, {"temperature": -1}, {"temperature": "hot"}, {"temperature": 1, "top_p": 1.5}],
)
def test_sampling_rejects_bad_values(gen_kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="generation_kwargs"):
        sampling_settings(gen_kwargs, 16)


def test_vllm_and_sglang_sampling_parameters() -> None:
    greedy = sampling_settings({"max_new_tokens": 16, "until": ["\n"]}, 4096)
    assert vllm_sampling_kwargs(greedy, seed=3) == {
        "n": 1,
        "max_tokens": 16,
        "temperature": 0.0,
        "top_p": 1.0,
        "stop": ["\n"],
        "seed": 3,
    }
    sampled = sampling_settings({"temperature": 0.6, "top_p": 0.95}, 128)
    assert vllm_sampling_kwargs(sampled) == {"n": 1, "max_tokens": 128, "temperature": 0.6, "top_p": 0.95}
    assert sglang_sampling_params(greedy) == {
        "max_new_tokens": 16,
        "temperature": 0.0,
        "top_p": 1.0,
        "stop": ["\n"],
    }
    assert "stop" not in sglang_sampling_params(sampled)


# -- messages ------------------------------------------------------------------------------------------


def test_vllm_messages_encode_images_and_prepend_system_prompt() -> None:
    messages = build_vllm_messages(
        chat({"type": "image", "url": red()}, {"type": "text", "text": "What colour?"}),
        system_prompt="Be brief.",
    )
    assert messages[0] == {"role": "system", "content": "Be brief."}
    image, text = messages[1]["content"]
    assert image["type"] == "image_url" and image["image_url"]["url"].startswith("data:image/png;base64,")
    assert text == {"type": "text", "text": "What colour?"}
    kept = build_vllm_messages(
        chat({"type": "text", "text": "hi"}, system="Task prompt"), system_prompt="Other"
    )
    assert kept[0] == {"role": "system", "content": "Task prompt"} and len(kept) == 2
    jpeg = build_vllm_messages(chat({"type": "image", "url": red()}), image_format="jpeg")
    assert jpeg[0]["content"][0]["image_url"]["url"].startswith("data:image/jpeg;base64,")


def test_vllm_messages_sample_frame_videos_and_pass_video_files(tmp_path: Path) -> None:
    frames = [Image.new("RGB", (4, 4), (i * 20, 0, 0)) for i in range(10)]
    messages = build_vllm_messages(
        chat({"type": "video", "url": frames}, {"type": "text", "text": "describe"}), max_frames_num=4
    )
    parts = messages[0]["content"]
    assert [p["type"] for p in parts] == ["image_url"] * 4 + ["text"]
    video = tmp_path / "clip.mp4"
    video.write_bytes(b"not really a video")
    (part,) = build_vllm_messages(chat({"type": "video", "url": str(video)}))[0]["content"]
    assert part == {"type": "video_url", "video_url": {"url": f"file://{video}"}}


def test_sglang_chat_uses_placeholders_and_image_data(tmp_path: Path) -> None:
    path = tmp_path / "x.png"
    red().save(path)
    image = red()
    messages, images = build_hf_chat(
        chat(
            {"type": "image", "url": str(path)},
            {"type": "image", "url": image},
            {"type": "text", "text": "Compare."},
            system="Sys",
        )
    )
    assert messages == [
        {"role": "system", "content": "Sys"},
        {
            "role": "user",
            "content": [{"type": "image"}, {"type": "image"}, {"type": "text", "text": "Compare."}],
        },
    ]
    assert images[0] == str(path) and isinstance(images[1], Image.Image)
    text_only, none = build_hf_chat(
        chat({"type": "text", "text": "a"}, {"type": "text", "text": "b"}), "Be brief."
    )
    assert text_only == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "a\nb"}]
    assert none == []


def test_sglang_prompt_renders_with_template_and_rejects_video_files() -> None:
    seen: list[list[dict[str, Any]]] = []

    def render(messages: list[dict[str, Any]]) -> str:
        seen.append(messages)
        return "<prompt>" + json.dumps(messages) + "<assistant>"

    prompt = build_sglang_prompt(chat({"type": "image", "url": red()}, {"type": "text", "text": "Q"}), render)
    assert prompt.text.startswith("<prompt>") and len(prompt.images) == 1 and len(seen) == 1
    frames = build_sglang_prompt(chat({"type": "video", "url": [red()] * 6}), render, max_frames_num=3)
    assert len(frames.images) == 3
    with pytest.raises(LmmsEvalError, match="frame list"):
        build_hf_chat(chat({"type": "video", "url": "clip.mp4"}))
    with pytest.raises(LmmsEvalError, match="audio"):
        build_hf_chat(chat({"type": "audio", "url": "a.wav"}))


def test_request_messages_chat_and_simple_layouts() -> None:
    doc = {"q": "What?", "image": red()}
    messages = request_chat_messages(chat_request(0), doc)
    assert [type(p).__name__ for p in messages.messages[0].content] == ["ChatImageContent", "ChatTextContent"]
    simple = Instance(
        "generate_until",
        ("Describe.", {}, lambda d: [d["image"]], 0, "t", "test"),
        0,
        {"task": "t", "doc_id": 0},
    )
    converted = request_chat_messages(simple, doc)
    assert converted.text() == "Describe." and len(converted.extract_media()[0]) == 1


def test_chat_template_inline_or_file(tmp_path: Path) -> None:
    inline = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    assert read_chat_template(inline) == inline
    path = tmp_path / "template.jinja"
    path.write_text(inline, encoding="utf-8")
    assert read_chat_template(str(path)) == inline
    assert read_chat_template(None) is None
    with pytest.raises(ModelArgsError, match="neither a file nor an inline"):
        read_chat_template(str(tmp_path / "missing.jinja"))


def test_engine_kwargs_json_values() -> None:
    assert parse_engine_kwargs({"limit_mm_per_prompt": '{"image": 4}', "dtype": "bfloat16"}) == {
        "limit_mm_per_prompt": {"image": 4},
        "dtype": "bfloat16",
    }
    with pytest.raises(ModelArgsError, match="looks like JSON"):
        parse_engine_kwargs({"x": "{broken"})


def test_engine_outputs_to_results() -> None:
    output = types.SimpleNamespace(
        prompt_token_ids=[1, 2, 3],
        outputs=[types.SimpleNamespace(text="blue###rest", token_ids=[7, 8])],
        metrics=types.SimpleNamespace(arrival_time=10.0, first_token_time=10.25),
    )
    result = vllm_result(output, 1.5, ["###"])
    assert result.text == "blue" and result.latency_s == 1.5 and result.time_to_first_token_s == 0.25
    assert result.token_counts is not None and result.token_counts.to_dict() == {
        "input_tokens": 3,
        "output_tokens": 2,
    }
    bare = vllm_result(types.SimpleNamespace(outputs=[types.SimpleNamespace(text="x")]), 0.1, [])
    assert bare.token_counts is None and bare.time_to_first_token_s is None
    sg = sglang_result({"text": "ok", "meta_info": {"prompt_tokens": 5, "completion_tokens": 1}}, 0.2, [])
    assert (
        sg.text == "ok"
        and sg.token_counts is not None
        and sg.token_counts.to_dict()
        == {
            "input_tokens": 5,
            "output_tokens": 1,
        }
    )


# -- missing engines -----------------------------------------------------------------------------------


def test_vllm_missing_gives_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)  # import vllm -> ImportError
    with pytest.raises(MissingDependencyError, match="pip install vllm"):
        VLLM(pretrained="Qwen/Qwen2.5-VL-3B-Instruct")
    cls = get_model("vllm_chat")
    assert cls is VLLM
    with pytest.raises(MissingDependencyError, match="'vllm' package"):
        cls.create_from_arg_string("model=Qwen/Qwen2.5-VL-3B-Instruct,tp_size=2")


def test_sglang_missing_gives_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sglang", None)
    with pytest.raises(MissingDependencyError, match=r'pip install "sglang\[all\]"'):
        SGLang(pretrained="Qwen/Qwen2.5-VL-3B-Instruct")
    assert get_model("sglang_runtime") is SGLang


def test_broken_engine_install_names_the_missing_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "engine_with_missing_dep"
    package.mkdir()
    (package / "__init__.py").write_text("import lmms_missing_dependency_xyz\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(
        MissingDependencyError, match=r"cannot be imported .*lmms_missing_dependency_xyz"
    ) as info:
        import_engine("engine_with_missing_dep", "pip install engine", "The test model")
    assert str(info.value).endswith("Install it with: pip install engine")


def test_registry_entries() -> None:
    vllm = resolve_model("vllm_chat")
    assert vllm.model_id == "vllm" and vllm.model_type == "chat"
    assert vllm.class_path == "lmms_eval.models.chat.vllm.VLLM"
    sglang = resolve_model("sglang")
    assert sglang.class_path == "lmms_eval.models.chat.sglang.SGLang" and not sglang.is_simple


def test_bad_arguments_fail_before_the_engine_import(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)
    with pytest.raises(ModelArgsError, match="needs a checkpoint"):
        VLLM()
    with pytest.raises(ModelArgsError, match="not both"):
        VLLM(pretrained="a", model="b")
    with pytest.raises(ModelArgsError, match="gpu_memory_utilization"):
        VLLM(pretrained="a", gpu_memory_utilization=1.5)
    with pytest.raises(ModelArgsError, match="tensor_parallel_size"):
        VLLM(pretrained="a", tp_size=0)
    with pytest.raises(ModelArgsError, match="batch_size"):
        VLLM(pretrained="a", batch_size="many")


# -- fake engines --------------------------------------------------------------------------------------


class FakeSamplingParams:
    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs


class FakeLLM:
    instances: ClassVar[list[FakeLLM]] = []

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs
        self.calls: list[dict[str, Any]] = []
        FakeLLM.instances.append(self)

    def chat(
        self,
        messages: list[Any],
        sampling_params: list[Any],
        chat_template: Any = None,
        use_tqdm: bool = True,
    ):
        self.calls.append({"messages": messages, "params": sampling_params, "chat_template": chat_template})
        outputs = []
        for conversation, params in zip(messages, sampling_params):
            text = conversation[-1]["content"][-1]["text"]
            outputs.append(
                types.SimpleNamespace(
                    prompt_token_ids=list(range(len(text))),
                    outputs=[
                        types.SimpleNamespace(
                            text=f"answer to {text}", token_ids=[1] * params.kwargs["max_tokens"]
                        )
                    ],
                    metrics=None,
                )
            )
        return outputs


@pytest.fixture
def fake_vllm(monkeypatch: pytest.MonkeyPatch) -> type[FakeLLM]:
    module = types.ModuleType("vllm")
    module.LLM = FakeLLM  # type: ignore[attr-defined]
    module.SamplingParams = FakeSamplingParams  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm", module)
    FakeLLM.instances = []
    return FakeLLM


def with_docs(model: Any, count: int) -> None:
    model.task_dict = {
        "t": {"test": [{"q": f"question {i}", "image": red() if i % 2 else None} for i in range(count)]}
    }


def test_vllm_engine_arguments_and_batched_generation(fake_vllm: type[FakeLLM], tmp_path: Path) -> None:
    template = tmp_path / "t.jinja"
    template.write_text("{{ messages }}", encoding="utf-8")
    model = VLLM.create_from_arg_string(
        f"model=org/ckpt,tp_size=2,batch_size=2,seed=7,chat_template={template},max_new_tokens=9,"
        "max_model_len=8192,system_prompt=Answer briefly.",
        {"batch_size": 1, "device": "cuda", "max_batch_size": None},
    )
    (llm,) = fake_vllm.instances
    assert llm.kwargs == {
        "model": "org/ckpt",
        "tensor_parallel_size": 2,
        "gpu_memory_utilization": 0.8,
        "trust_remote_code": True,
        "seed": 7,
        "max_model_len": 8192,
    }
    with_docs(model, 5)
    requests = [chat_request(i, {"max_new_tokens": 3} if i == 4 else {"until": ["\n"]}) for i in range(5)]
    results = model.generate_until(requests)
    assert [r.text if isinstance(r, GenerationResult) else r for r in results] == [
        f"answer to question {i}" for i in range(5)
    ]
    assert [len(call["messages"]) for call in llm.calls] == [2, 2, 1]  # batch_size=2, in request order
    assert all(call["chat_template"] == "{{ messages }}" for call in llm.calls)
    first = llm.calls[0]
    assert first["messages"][0][0] == {"role": "system", "content": "Answer briefly."}
    assert first["params"][0].kwargs == {
        "n": 1,
        "max_tokens": 9,
        "temperature": 0.0,
        "top_p": 1.0,
        "stop": ["\n"],
        "seed": 7,
    }
    assert first["messages"][1][1]["content"][0]["type"] == "image_url"  # doc 1 has an image
    last = results[4]
    assert isinstance(last, GenerationResult) and last.token_counts is not None
    assert last.token_counts.output_tokens == 3 and last.latency_s is not None


def test_vllm_loglikelihood_and_unknown_gen_kwargs(
    fake_vllm: type[FakeLLM], caplog: pytest.LogCaptureFixture
) -> None:
    model = VLLM(pretrained="org/ckpt")
    with pytest.raises(NotImplementedError, match="loglikelihood"):
        model.loglikelihood([])
    with_docs(model, 2)
    with caplog.at_level(logging.WARNING):
        model.generate_until([chat_request(0, {"num_beams": 4}), chat_request(1, {"num_beams": 4})])
    assert sum("num_beams" in r.getMessage() for r in caplog.records) == 1
    model.clean()
    assert not hasattr(model, "llm")


class FakeEngine:
    instances: ClassVar[list[FakeEngine]] = []

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs
        self.calls: list[dict[str, Any]] = []
        self.shut_down = False
        FakeEngine.instances.append(self)

    def generate(self, prompt: list[str], sampling_params: list[dict[str, Any]], image_data: Any = None):
        self.calls.append({"prompt": prompt, "sampling_params": sampling_params, "image_data": image_data})
        return [
            {
                "text": f"out:{p.split('|')[-1]}",
                "meta_info": {"prompt_tokens": len(p), "completion_tokens": 2},
            }
            for p in prompt
        ]

    def shutdown(self) -> None:
        self.shut_down = True


class FakeProcessor:
    chat_template = "{{ fake }}"

    def apply_chat_template(
        self, messages: list[dict[str, Any]], tokenize: bool, add_generation_prompt: bool, **kw: Any
    ) -> str:
        assert tokenize is False and add_generation_prompt is True
        parts = []
        for message in messages:
            content = message["content"]
            if isinstance(content, str):
                parts.append(content)
            else:
                parts.extend("<img>" if p["type"] == "image" else p["text"] for p in content)
        return "|".join(parts) + ("|T" if kw.get("chat_template") else "")


@pytest.fixture
def fake_sglang(monkeypatch: pytest.MonkeyPatch) -> type[FakeEngine]:
    module = types.ModuleType("sglang")
    module.Engine = FakeEngine  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sglang", module)
    monkeypatch.setattr(SGLang, "_load_template_source", lambda self: FakeProcessor())
    FakeEngine.instances = []
    return FakeEngine


def test_sglang_engine_arguments_and_generation(fake_sglang: type[FakeEngine]) -> None:
    model = SGLang(pretrained="org/ckpt", tensor_parallel_size=4, gpu_memory_utilization=0.7, batch_size=3)
    (engine,) = fake_sglang.instances
    assert engine.kwargs == {
        "model_path": "org/ckpt",
        "tp_size": 4,
        "trust_remote_code": True,
        "mem_fraction_static": 0.7,
        "random_seed": 1,
    }
    with_docs(model, 4)
    requests = [chat_request(i, {"until": ["stop"], "max_new_tokens": 5}) for i in range(4)]
    results = model.generate_until(requests)
    texts = [r.text if isinstance(r, GenerationResult) else r for r in results]
    assert texts == ["out:question 0", "out:question 1", "out:question 2", "out:question 3"]
    # batch 1 = docs 0..2: doc 1 has an image and goes in its own call; batch 2 = doc 3 (image)
    assert [c["prompt"] for c in engine.calls] == [
        ["<img>|question 1"],
        ["question 0", "question 2"],
        ["<img>|question 3"],
    ]
    assert engine.calls[0]["image_data"][0][0].size == (4, 4) and engine.calls[1]["image_data"] is None
    assert engine.calls[1]["sampling_params"][0] == {
        "max_new_tokens": 5,
        "temperature": 0.0,
        "top_p": 1.0,
        "stop": ["stop"],
    }
    first = results[0]
    assert isinstance(first, GenerationResult) and first.token_counts is not None
    assert first.token_counts.to_dict() == {"input_tokens": len("question 0"), "output_tokens": 2}
    model.clean()
    assert engine.shut_down and not hasattr(model, "engine")


def test_sglang_chat_template_override_and_aliases(fake_sglang: type[FakeEngine]) -> None:
    model = SGLang(model="org/ckpt", chat_template="{{ custom }}", system_prompt="S", seed=None)
    assert "random_seed" not in fake_sglang.instances[0].kwargs
    assert "mem_fraction_static" not in fake_sglang.instances[0].kwargs
    assert model.render([{"role": "user", "content": "hi"}]) == "hi|T"
    with_docs(model, 1)
    assert model.build_prompt(chat_request(0)).text == "S|question 0|T"
    with pytest.raises(ModelArgsError, match="mem_fraction_static"):
        SGLang(pretrained="x", mem_fraction_static=2.0)
