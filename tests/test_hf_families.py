"""The transformers families under their published ids, on tiny random checkpoints built offline.

Each family's checkpoint is written once per module by :mod:`tiny_families` and loaded through
its published id (``lmms_eval.models.get_model``), so the family hook, the torchvision-free
processor and the default prompt format are what runs. Per family: batched generation equals one
by one, the simple variant answers as the chat one, and the image reaches the model (the pixel
inputs given to ``generate`` are non-empty and change with the image).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from PIL import Image  # noqa: E402

from lmms_eval.api.instance import GenerationResult, Instance  # noqa: E402
from lmms_eval.models import get_model, resolve_model  # noqa: E402
from lmms_eval.models.hf.backend import HFVisionLanguageModel  # noqa: E402
from lmms_eval.models.hf.compat import torchvision_available  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
import tiny_families  # noqa: E402

TASK, SPLIT = "t", "test"
# tiny family -> the published id that runs it
MODEL_IDS = {
    "llava_onevision": "llava_onevision",
    "llava_next_video": "llava_next_video",
    "video_llava": "video_llava",
    "gemma3": "gemma3",
    "idefics2": "idefics2",
    "llama_vision": "llama_vision",
    "instructblip": "instructblip",
    "paligemma": "paligemma",
    "glm4v": "glm4v",
    "qwen3_5": "qwen3_5",
    "qwen3_5_moe": "qwen3_5",
    "internvl_hf": "internvl_hf",
    "aria": "aria",
    "mistral3_vl": "mistral3_vl",
    "fuyu": "fuyu",
    "ovis2": "ovis2",
}
NEEDS_TORCHVISION = {"mistral3_vl"}  # transformers' Pixtral processor imports torchvision
NO_CHAT_TEMPLATE = ("instructblip", "paligemma", "fuyu")
PIXEL_KEYS = ("pixel_values", "image_patches")


def _param(family: str) -> Any:
    marks = []
    if family in NEEDS_TORCHVISION:
        marks.append(pytest.mark.skipif(not torchvision_available(), reason="needs torchvision"))
    return pytest.param(family, marks=marks)


FAMILIES = [_param(f) for f in MODEL_IDS]
SIMPLE_FAMILIES = [
    _param(f) for f in MODEL_IDS if f != "internvl_hf"
]  # internvl_hf is chat only, as published


@pytest.fixture(scope="module", autouse=True)
def _one_torch_thread() -> Iterator[None]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Each family's checkpoint, built the first time a test asks for it."""
    return {}


_LOADED: dict[tuple[str, bool], HFVisionLanguageModel] = {}


def load(family: str, checkpoints: dict[str, str], root: Path, simple: bool = False) -> HFVisionLanguageModel:
    if family not in checkpoints:
        checkpoints[family] = tiny_families.build(family, str(root / family))
    key = (family, simple)
    if key not in _LOADED:
        cls = get_model(MODEL_IDS[family], force_simple=simple)
        _LOADED[key] = cls.create_from_arg_string(f"pretrained={checkpoints[family]},device=cpu")
    model = _LOADED[key]
    model.task_dict = {TASK: {SPLIT: DOCS}}
    model.batch_size_per_gpu = 1
    return model


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("families")


DOCS = [
    {"image": Image.new("RGB", (40, 32), (220, 30, 30)), "question": "What colour is the shape?"},
    {"image": Image.new("RGB", (32, 56), (20, 40, 210)), "question": "Which shape is at the top left of it?"},
    {"image": Image.new("RGB", (36, 36), (30, 200, 40)), "question": "Count?"},
]


def doc_to_messages(doc: dict[str, Any], **_: Any) -> list[dict[str, Any]]:
    content = [{"type": "image", "url": doc["image"]}, {"type": "text", "text": doc["question"]}]
    return [{"role": "user", "content": content}]


def doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    return [doc["image"]]


def chat_request(doc_id: int) -> Instance:
    args = (doc_to_messages, {"max_new_tokens": 3, "temperature": 0}, doc_id, TASK, SPLIT)
    return Instance("generate_until", args, 0, {"task": TASK, "doc_id": doc_id, "split": SPLIT})


def simple_request(doc_id: int) -> Instance:
    args = (
        DOCS[doc_id]["question"],
        {"max_new_tokens": 3, "temperature": 0},
        doc_to_visual,
        doc_id,
        TASK,
        SPLIT,
    )
    return Instance("generate_until", args, 0, {"task": TASK, "doc_id": doc_id, "split": SPLIT})


def results(outputs: list[Any]) -> list[GenerationResult]:
    assert all(isinstance(o, GenerationResult) for o in outputs), outputs
    return [o for o in outputs if isinstance(o, GenerationResult)]


@pytest.mark.parametrize("family", FAMILIES)
def test_batched_equals_single_and_the_image_reaches_the_model(
    family: str, checkpoints: dict[str, str], root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = load(family, checkpoints, root)
    assert resolve_model(MODEL_IDS[family]).model_id == MODEL_IDS[family]
    seen: list[dict[str, Any]] = []
    generate = model.model.generate

    def spy(**kwargs: Any) -> Any:
        seen.append(kwargs)
        return generate(**kwargs)

    monkeypatch.setattr(model.model, "generate", spy)
    requests = [chat_request(i) for i in range(len(DOCS))]
    model.batch_size_per_gpu = len(DOCS)
    batched = results(model.generate_until(requests))
    model.batch_size_per_gpu = 1
    single = results(model.generate_until(requests))

    assert [r.text for r in batched] == [r.text for r in single]
    assert [r.token_counts for r in batched] == [r.token_counts for r in single]
    for result in batched:
        assert result.token_counts is not None and (result.token_counts.output_tokens or 0) <= 3
        assert result.latency_s is not None and result.latency_s > 0
    # the single runs (calls 2..4) each got their own image: non-empty pixels that differ
    pixels = [next(call[k] for k in PIXEL_KEYS if call.get(k) is not None) for call in seen[1:]]
    flat = [torch.cat([p.flatten().float() for p in value]) if isinstance(value, list) else value.float().flatten()
            for value in pixels]  # fmt: skip
    assert all(p.numel() > 0 for p in flat)
    assert not torch.equal(flat[0], flat[2]) or flat[0].shape != flat[2].shape


@pytest.mark.parametrize("family", SIMPLE_FAMILIES)
def test_simple_variant_answers_as_the_chat_variant(
    family: str, checkpoints: dict[str, str], root: Path
) -> None:
    chat = load(family, checkpoints, root)
    simple = load(family, checkpoints, root, simple=True)
    assert simple.is_simple and not chat.is_simple
    expected = [r.text for r in results(chat.generate_until([chat_request(0)]))]
    assert [r.text for r in results(simple.generate_until([simple_request(0)]))] == expected


@pytest.mark.parametrize("family", NO_CHAT_TEMPLATE)
def test_families_without_a_chat_template_use_their_prompt_format(
    family: str, checkpoints: dict[str, str], root: Path
) -> None:
    """The saved checkpoint has no chat template, as the released ones; the family's format is
    used, and the question is the prompt's text."""
    model = load(family, checkpoints, root)
    folder = Path(checkpoints[family])
    assert "chat_template" not in (folder / "tokenizer_config.json").read_text(encoding="utf-8")
    assert not (folder / "chat_template.jinja").exists()
    prompt = model._load_prompt(model._messages_for(chat_request(1), DOCS[1]))
    assert prompt.text.strip() == DOCS[1]["question"]
    assert len(prompt.images) == 1


def test_a_video_family_reads_frames_without_torchvision(checkpoints: dict[str, str], root: Path) -> None:
    """Without torchvision the video processor is dropped and videos go in as frames."""
    model = load("llava_next_video", checkpoints, root)
    if torchvision_available():
        pytest.skip("torchvision is installed: the native video path is used")
    assert getattr(model.processor, "video_processor", None) is None and not model.native_video
    frames = [Image.new("RGB", (32, 32), (i * 60, 20, 20)) for i in range(3)]

    def video(doc: dict[str, Any], **_: Any) -> list[dict[str, Any]]:
        return [
            {"role": "user", "content": [{"type": "video", "url": frames}, {"type": "text", "text": "What?"}]}
        ]

    args = (video, {"max_new_tokens": 2}, 0, TASK, SPLIT)
    request = Instance("generate_until", args, 0, {"task": TASK, "doc_id": 0, "split": SPLIT})
    prompt = model._load_prompt(model._messages_for(request, DOCS[0]))
    assert len(prompt.images) == min(3, model.max_num_frames)
    (out,) = results(model.generate_until([request]))
    assert out.token_counts is not None and (out.token_counts.input_tokens or 0) > 3 * 16


# -- remote-code checkpoints ---------------------------------------------------------------------

REMOTE_CONFIG = """
from transformers import PretrainedConfig


class TinyChatConfig(PretrainedConfig):
    model_type = "{model_type}"

    def __init__(self, force_image_size=32, hidden_size=8, **kwargs):
        self.force_image_size = force_image_size
        self.hidden_size = hidden_size
        super().__init__(**kwargs)
"""
# the checkpoint's own model: answers from the question and the pixels it was given, so the
# test sees what reached it; InternVL's chat/batch_chat and MiniCPM-V's chat signatures
REMOTE_MODELING = """
import torch
from transformers import PreTrainedModel

from .configuration_tiny import TinyChatConfig


class TinyChatModel(PreTrainedModel):
    config_class = TinyChatConfig

    def __init__(self, config):
        super().__init__(config)
        self.scale = torch.nn.Parameter(torch.ones(1))
        self.post_init()

    def _answer(self, question, pixels):
        mean = "none" if pixels is None else f"{float(pixels.float().mean()):.4f}x{pixels.shape[0]}"
        return f"{len(question.split())} words {question.count('<image>')} images {mean}"

    def chat(self, tokenizer, pixel_values, question, generation_config, history=None,
             return_history=False, num_patches_list=None):
        assert "max_new_tokens" in generation_config
        return self._answer(question, pixel_values)

    def batch_chat(self, tokenizer, pixel_values, questions, generation_config, num_patches_list=None):
        parts = torch.split(pixel_values, num_patches_list)
        return [self._answer(q, p) for q, p in zip(questions, parts)]


class TinyMiniCPMModel(TinyChatModel):
    def chat(self, image, msgs, tokenizer, sampling=False, max_new_tokens=None, **kwargs):
        import numpy as np

        content = msgs[-1]["content"]
        images = [c for c in content if not isinstance(c, str)]
        text = [c for c in content if isinstance(c, str)][-1]
        mean = ",".join(f"{np.asarray(i).mean():.1f}" for i in images)
        return f"{len(text.split())} words {len(images)} images {mean}"
"""


def write_remote_checkpoint(folder: Path, model_type: str, model_class: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "configuration_tiny.py").write_text(
        REMOTE_CONFIG.format(model_type=model_type), encoding="utf-8"
    )
    (folder / "modeling_tiny.py").write_text(REMOTE_MODELING, encoding="utf-8")
    config = {
        "model_type": model_type,
        "architectures": [model_class],
        "auto_map": {
            "AutoConfig": "configuration_tiny.TinyChatConfig",
            "AutoModel": f"modeling_tiny.{model_class}",
        },
        "force_image_size": 32,
        "hidden_size": 8,
    }
    (folder / "config.json").write_text(__import__("json").dumps(config), encoding="utf-8")
    import safetensors.torch

    safetensors.torch.save_file({"scale": torch.ones(1)}, str(folder / "model.safetensors"))
    tiny_families.tokenizer("<|endoftext|>", "<|im_end|>").save_pretrained(str(folder))
    return str(folder)


@pytest.fixture(scope="module")
def remote_checkpoints(root: Path) -> dict[str, str]:
    return {
        "internvl": write_remote_checkpoint(root / "remote_internvl", "internvl_chat", "TinyChatModel"),
        "minicpm": write_remote_checkpoint(root / "remote_minicpm", "minicpmv", "TinyMiniCPMModel"),
    }


@pytest.mark.parametrize("model_id", ["internvl2", "internvl3", "internvl3_5"])
def test_internvl_remote_code_runs_the_checkpoints_chat(
    model_id: str, remote_checkpoints: dict[str, str]
) -> None:
    folder = remote_checkpoints["internvl"]
    cls = get_model(model_id)
    with pytest.raises(Exception, match="trust_remote_code=true"):
        cls.create_from_arg_string(f"pretrained={folder}")
    model = cls.create_from_arg_string(f"pretrained={folder},trust_remote_code=true,device=cpu,max_tiles=4")
    assert type(model.model).__module__.startswith("transformers_modules")  # the checkpoint's own class
    model.task_dict = {TASK: {SPLIT: DOCS}}
    requests = [chat_request(i) for i in range(len(DOCS))]
    model.batch_size_per_gpu = len(DOCS)  # batch_chat
    batched = [r.text for r in results(model.generate_until(requests))]
    model.batch_size_per_gpu = 1  # chat
    single = [r.text for r in results(model.generate_until(requests))]
    assert batched == single
    for doc, text in zip(DOCS, single):
        words, _, images = text.split()[:3]
        assert int(words) == len(("<image>\n" + doc["question"]).split()) and images == "1"
    means = [text.split()[4] for text in single]
    assert len(set(means)) == len(DOCS)  # each image reached the model as its own pixels
    assert means[1].endswith("x3")  # 32x56: a 1x2 grid of tiles plus the thumbnail


def test_minicpm_v_remote_code_and_native_share_the_published_id(remote_checkpoints: dict[str, str]) -> None:
    from lmms_eval.models.hf.families import MiniCPMV
    from lmms_eval.models.hf.remote import MiniCPMVChat

    cls = get_model("minicpm_v")
    assert cls is MiniCPMV
    model = cls.create_from_arg_string(
        f"pretrained={remote_checkpoints['minicpm']},trust_remote_code=true,device=cpu"
    )
    assert isinstance(model, MiniCPMVChat)
    model.task_dict = {TASK: {SPLIT: DOCS}}
    texts = [r.text for r in results(model.generate_until([chat_request(i) for i in range(2)]))]
    assert texts[0].startswith(f"{len(DOCS[0]['question'].split())} words 1 images")
    assert texts[0].split()[-1] != texts[1].split()[-1]  # different images, different pixels


def test_remote_code_model_counts_tokens_and_cuts_stop_strings(remote_checkpoints: dict[str, str]) -> None:
    model = get_model("internvl2").create_from_arg_string(
        f"pretrained={remote_checkpoints['internvl']},trust_remote_code=true,device=cpu"
    )
    model.task_dict = {TASK: {SPLIT: DOCS}}
    args = (doc_to_messages, {"max_new_tokens": 8, "until": [" images"]}, 0, TASK, SPLIT)
    (out,) = results(
        model.generate_until(
            [Instance("generate_until", args, 0, {"task": TASK, "doc_id": 0, "split": SPLIT})]
        )
    )
    assert out.text.endswith("words 1")
    assert out.token_counts is not None and (out.token_counts.input_tokens or 0) > 0
    assert (out.token_counts.output_tokens or 0) > 0 and out.latency_s is not None


def test_phi3v_remote_code_runs_the_processor_and_generate(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Phi-3.5-vision's documented interface: the checkpoint's AutoProcessor (``num_crops``) on a
    chat-templated prompt with ``<|image_k|>`` placeholders, then ``model.generate``."""
    folder = tiny_families.write_phi3v_checkpoint(str(root / "remote_phi3v"))
    cls = get_model("phi3v")
    with pytest.raises(Exception, match="trust_remote_code=true"):
        cls.create_from_arg_string(f"pretrained={folder}")
    model = cls.create_from_arg_string(f"pretrained={folder},trust_remote_code=true,device=cpu,num_crops=2")
    assert type(model.model).__module__.startswith("transformers_modules")  # the checkpoint's own classes
    assert (
        type(model.processor).__module__.startswith("transformers_modules") and model.processor.num_crops == 2
    )
    model.task_dict = {TASK: {SPLIT: DOCS}}
    prompt = model._load_prompt(model._messages_for(chat_request(0), DOCS[0]))
    assert prompt.text == f"<|user|>\n<|image_1|>\n{DOCS[0]['question']}<|end|>\n<|assistant|>\n"
    seen: list[dict[str, Any]] = []
    generate = model.model.generate

    def spy(**kwargs: Any) -> Any:
        seen.append(kwargs)
        return generate(**kwargs)

    monkeypatch.setattr(model.model, "generate", spy)
    requests = [chat_request(i) for i in range(len(DOCS))]
    model.batch_size_per_gpu = len(DOCS)
    batched = results(model.generate_until(requests))
    model.batch_size_per_gpu = 1
    single = results(model.generate_until(requests))
    assert [r.text for r in batched] == [r.text for r in single]
    assert [r.token_counts for r in batched] == [r.token_counts for r in single]
    calls = seen[len(DOCS) :]  # the single runs, in request order (sorted by length: match by size)
    for call in calls:
        ids = call["input_ids"][0]
        assert int((ids == -1).sum()) == 3  # the image's positions, as the processor placed them
        assert call["pixel_values"].shape[:2] == (1, 3) and call["image_sizes"].shape == (1, 2)
    sizes = sorted(tuple(c["image_sizes"][0].tolist()) for c in calls)
    assert sizes == sorted((d["image"].height, d["image"].width) for d in DOCS)  # each its own image
    pixels = [c["pixel_values"].flatten() for c in calls]
    assert not torch.equal(pixels[0], pixels[1]) and not torch.equal(pixels[1], pixels[2])
    for result in single:
        counts = result.token_counts
        assert counts is not None and (counts.input_tokens or 0) > 3 and (counts.output_tokens or 0) <= 3
    # log-likelihoods: the forward pass over prompt + continuation, one request at a time
    scored = [
        Instance(
            "loglikelihood", (doc_to_messages, " red", None, i, TASK, SPLIT), 0, {"task": TASK, "doc_id": i}
        )
        for i in range(2)
    ]
    model.batch_size_per_gpu = 2
    (first, greedy), (second, _) = model.loglikelihood(scored)
    assert first < 0 and second < 0 and first != second and isinstance(greedy, bool)
    simple = get_model("phi3v", force_simple=True).create_from_arg_string(
        f"pretrained={folder},trust_remote_code=true,device=cpu,num_crops=2"
    )
    simple.task_dict = model.task_dict
    assert simple.is_simple
    assert [r.text for r in results(simple.generate_until([simple_request(0)]))] == [single[0].text]


# -- every published id resolves -------------------------------------------------------------------


def test_every_published_id_runs_or_says_what_to_use(capsys: pytest.CaptureFixture[str]) -> None:
    from lmms_eval.cli import main
    from lmms_eval.models import ensure_registry
    from lmms_eval.models.catalog import NOT_HERE, PUBLISHED_MODEL_IDS, published_status

    assert len(PUBLISHED_MODEL_IDS) == len(set(PUBLISHED_MODEL_IDS)) == 120
    registry = ensure_registry()
    for published_id in PUBLISHED_MODEL_IDS:
        status = published_status(published_id)
        if status.runs:
            assert published_id not in NOT_HERE, published_id
            assert registry.resolve(published_id).model_id == status.model_id
        else:
            assert status.note == NOT_HERE[published_id] and "\n" not in status.note
            named = [word.strip(",;:()") for word in status.note.split()]
            nearest = [w for w in named if w in registry.names(aliases=True)]
            assert nearest or any(k in status.note for k in ("needs", "not ", "remote code")), published_id
    for family in (
        *MODEL_IDS.values(),
        "fuyu",
        "phi4_multimodal",
        "minicpm_v",
        "qwen2_audio",
        "internvl2",
        "phi3v",
    ):
        assert published_status(family).runs or family in ("llava_next_video",), family
    assert resolve_model("ovis").model_id == "ovis2" and not published_status("ovis_u1").runs
    assert main(["models", "--all"]) == 0
    out = capsys.readouterr().out
    assert all(f"| {model_id} " in out for model_id in PUBLISHED_MODEL_IDS)
    assert "use llava_hf with a converted checkpoint" in out


def test_qwen2_audio_has_the_published_simple_form() -> None:
    resolved = resolve_model("qwen2_audio", force_simple=True)
    assert resolved.model_type == "simple" and get_model("qwen2_audio", force_simple=True).is_simple
    assert resolve_model("qwen2_audio").model_type == "chat"
