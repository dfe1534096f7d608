"""Video through the backends: the transformers engine on tiny random checkpoints (frames and native
video inputs, prefetch, broken videos as per-request ``input`` failures, a whole run through the
CLI), the OpenAI-compatible backends against a local fake server, and the requests vLLM and SGLang
would get (fake engines; neither is installed)."""

from __future__ import annotations

import io
import json
import os
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("av")

from openai_server import OpenAIServer, image_parts  # noqa: E402
from PIL import Image  # noqa: E402

from lmms_eval.api.instance import GenerationResult, Instance, RequestFailure  # noqa: E402
from lmms_eval.cli import main  # noqa: E402
from lmms_eval.errors import ModelArgsError  # noqa: E402
from lmms_eval.media import FrameSelection, MediaError, decode_video, read_video  # noqa: E402
from lmms_eval.media.synthetic import frame_index, write_index_video  # noqa: E402
from lmms_eval.models import get_model  # noqa: E402
from lmms_eval.models.chat.sglang import build_hf_chat  # noqa: E402
from lmms_eval.models.chat.vllm import VLLM, build_vllm_messages  # noqa: E402
from lmms_eval.models.hf.backend import native_video_inputs  # noqa: E402
from lmms_eval.models.hf.tiny import build_tiny_vlm  # noqa: E402
from lmms_eval.protocol import ChatMessages  # noqa: E402

TASK, SPLIT = "v", "test"


@pytest.fixture(scope="module", autouse=True)
def _one_torch_thread() -> Any:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def videos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("videos")
    good = write_index_video(root / "good.mp4", 40, fps=10)
    (root / "corrupt.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42" + os.urandom(2000))
    return {
        "good": good,
        "other": write_index_video(root / "other.mp4", 25, fps=5),
        "corrupt": str(root / "corrupt.mp4"),
        "missing": str(root / "missing.mp4"),
    }


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("tiny")
    return {family: build_tiny_vlm(family, str(root / family)) for family in ("qwen2_vl", "llava")}


def load(folder: str, model_id: str, **args: Any) -> Any:
    model = get_model(model_id)(pretrained=folder, device="cpu", torch_dtype="float32", **args)
    model.gate.breaker_after = None
    return model


def video_messages(doc: dict[str, Any], **_: Any) -> list[dict[str, Any]]:
    return [
        {
            "role": "user",
            "content": [{"type": "video", "url": doc["video"]}, {"type": "text", "text": "What?"}],
        }
    ]


def frame_messages(doc: dict[str, Any], **_: Any) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"type": "image", "url": f} for f in doc["frames"]]
    return [{"role": "user", "content": [*parts, {"type": "text", "text": "What?"}]}]


def request(doc_id: int, fn: Callable[..., Any] = video_messages) -> Instance:
    meta = {"task": TASK, "doc_id": doc_id, "split": SPLIT}
    return Instance("generate_until", (fn, {"max_new_tokens": 4}, doc_id, TASK, SPLIT), doc_id, meta)


# -- transformers ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("family", "model_id"), [("qwen2_vl", "qwen2_vl"), ("llava", "llava_hf")])
def test_hf_video_files_reach_the_model_as_the_sampled_frames(
    family: str, model_id: str, tiny: dict[str, str], videos: dict[str, str]
) -> None:
    model = load(tiny[family], model_id, max_num_frames=4, batch_size=2)
    assert not model.native_video  # no torchvision here: the processors have no video processor
    assert model.template_shows_video() is (family == "qwen2_vl")  # llava's template has no video part
    frames = [Image.fromarray(f) for f in read_video(videos["good"], 4)]
    assert [frame_index(f) for f in frames] == [0, 13, 26, 39]
    model.task_dict = {TASK: {SPLIT: [{"video": videos["good"]}, {"frames": frames}]}}
    prompt = model._prompt_for(request(0), model.task_dict[TASK][SPLIT][0])
    assert [frame_index(im) for im in prompt.images] == [0, 13, 26, 39]
    outputs = model.generate_until([request(0), request(1, frame_messages)])
    assert all(isinstance(o, GenerationResult) for o in outputs)
    assert outputs[0].text == outputs[1].text and outputs[0].token_counts == outputs[1].token_counts


def test_hf_fps_sampling_and_clip_times(tiny: dict[str, str], videos: dict[str, str]) -> None:
    model = load(tiny["qwen2_vl"], "qwen2_vl", max_num_frames=16, fps=1.0)
    clip = {"type": "video", "url": videos["good"], "start_time": 1.0, "end_time": 3.0}
    model.task_dict = {TASK: {SPLIT: [{}]}}
    prompt = model._prompt_for(request(0, lambda doc: [{"role": "user", "content": [clip]}]), {})
    # frames 10..30 (2 s at 10 fps), 1 frame per second -> 2 frames: the first and the last
    assert [frame_index(im) for im in prompt.images] == [10, 30]
    with pytest.raises(ModelArgsError, match="video_mode='film'"):
        load(tiny["qwen2_vl"], "qwen2_vl", video_mode="film")


def test_hf_broken_videos_fail_their_request_only(tiny: dict[str, str], videos: dict[str, str]) -> None:
    model = load(tiny["qwen2_vl"], "qwen2_vl", max_num_frames=3, batch_size=2)
    names = ["good", "missing", "corrupt", "other", "good"]
    model.task_dict = {TASK: {SPLIT: [{"video": videos[n]} for n in names]}}
    outputs = model.generate_until([request(i) for i in range(len(names))])
    kinds = [o.kind if isinstance(o, RequestFailure) else "ok" for o in outputs]
    assert kinds == ["ok", "input", "input", "ok", "ok"]
    assert "not found" in outputs[1].error and not outputs[1].retryable
    assert "does not open as a video" in outputs[2].error
    assert outputs[0].text == outputs[4].text
    assert model.gate.state().reported == 5  # the gate heard every answer, failures included


def test_hf_broken_videos_in_loglikelihood_and_multi_round_requests(
    tiny: dict[str, str], videos: dict[str, str]
) -> None:
    model = load(tiny["qwen2_vl"], "qwen2_vl", max_num_frames=2, batch_size=2)
    model.task_dict = {TASK: {SPLIT: [{"video": videos[n]} for n in ("good", "missing", "other")]}}
    meta = [{"task": TASK, "doc_id": i, "split": SPLIT} for i in range(3)]
    scored = model.loglikelihood(
        [
            Instance("loglikelihood", (video_messages, " yes", None, i, TASK, SPLIT), i, meta[i])
            for i in range(3)
        ]
    )
    assert isinstance(scored[0], tuple) and isinstance(scored[2], tuple)
    assert isinstance(scored[1], RequestFailure) and scored[1].kind == "input"
    dialogues = model.generate_until_multi_round(
        [
            Instance(
                "generate_until_multi_round",
                (video_messages, {"max_new_tokens": 2}, i, TASK, SPLIT),
                i,
                meta[i],
            )
            for i in range(3)
        ]
    )
    assert [type(d).__name__ for d in dialogues] == ["GenerationResult", "RequestFailure", "GenerationResult"]


def test_hf_native_video_inputs_carry_the_frame_indices(
    tiny: dict[str, str], videos: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    video = decode_video(videos["good"], FrameSelection(nframes=4, start_time=1.0))
    kwargs = native_video_inputs([video])
    (meta,) = kwargs["video_metadata"]
    assert kwargs["do_sample_frames"] is False and kwargs["videos"][0].shape == (4, 48, 64, 3)
    assert meta.frames_indices == [10, 19, 29, 39] and meta.fps == 10.0 and meta.total_num_frames == 40
    assert meta.sampled_fps == pytest.approx(1.0)  # 4 of 40 frames at 10 fps
    model = load(tiny["qwen2_vl"], "qwen2_vl", max_num_frames=4, video_mode="native")
    assert model.native_video
    prompt = model._load_prompt(ChatMessages.from_raw(video_messages({"video": videos["good"]})))
    assert prompt.images == [] and len(prompt.videos) == 1
    assert prompt.text.count("<|video_pad|>") == 1 and prompt.videos[0].indices == [0, 13, 26, 39]
    seen: dict[str, Any] = {}

    def processor(**kw: Any) -> Any:
        seen.update(kw)
        return types.SimpleNamespace(to=lambda *_: types.SimpleNamespace(to=lambda *_: "encoded"))

    monkeypatch.setattr(model, "processor", processor)
    assert model._encode([prompt.text], [prompt.images], "left", [prompt.videos]) == "encoded"
    assert "images" not in seen and [m.frames_indices for m in seen["video_metadata"]] == [[0, 13, 26, 39]]


def test_cli_run_counts_broken_videos_and_exits_non_zero(
    tiny: dict[str, str], videos: dict[str, str], tmp_path: Path
) -> None:
    """A local video task whose data file names its videos relative to its own folder. (Pre-flight
    checks that the media of the first 3 documents exist, so the broken ones come later.)"""
    data = tmp_path / "data"
    (data / "clips").mkdir(parents=True)
    for name in ("good", "other", "corrupt"):
        Path(data / "clips" / f"{name}.mp4").write_bytes(Path(videos[name]).read_bytes())
    names = ("good", "other", "good", "missing", "corrupt")
    rows = [{"video": f"clips/{n}.mp4", "answer": "x"} for n in names]
    (data / "test.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    (tmp_path / "vid.yaml").write_text(
        "task: vid_local\ndataset_path: json\ndataset_kwargs:\n  data_files:\n    test: data/test.jsonl\n"
        "test_split: test\ndoc_to_visual: video\ndoc_to_text: 'What happens?'\ndoc_to_target: answer\n"
        "output_type: generate_until\ngeneration_kwargs:\n  max_new_tokens: 3\n"
        "metric_list:\n  - metric: exact_match\n",
        encoding="utf-8",
    )
    args = [
        "--model", "qwen2_vl", "--model_args", f"pretrained={tiny['qwen2_vl']},max_num_frames=3",
        "--tasks", "vid_local", "--include_path", str(tmp_path), "--output_path", str(tmp_path / "out"),
        "--batch_size", "2", "--verbosity", "WARNING",
    ]  # fmt: skip
    assert main(args) == 3
    results = json.loads(next((tmp_path / "out").rglob("*_results.json")).read_text())
    failures = results["failures"]["vid_local"]
    assert failures["by_kind"] == {"input": 2} and failures["doc_ids"] == [3, 4]
    assert results["results"]["vid_local"]["failed"] == 2
    assert main([*args, "--allow_failures"]) == 0


# -- OpenAI-compatible, vLLM, SGLang ----------------------------------------------------------------


def test_openai_sends_decoded_frames_and_fails_broken_videos_without_sending(videos: dict[str, str]) -> None:
    with OpenAIServer() as server:
        model: Any = get_model("openai")(
            model="m", base_url=server.base_url, api_key="sk-test", max_frames_num=3, retry_backoff_s=0.01
        )
        model.task_dict = {TASK: {SPLIT: [{"video": videos[n]} for n in ("good", "corrupt")]}}
        outputs = model.generate_until([request(0), request(1)])
        assert isinstance(outputs[0], GenerationResult)
        assert isinstance(outputs[1], RequestFailure) and outputs[1].kind == "input"
        (received,) = server.requests
        urls = image_parts(received.payload)
        assert len(urls) == 3 and all(u.startswith("data:image/png;base64,") for u in urls)
        sent = [frame_index(Image.open(io.BytesIO(_decode(u)))) for u in urls]
        assert sent == [0, 19, 39]


def _decode(uri: str) -> bytes:
    import base64

    return base64.b64decode(uri.partition(",")[2])


def test_vllm_and_sglang_requests_for_video_files(
    videos: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    chat = ChatMessages.from_raw(video_messages({"video": videos["good"]}))
    (part, _text) = build_vllm_messages(chat)[0]["content"]  # the engine decodes it
    assert part == {"type": "video_url", "video_url": {"url": "file://" + os.path.abspath(videos["good"])}}
    decoded = build_vllm_messages(chat, max_frames_num=4, decode_videos=True)[0]["content"]
    assert [p["type"] for p in decoded] == ["image_url"] * 4 + ["text"]
    with pytest.raises(MediaError, match="not found"):
        build_vllm_messages(ChatMessages.from_raw(video_messages({"video": videos["missing"]})))
    messages, images = build_hf_chat(chat, max_frames_num=3, decode_videos=True)
    assert [frame_index(im) for im in images] == [0, 19, 39]
    assert [p["type"] for p in messages[0]["content"]] == ["image", "image", "image", "text"]

    class FakeLLM:
        def __init__(self, **_: Any) -> None:
            self.calls: list[Any] = []

        def chat(self, conversations: list[Any], **_: Any) -> list[Any]:
            self.calls.append(conversations)
            return [types.SimpleNamespace(outputs=[types.SimpleNamespace(text="ok", token_ids=[1])])] * len(
                conversations
            )

    module = types.ModuleType("vllm")
    module.LLM = FakeLLM  # type: ignore[attr-defined]
    module.SamplingParams = lambda **kw: kw  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm", module)
    model = VLLM(pretrained="org/ckpt", max_frames_num=2, decode_videos=True)
    model.task_dict = {TASK: {SPLIT: [{"video": videos[n]} for n in ("good", "corrupt", "other")]}}
    outputs = model.generate_until([request(i) for i in range(3)])
    assert [o.kind if isinstance(o, RequestFailure) else getattr(o, "text", o) for o in outputs] == [
        "ok",
        "input",
        "ok",
    ]
    (sent,) = model.llm.calls
    assert len(sent) == 2 and [p["type"] for p in sent[0][0]["content"]] == ["image_url", "image_url", "text"]
