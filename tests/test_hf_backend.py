"""The transformers backends on tiny random checkpoints of every family, offline on CPU.

Each family's checkpoint is built once per session with ``build_tiny_vlm``. The checks compare
the backend with itself (batched vs one by one, with vs without stop strings) and with a direct
processor + model computation written here, and run real evaluations through
``simple_evaluate`` and the CLI.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from PIL import Image  # noqa: E402

import lmms_eval  # noqa: E402
from lmms_eval.api.instance import GenerationResult, Instance  # noqa: E402
from lmms_eval.cli import main  # noqa: E402
from lmms_eval.errors import LmmsEvalError, ModelArgsError  # noqa: E402
from lmms_eval.media import load_video_frames, sample_frame_indices  # noqa: E402
from lmms_eval.models import get_model, resolve_model  # noqa: E402
from lmms_eval.models.hf import backend  # noqa: E402
from lmms_eval.models.hf.backend import HFVisionLanguageModel  # noqa: E402
from lmms_eval.models.hf.tiny import FAMILIES, build_tiny_vlm  # noqa: E402
from lmms_eval.tasks import TaskManager  # noqa: E402

MODEL_IDS = {
    "qwen2_vl": "qwen2_vl",
    "qwen2_5_vl": "qwen2_5_vl",
    "qwen3_vl": "qwen3_vl",
    "llava": "llava_hf",
    "idefics3": "idefics3",
    "smolvlm": "smolvlm",
}
SIMPLE_IDS = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl", "llava_hf")
SPLIT = "test"
TASK = "t"

# -- session fixtures ---------------------------------------------------------------------------


@pytest.fixture(scope="module", autouse=True)
def _one_torch_thread() -> Iterator[None]:
    """One intra-op thread: the tiny models gain nothing from more, and a busy machine makes
    spinning worker threads many times slower."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("tiny_vlms")
    return {family: build_tiny_vlm(family, str(root / family)) for family in FAMILIES}


@pytest.fixture(scope="session")
def images(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Small PNGs of different sizes and colours."""
    root = tmp_path_factory.mktemp("images")
    paths = []
    for i, (size, colour) in enumerate(
        [
            ((32, 32), (220, 30, 30)),
            ((48, 32), (30, 200, 40)),
            ((40, 56), (20, 40, 210)),
            ((36, 36), (240, 220, 20)),
        ]
    ):
        path = root / f"img{i}.png"
        Image.new("RGB", size, colour).save(path)
        paths.append(str(path))
    return paths


_LOADED: dict[tuple[str, str], HFVisionLanguageModel] = {}


@pytest.fixture
def load(tiny_models: dict[str, str]) -> Callable[..., HFVisionLanguageModel]:
    """A loaded chat (or simple) model per family, shared by the tests of the session."""

    def get(family: str, model_id: str | None = None, simple: bool = False) -> HFVisionLanguageModel:
        name = model_id or MODEL_IDS[family]
        key = (name, "simple" if simple else "chat")
        if key not in _LOADED:
            cls = get_model(name, force_simple=simple)
            _LOADED[key] = cls.create_from_arg_string(f"pretrained={tiny_models[family]}")
        model = _LOADED[key]
        model.batch_size_per_gpu = 1
        model.task_dict = {}
        return model

    return get


# -- request helpers ----------------------------------------------------------------------------


def docs_for(images: list[str]) -> list[dict[str, Any]]:
    return [
        {"question": "What colour is the shape?", "images": [images[0]]},
        {
            "question": "Look at the picture and say which colour fills most of it, in one word.",
            "images": [images[1]],
        },
        {"question": "Colour?", "images": [images[2], images[3]]},
        {
            "question": "Is the big square red or blue or green or yellow or purple?",
            "images": [Image.open(images[3])],
        },
    ]


def doc_to_messages(doc: dict[str, Any], **_: Any) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = [{"type": "image", "url": image} for image in doc["images"]]
    content.append({"type": "text", "text": doc["question"]})
    return [{"role": "user", "content": content}]


def meta(doc_id: int) -> dict[str, Any]:
    return {"task": TASK, "doc_id": doc_id, "split": SPLIT}


def gen_request(
    doc_id: int, gen_kwargs: dict[str, Any], fn: Callable[..., Any] = doc_to_messages
) -> Instance:
    return Instance("generate_until", (fn, gen_kwargs, doc_id, TASK, SPLIT), 0, meta(doc_id))


def ll_request(doc_id: int, continuation: str) -> Instance:
    return Instance(
        "loglikelihood", (doc_to_messages, continuation, None, doc_id, TASK, SPLIT), 0, meta(doc_id)
    )


def results_of(outputs: list[Any]) -> list[GenerationResult]:
    assert all(isinstance(o, GenerationResult) for o in outputs)
    return [o for o in outputs if isinstance(o, GenerationResult)]


def reference_prompt(model: HFVisionLanguageModel, doc: dict[str, Any]) -> tuple[str, list[Any]]:
    """The chat-templated prompt and the images of a doc, built directly with the processor."""
    content: list[dict[str, Any]] = [{"type": "image"} for _ in doc["images"]]
    content.append({"type": "text", "text": doc["question"]})
    text = model.processor.apply_chat_template(
        [{"role": "user", "content": content}], tokenize=False, add_generation_prompt=True
    )
    pictures = [(i if isinstance(i, Image.Image) else Image.open(i)).convert("RGB") for i in doc["images"]]
    return str(text), pictures


def reference_loglikelihood(model: HFVisionLanguageModel, doc: dict[str, Any], continuation: str) -> float:
    """Sum of continuation log-probs from one unpadded forward pass."""
    text, pictures = reference_prompt(model, doc)
    context = model.processor(text=[text], images=[pictures], return_tensors="pt")
    full = model.processor(text=[text + continuation], images=[pictures], return_tensors="pt")
    n_ctx = context["input_ids"].shape[1]
    assert torch.equal(full["input_ids"][0, :n_ctx], context["input_ids"][0])
    with torch.inference_mode():
        logits = model.model(**full).logits[0]
    log_probs = torch.log_softmax(logits[n_ctx - 1 : -1].float(), dim=-1)
    return float(log_probs.gather(-1, full["input_ids"][0, n_ctx:].unsqueeze(-1)).sum())


# -- generation ---------------------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
def test_batched_generation_equals_one_by_one(
    family: str, load: Callable[..., Any], images: list[str]
) -> None:
    model = load(family)
    docs = docs_for(images)
    model.task_dict = {TASK: {SPLIT: docs}}
    requests = [gen_request(i, {"max_new_tokens": 6, "temperature": 0}) for i in range(len(docs))]
    model.batch_size_per_gpu = 4
    batched = results_of(model.generate_until(requests))
    model.batch_size_per_gpu = 1
    single = results_of(model.generate_until(requests))

    assert [r.text for r in batched] == [r.text for r in single]
    assert [r.token_counts for r in batched] == [r.token_counts for r in single]
    # results come back in input order: each row's prompt length matches its own doc
    expected_lengths = []
    for doc in docs:
        text, pictures = reference_prompt(model, doc)
        expected_lengths.append(
            model.processor(text=[text], images=[pictures], return_tensors="pt")["input_ids"].shape[1]
        )
        assert expected_lengths[-1] > len(model.tokenizer(text)["input_ids"])  # image tokens expanded
    assert [r.token_counts.input_tokens for r in batched if r.token_counts] == expected_lengths
    assert len(set(expected_lengths)) == len(docs)  # the batch really was padded
    for result in batched:
        assert result.token_counts is not None and 0 < (result.token_counts.output_tokens or 0) <= 6
        assert result.latency_s is not None and result.time_to_first_token_s is not None
        assert 0 < result.time_to_first_token_s <= result.latency_s
    assert len({r.latency_s for r in batched}) == 1  # one batch, one wall time
    assert len({r.latency_s for r in single}) == len(docs)


@pytest.mark.parametrize("family", FAMILIES)
def test_stop_strings_cut_the_output(family: str, load: Callable[..., Any], images: list[str]) -> None:
    model = load(family)
    model.task_dict = {TASK: {SPLIT: docs_for(images)}}
    full = results_of(model.generate_until([gen_request(0, {"max_new_tokens": 8})]))[0]
    position = next(i for i, ch in enumerate(full.text) if i > 0 and ch.isascii() and ch.isalnum())
    stop = full.text[position]
    expected = full.text[: full.text.find(stop)]
    cut = results_of(model.generate_until([gen_request(0, {"max_new_tokens": 8, "until": [stop, "never"]})]))[
        0
    ]
    assert cut.text == expected
    assert full.token_counts is not None and cut.token_counts is not None
    assert (cut.token_counts.output_tokens or 0) < (full.token_counts.output_tokens or 0)  # stopped early


def test_generation_options_group_and_sampling(load: Callable[..., Any], images: list[str]) -> None:
    model = load("qwen2_vl")
    docs = docs_for(images)
    model.task_dict = {TASK: {SPLIT: docs}}
    greedy = {"max_new_tokens": 4, "temperature": 0}
    requests = [
        gen_request(0, greedy),
        gen_request(1, {"max_new_tokens": 3, "num_beams": 2}),
        gen_request(2, greedy),
        gen_request(3, {"max_new_tokens": 5, "temperature": 0.8, "top_p": 0.9}),
    ]
    model.batch_size_per_gpu = 4
    mixed = results_of(model.generate_until(requests))
    counts = [r.token_counts.output_tokens if r.token_counts else None for r in mixed]
    assert counts[1] is not None and counts[1] <= 3 and counts[3] is not None and counts[3] <= 5
    # the two greedy requests shared a batch; the others ran on their own
    assert mixed[0].latency_s == mixed[2].latency_s != mixed[1].latency_s
    alone = results_of(model.generate_until([gen_request(2, greedy)]))[0]
    assert alone.text == mixed[2].text
    assert (
        backend.GenerationSettings.from_gen_kwargs({"temperature": 0, "do_sample": True}).do_sample is False
    )
    assert backend.GenerationSettings.from_gen_kwargs({"temperature": 0.5}).do_sample is True
    assert (
        backend.GenerationSettings.from_gen_kwargs({"temperature": 0.5, "do_sample": False}).do_sample
        is False
    )


# -- loglikelihood -------------------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
def test_loglikelihood_batched_equals_single_and_direct(
    family: str, load: Callable[..., Any], images: list[str]
) -> None:
    model = load(family)
    docs = docs_for(images)
    model.task_dict = {TASK: {SPLIT: docs}}
    requests = [ll_request(i, c) for i in range(3) for c in (" red", " a blue square")]
    single = model.loglikelihood(requests)
    model.batch_size_per_gpu = 4
    batched = model.loglikelihood(requests)
    for (a, greedy_a), (b, greedy_b) in zip(single, batched):
        assert a == pytest.approx(b, abs=1e-4) and greedy_a == greedy_b
        assert a < 0 and isinstance(greedy_a, bool)
    assert single[0][0] == pytest.approx(reference_loglikelihood(model, docs[0], " red"), abs=1e-4)
    assert single[5][0] == pytest.approx(reference_loglikelihood(model, docs[2], " a blue square"), abs=1e-4)
    # more continuation tokens, lower log-likelihood (random weights spread the mass)
    assert single[1][0] < single[0][0]


def test_loglikelihood_rejects_a_context_that_is_not_a_token_prefix(
    tiny_models: dict[str, str],
) -> None:
    template = "{% for m in messages %}{% for p in m['content'] %}{{ p['text'] }}{% endfor %}{% endfor %}"
    model = get_model("huggingface").create_from_arg_string(
        {"pretrained": tiny_models["qwen2_vl"], "chat_template": template}
    )
    text_only: Callable[..., Any] = lambda doc, **_: [{"role": "user", "content": doc["text"]}]  # noqa: E731
    model.task_dict = {TASK: {SPLIT: [{"text": "the colour is gr"}]}}
    full_ids = model.tokenizer("the colour is green")["input_ids"]
    ctx_ids = model.tokenizer("the colour is gr")["input_ids"]
    assert full_ids[: len(ctx_ids)] != ctx_ids  # the tokenizer merges across the boundary
    request = Instance("loglikelihood", (text_only, "een", None, 0, TASK, SPLIT), 0, meta(0))
    with pytest.raises(LmmsEvalError, match="not a prefix"):
        model.loglikelihood([request])
    fine = Instance("loglikelihood", (text_only, "", None, 0, TASK, SPLIT), 0, meta(0))
    assert model.loglikelihood([fine]) == [(0.0, True)]


# -- evaluations through the evaluator and the CLI ----------------------------------------------


def write_tasks(write_files: Callable[..., Path], root: Path, images: list[str]) -> Path:
    colours = ["red", "green", "blue", "yellow"]
    rows = [
        {
            "image": images[i],
            "question": "What colour is the shape?",
            "answer": colours[i],
            "choices": colours,
        }
        for i in range(4)
    ]
    common = "dataset_path: json\ndataset_kwargs:\n  data_files:\n    test: data.jsonl\ntest_split: test\n"
    common += "doc_to_visual: image\ndoc_to_text: question\ndoc_to_target: answer\n"
    return write_files(
        {
            "hf/data.jsonl": "\n".join(json.dumps(r) for r in rows) + "\n",
            "hf/mc.yaml": "task: hf_mc\n" + common + "output_type: multiple_choice\ndoc_to_choice: choices\n"
            "metric_list:\n  - metric: acc\n",
            "hf/gen.yaml": "task: hf_gen\n" + common + "output_type: generate_until\n"
            "generation_kwargs:\n  max_new_tokens: 5\n  until: ['\\n']\nmetric_list:\n  - metric: exact_match\n",
        },
        root,
    )


@pytest.mark.parametrize("family", FAMILIES)
def test_multiple_choice_task_scores_the_argmax_of_loglikelihoods(
    family: str,
    load: Callable[..., Any],
    images: list[str],
    write_files: Callable[..., Path],
    tmp_path: Path,
) -> None:
    root = write_tasks(write_files, tmp_path / "tasks", images)
    model = load(family)
    model.batch_size_per_gpu = 3
    results = lmms_eval.simple_evaluate(
        model=model,
        tasks=["hf_mc"],
        task_manager=TaskManager(include_path=str(root), include_defaults=False),
        show_progress=False,
    )
    colours = ["red", "green", "blue", "yellow"]
    hits = 0
    for i, gold in enumerate(colours):
        doc = {"question": "What colour is the shape?", "images": [images[i]]}
        scores = [reference_loglikelihood(model, doc, f" {c}") for c in colours]
        hits += scores.index(max(scores)) == i
        assert gold == colours[i]
    assert results["results"]["hf_mc"]["acc,none"] == pytest.approx(hits / 4)


@pytest.mark.parametrize("model_id", SIMPLE_IDS)
def test_simple_variant_builds_the_same_prompt_as_the_chat_variant(
    model_id: str,
    load: Callable[..., Any],
    tiny_models: dict[str, str],
    images: list[str],
    write_files: Callable[..., Path],
    tmp_path: Path,
) -> None:
    family = next(f for f, m in MODEL_IDS.items() if m == model_id)
    simple = load(family, simple=True)
    chat = load(family)
    assert simple.is_simple and not chat.is_simple
    root = write_tasks(write_files, tmp_path / "tasks", images)
    manager = TaskManager(include_path=str(root), include_defaults=False)
    task: Any = manager.load_task_or_group(["hf_gen"])["hf_gen"]
    simple.task_dict = chat.task_dict = {"hf_gen": task.model_docs()}
    simple.batch_size_per_gpu = 3
    simple_out = results_of(simple.generate_until(task.build_all_requests(chat=False)))
    chat_out = results_of(chat.generate_until(task.build_all_requests(chat=True)))
    assert [(r.text, r.token_counts) for r in simple_out] == [(r.text, r.token_counts) for r in chat_out]
    # the simple layout with an explicit placeholder puts the image where the placeholder is
    messages = simple._simple_messages("Look: <image> now answer.", [images[0], images[1]])
    assert [part["type"] for part in messages[0]["content"]] == ["image", "text", "image", "text"]
    assert messages[0]["content"][2]["url"] == images[1]
    results = lmms_eval.simple_evaluate(
        model=model_id,
        model_args=f"pretrained={tiny_models[family]}",
        force_simple=True,
        tasks=["hf_mc"],
        task_manager=manager,
        show_progress=False,
    )
    assert results["config"]["model_backend"].endswith("(simple)")
    assert 0.0 <= results["results"]["hf_mc"]["acc,none"] <= 1.0


@pytest.mark.parametrize("family", FAMILIES)
def test_cli_run_writes_results_and_samples(
    family: str,
    tiny_models: dict[str, str],
    images: list[str],
    write_files: Callable[..., Path],
    tmp_path: Path,
) -> None:
    root = write_tasks(write_files, tmp_path / "tasks", images)
    out = tmp_path / "out"
    code = main(
        [
            "--model", MODEL_IDS[family], "--model_args", f"pretrained={tiny_models[family]}",
            "--tasks", "hf_gen,hf_mc", "--include_path", str(root), "--output_path", str(out),
            "--log_samples", "--batch_size", "2",
        ]
    )  # fmt: skip
    assert code == 0
    results = json.loads(next(out.rglob("*_results.json")).read_text())
    assert results["config"]["model_backend"].endswith("(chat)")
    assert 0.0 <= results["results"]["hf_mc"]["acc,none"] <= 1.0
    assert 0.0 <= results["results"]["hf_gen"]["exact_match,none"] <= 1.0
    samples = [
        json.loads(line) for line in next(out.rglob("*_samples_hf_gen.jsonl")).read_text().splitlines()
    ]
    assert len(samples) == 4
    for sample in samples:
        assert isinstance(sample["filtered_resps"][0], str)
        counts = sample["token_counts"][0]
        assert 0 < counts["output_tokens"] <= 5 and counts["input_tokens"] > 0
        assert 0 < counts["time_to_first_token_s"] <= counts["latency_s"]
    assert len(next(out.rglob("*_samples_hf_mc.jsonl")).read_text().splitlines()) == 4


# -- multi-round, video, arguments ---------------------------------------------------------------


def test_multi_round_accumulates_the_conversation(load: Callable[..., Any], images: list[str]) -> None:
    model = load("qwen2_vl")
    docs = docs_for(images)
    model.task_dict = {TASK: {SPLIT: docs}}
    calls: list[tuple[int, list[str]]] = []

    def rounds(doc: dict[str, Any], round_idx: int = 0, previous_output: list[str] | None = None) -> Any:
        calls.append((round_idx, list(previous_output or [])))
        if round_idx >= 2:
            return None
        return doc_to_messages(doc) if round_idx == 0 else [{"role": "user", "content": "And the second?"}]

    gen_kwargs = {"max_new_tokens": 4}
    request = Instance("generate_until_multi_round", (rounds, gen_kwargs, 0, TASK, SPLIT), 0, meta(0))
    output = results_of(model.generate_until_multi_round([request]))[0]
    assert [c[0] for c in calls] == [0, 1, 2]
    first = calls[1][1][0]
    assert calls[2][1][0] == first and output.text == calls[2][1][1]
    # the second round saw the whole conversation so far
    conversation = [
        *doc_to_messages(docs[0]),
        {"role": "assistant", "content": first},
        {"role": "user", "content": "And the second?"},
    ]
    replay = results_of(model.generate_until([gen_request(0, gen_kwargs, lambda doc, **_: conversation)]))[0]
    assert replay.text == output.text
    # a function without round arguments gives one round
    single = Instance("generate_until_multi_round", (doc_to_messages, gen_kwargs, 0, TASK, SPLIT), 0, meta(0))
    plain = results_of(model.generate_until([gen_request(0, gen_kwargs)]))[0]
    assert results_of(model.generate_until_multi_round([single]))[0].text == plain.text


def test_video_frames_are_sampled_and_given_as_images(load: Callable[..., Any], tmp_path: Path) -> None:
    model = load("qwen2_vl")
    frames = [Image.new("RGB", (32, 32), (40 * i, 255 - 40 * i, 90)) for i in range(6)]
    folder = tmp_path / "frames"
    folder.mkdir()
    for i, frame in enumerate(frames):
        frame.save(folder / f"{i:03d}.png")
    model.max_num_frames = 3
    picked = [frames[i] for i in sample_frame_indices(6, 3)]
    assert sample_frame_indices(6, 3) == [0, 2, 5] and sample_frame_indices(2, 3) == [0, 1]
    model.task_dict = {TASK: {SPLIT: [{"video": frames}, {"video": str(folder)}, {"frames": picked}]}}

    def video(doc: dict[str, Any], **_: Any) -> Any:
        return [
            {
                "role": "user",
                "content": [{"type": "video", "url": doc["video"]}, {"type": "text", "text": "What?"}],
            }
        ]

    def as_images(doc: dict[str, Any], **_: Any) -> Any:
        parts: list[dict[str, Any]] = [{"type": "image", "url": f} for f in doc["frames"]]
        return [{"role": "user", "content": [*parts, {"type": "text", "text": "What?"}]}]

    gen_kwargs = {"max_new_tokens": 4}
    outputs = results_of(
        model.generate_until(
            [
                gen_request(0, gen_kwargs, video),
                gen_request(1, gen_kwargs, video),
                gen_request(2, gen_kwargs, as_images),
            ]
        )
    )
    assert outputs[0].text == outputs[1].text == outputs[2].text
    assert outputs[0].token_counts == outputs[1].token_counts == outputs[2].token_counts
    with pytest.raises(LmmsEvalError, match="frames"):
        load_video_frames(str(tmp_path / "clip.mp4"), 4)


def test_model_arguments(tiny_models: dict[str, str], images: list[str], tmp_path: Path) -> None:
    folder = tiny_models["qwen2_vl"]
    cls = get_model("qwen2_vl")
    with pytest.raises(ModelArgsError, match="max_pixels"):
        cls.create_from_arg_string(f"pretrained={folder},max_pixel=1000")
    with pytest.raises(ModelArgsError, match="torch_dtype"):
        cls.create_from_arg_string(f"pretrained={folder},torch_dtype=int8")
    with pytest.raises(ModelArgsError, match="pretrained"):
        get_model("huggingface").create_from_arg_string("")
    prompt_file = tmp_path / "system.txt"
    prompt_file.write_text("You answer with one colour word.", encoding="utf-8")
    small = cls.create_from_arg_string(
        f"pretrained={folder},max_pixels={56 * 56},torch_dtype=float32,device=cpu,"
        f"attn_implementation=eager,batch_size=2,system_prompt={prompt_file}"
    )
    assert small.batch_size == 2 and str(small.device) == "cpu" and small.model.dtype == torch.float32
    small.task_dict = {TASK: {SPLIT: [{"question": "Colour?", "images": [Image.new("RGB", (224, 224))]}]}}
    prompt = small._prompt_for(gen_request(0, {}), small.task_dict[TASK][SPLIT][0])
    assert "You answer with one colour word." in prompt.text
    # the pixel budget shrinks the 224x224 image to 56x56: a 4x4 patch grid
    encoded = small._encode([prompt.text], [prompt.images], "left")
    assert int(encoded["image_grid_thw"].prod()) == 16
    template_file = tmp_path / "template.jinja"
    template_file.write_text(
        "{% for m in messages %}[{{ m['role'] }}]{% for p in m['content'] %}{% if p['type'] == 'image' %}"
        "<|vision_start|><|image_pad|><|vision_end|>{% else %}{{ p['text'] }}{% endif %}{% endfor %}{% endfor %}"
        "{% if add_generation_prompt %}[assistant]{% endif %}",
        encoding="utf-8",
    )
    custom = get_model("hf").create_from_arg_string(
        {
            "pretrained": folder,
            "chat_template": str(template_file),
            "device_map": "cpu",
            "torch_dtype": "bfloat16",
        }
    )
    assert custom.model.dtype == torch.bfloat16
    custom.task_dict = small.task_dict
    prompt = custom._prompt_for(gen_request(0, {}), custom.task_dict[TASK][SPLIT][0])
    assert prompt.text == "[user]<|vision_start|><|image_pad|><|vision_end|>Colour?[assistant]"
    custom.task_dict = {TASK: {SPLIT: [{"question": "Colour?", "images": [images[0]]}]}}
    assert (
        results_of(custom.generate_until([gen_request(0, {"max_new_tokens": 2})]))[0].token_counts is not None
    )


def test_pretrained_demo_and_processor_errors(
    tiny_models: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(backend, "DEMO_FOLDER", tmp_path / "missing")
    with pytest.raises(ModelArgsError, match="demo checkpoint is missing"):
        backend.resolve_pretrained("demo", None, "m")
    monkeypatch.setattr(backend, "DEMO_FOLDER", Path(tiny_models["llava"]))
    assert backend.resolve_pretrained("demo", None, "m") == tiny_models["llava"]
    assert backend.resolve_pretrained(None, "org/model", "m") == "org/model"
    model = get_model("llava_hf").create_from_arg_string("pretrained=demo")
    assert type(model.model).__name__ == "LlavaForConditionalGeneration"
    # a folder without processor files cannot give a multimodal processor
    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy(Path(tiny_models["llava"]) / "config.json", bare / "config.json")
    with pytest.raises(LmmsEvalError, match="processor"):
        get_model("huggingface").create_from_arg_string(f"pretrained={bare}")


def test_ids_and_aliases_resolve() -> None:
    assert resolve_model("hf").model_id == resolve_model("transformers").model_id == "huggingface"
    for alias, model_id in [
        ("qwen2_5_vl_chat", "qwen2_5_vl"),
        ("llava_hf_chat", "llava_hf"),
        ("smolvlm2", "smolvlm"),
    ]:
        resolved = resolve_model(alias)
        assert resolved.model_id == model_id and resolved.model_type == "chat"
    for model_id in (
        "huggingface",
        "qwen2_vl",
        "qwen2_5_vl",
        "qwen3_vl",
        "llava_hf",
        "idefics3",
        "smolvlm",
        "internvl_hf",
    ):
        assert resolve_model(model_id).model_type == "chat"
        assert not get_model(model_id).is_simple
    for model_id in SIMPLE_IDS:
        assert resolve_model(model_id, force_simple=True).model_type == "simple"
        assert get_model(model_id, force_simple=True).is_simple
