"""Names and behaviour that model files and scripts written for the published package use (issue 28).

Facts from running the published 0.7.3: ``optional_import`` returns ``(value, found)``,
``Collator`` groups by ``group_fn``, sorts by ``sort_fn`` and restores input order, a plugin that
registers a built-in id replaces it, chat requests have 6 elements there, ``unwrap_generation_output``
returns ``TokenCounts``, ``parse_eval_args()`` unpacks as ``parser, args``, ``/health`` says
``healthy``, jobs carry ``position_in_queue`` and ``completed_at``.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import pytest

from lmms_eval.api.chat_layout import ChatLayoutError, chat_layout
from lmms_eval.api.instance import GenerationResult, Instance, TokenCounts, unwrap_generation_output
from lmms_eval.api.model import lmms
from lmms_eval.inference import run_requests
from lmms_eval.models import MODEL_REGISTRY_V2, isolated_registry
from lmms_eval.models.registry_v2 import ModelRegistrationError, ResolvedModel, register_model_class


def test_optional_import_and_require_package() -> None:
    from lmms_eval.imports import MissingOptionalDependencyError, optional_import, require_package

    dumps, found = optional_import("json", "dumps")
    assert found and dumps([1]) == "[1]"
    assert optional_import("no_such_module_xyz") == (None, False)
    assert optional_import("json", "no_such_attr", fallback=3) == (3, False)
    with pytest.raises(ImportError, match=r"pip install lmms_eval\[hf\]"):
        require_package("no_such_module_xyz", extras="hf", feature="tests")
    assert issubclass(MissingOptionalDependencyError, ImportError)


def test_media_encoder_and_gen_metrics() -> None:
    from PIL import Image

    from lmms_eval.models.model_utils.gen_metrics import (
        get_logged_metrics_history,
        log_metrics,
        reset_logged_metrics,
        summarize_logged_metrics,
    )
    from lmms_eval.models.model_utils.media_encoder import encode_image_to_data_url

    image = Image.new("RGB", (3, 2), "red")
    assert encode_image_to_data_url(image).startswith("data:image/png;base64,iVBOR")
    assert encode_image_to_data_url(image, image_format="jpeg").startswith("data:image/jpeg;base64,/9j/")
    reset_logged_metrics()
    log_metrics(2.0, 10, 5.0, {"x": 1})
    log_metrics(total_elapsed_time=1.0, total_gen_tokens=4, avg_speed=4.0)
    assert len(get_logged_metrics_history()) == 2
    summary = summarize_logged_metrics()
    assert summary["total_gen_tokens"] == 14 and summary["total_elapsed_time"] == 3.0
    assert summary["avg_speed"] == pytest.approx(14 / 3) and summary["avg_x"] == 1.0
    reset_logged_metrics()


def test_collator_groups_sorts_batches_and_restores_order() -> None:
    from lmms_eval.utils import Collator

    arr = [
        ("bb", {"t": 0}, 1),
        ("a", {"t": 1}, 2),
        ("ccc", {"t": 0}, 3),
        ("d", {"t": 1}, 4),
        ("e", {"t": 0}, 5),
    ]
    collator = Collator(arr, lambda x: (-len(x[0]), x[0]), group_fn=lambda x: x[1], grouping=True)
    batches = list(collator.get_batched(n=2))
    assert [[x[2] for x in b] for b in batches] == [[3, 1], [5], [2, 4]]
    answers = [x[2] * 10 for b in batches for x in b]
    assert collator.get_original(answers) == [10, 20, 30, 40, 50] and len(collator) == 5
    whole = Collator(arr, lambda x: x[0])
    assert [x[2] for b in whole.get_batched(n=0) for x in b] == [2, 1, 3, 4, 5]


class _PluginSimple(lmms):
    def generate_until(self, requests: list[Instance]) -> list[str]:
        return ["plugin" for _ in requests]


def test_a_plugin_replaces_a_builtin_id_with_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="lmms_eval")
    with isolated_registry(reload_plugins=False):
        register_model_class("qwen2_vl", _PluginSimple)
        resolved = MODEL_REGISTRY_V2.resolve("qwen2_vl")
        assert (
            resolved.model_type == "simple" and MODEL_REGISTRY_V2.get_model_class("qwen2_vl") is _PluginSimple
        )
        register_model_class("qwen2_5_vl_chat", _PluginSimple)  # a built-in alias becomes the plugin's id
        assert MODEL_REGISTRY_V2.get_model_class("qwen2_5_vl_chat") is _PluginSimple
        assert MODEL_REGISTRY_V2.resolve("qwen2_5_vl").model_type == "chat"  # the built-in stays
        with pytest.raises(ModelRegistrationError):  # a plugin's own id is still protected
            register_model_class("qwen2_vl", type("Other", (_PluginSimple,), {}))
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert sum("qwen2_vl'" in w and "replaced" in w for w in warnings) == 1
    assert sum("qwen2_5_vl_chat" in w for w in warnings) == 1
    assert MODEL_REGISTRY_V2.resolve("qwen2_vl").class_path.startswith("lmms_eval.models.chat.qwen2_vl")


class _GuideChat(lmms):
    is_simple = False

    def generate_until(self, requests: list[Instance]) -> list[str]:
        out = []
        for request in requests:
            doc_to_messages, gen_kwargs, doc_id, task, split = request.args  # noqa: RUF059
            out.append(f"guide:{doc_id}")
        return out


class _PublishedChat(lmms):
    is_simple = False

    def generate_until(self, requests: list[Instance]) -> list[str]:
        out = []
        for request in requests:
            ctx, doc_to_messages, gen_kwargs, doc_id, task, split = request.args  # noqa: RUF059
            out.append(f"published:{doc_id}:{ctx!r}")
        return out


class _Mislabelled(_PublishedChat):
    chat_request_layout = "guide"


class _BothLayouts(lmms):
    """One generate_until for simple (6 names, generation kwargs second) and chat (5) requests."""

    def generate_until(self, requests: list[Instance]) -> list[str]:
        out = []
        for request in requests:
            if len(request.args) == 6:
                contexts, gen_kwargs, doc_to_visual, doc_id, task, split = request.args  # noqa: RUF059
            else:
                doc_to_messages, gen_kwargs, doc_id, task, split = request.args  # noqa: RUF059
            out.append(f"both:{doc_id}")
        return out


def test_a_simple_unpack_is_not_read_as_the_published_chat_layout() -> None:
    assert chat_layout(_BothLayouts) == "guide"
    requests = _chat_requests()
    run_requests(_BothLayouts(), requests, show_progress=False)
    assert requests[0].resps == ["both:0"]


def _chat_requests() -> list[Instance]:
    meta = {"task": "t", "doc_id": 0, "split": "test"}
    return [Instance("generate_until", (lambda doc: [], {"until": []}, 0, "t", "test"), 0, meta)]


def test_chat_models_get_the_layout_they_unpack() -> None:
    assert chat_layout(_GuideChat) == "guide" and chat_layout(_PublishedChat) == "published"
    for model, expected in ((_GuideChat(), "guide:0"), (_PublishedChat(), "published:0:''")):
        requests = _chat_requests()
        run_requests(model, requests, show_progress=False)
        assert requests[0].resps == [expected]
        assert len(requests[0].arguments) == 5  # the stored request keeps the guide's layout


def test_a_layout_mismatch_is_one_clear_error() -> None:
    with pytest.raises(
        ChatLayoutError, match=r"given the guide layout \(doc_to_messages, gen_kwargs"
    ) as info:
        run_requests(_Mislabelled(), _chat_requests(), show_progress=False)
    assert "chat_request_layout = 'published'" in str(info.value)
    bad = type("Bad", (_GuideChat,), {"chat_request_layout": "six"})
    with pytest.raises(ChatLayoutError, match="allowed: 'guide'"):
        chat_layout(bad)


def test_unwrap_generation_output_returns_token_counts() -> None:
    assert unwrap_generation_output(("t", {"input_tokens": 3})) == ("t", TokenCounts(input_tokens=3))
    assert unwrap_generation_output(GenerationResult("g", TokenCounts(1, 2))) == ("g", TokenCounts(1, 2))
    assert unwrap_generation_output("plain") == ("plain", None)
    assert unwrap_generation_output((-1.5, True)) == ((-1.5, True), None)


def test_validate_model_class_and_job_scheduler_names() -> None:
    from lmms_eval.entrypoints.job_scheduler import JobScheduler
    from lmms_eval.entrypoints.scheduler import Scheduler
    from lmms_eval.models.registry_v2 import ModelRegistryV2, validate_model_class

    chat = ResolvedModel("x", "x", "chat", "m.X")
    validate_model_class(_GuideChat, chat)
    with pytest.raises(TypeError, match="is_simple"):
        validate_model_class(_PluginSimple, chat)
    with pytest.raises(TypeError, match="not a subclass"):
        ModelRegistryV2._validate_model_class(int, chat)
    assert JobScheduler is Scheduler


def test_parse_eval_args_unpacks_as_published(monkeypatch: pytest.MonkeyPatch) -> None:
    from lmms_eval.__main__ import parse_eval_args

    monkeypatch.setattr(
        sys, "argv", ["lmms-eval", "--model", "dummy", "--tasks", "x", "--max_tokens", "1000"]
    )
    parser, args = parse_eval_args()
    assert args.max_tokens == 1000 and parser.parse_args(["--model", "m", "--tasks", "t"]).model == "m"
    assert parse_eval_args(["--model", "dummy", "--tasks", "x"]).max_tokens is None


def test_the_server_speaks_the_published_fields(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from lmms_eval.entrypoints.server import create_app
    from lmms_eval.entrypoints.server_args import ServerArgs

    app = create_app(
        ServerArgs(state_dir=str(tmp_path / "state"), output_root=str(tmp_path / "out"), devices=["0"])
    )
    client = TestClient(app, base_url="http://127.0.0.1")  # no lifespan: nothing runs the job
    assert client.get("/health").json()["status"] == "healthy"
    body: dict[str, Any] = {"model": "dummy", "tasks": ["demo_qa"], "limit": 2, "output_dir": "mine"}
    job = client.post("/evaluate", json=body)
    assert job.status_code == 200, job.text
    info = job.json()
    assert info["position_in_queue"] == info["position"] == 0 and info["completed_at"] is None
    assert info["request"]["output_path"].endswith("mine")
    too_many = client.post("/evaluate", json={"model": "dummy", "tasks": ["demo_qa"], "num_gpus": 2})
    assert too_many.status_code == 422 and "num_gpus" in too_many.text
    merge = client.post("/merge", json={"checkpoint_path": "c", "output_path": "o", "checkpoint_type": "ema"})
    assert merge.status_code != 422 or "checkpoint_type" not in merge.text
    wrong = client.post("/merge", json={"checkpoint_path": "c", "output_path": "o", "checkpoint_type": "x"})
    assert wrong.status_code == 422 and "checkpoint_type" in wrong.text


def test_merge_without_output_path_writes_under_the_output_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fastapi.testclient import TestClient

    import lmms_eval.entrypoints.merge as merge
    from lmms_eval.entrypoints.server import create_app
    from lmms_eval.entrypoints.server_args import ServerArgs

    calls: list[tuple[str, str]] = []
    monkeypatch.setattr(merge, "merge_checkpoint", lambda c, o, base_model=None: calls.append((c, o)) or o)
    out = tmp_path / "out"
    app = create_app(ServerArgs(state_dir=str(tmp_path / "state"), output_root=str(out), devices=["0"]))
    client = TestClient(app, base_url="http://127.0.0.1")
    body = {"checkpoint_path": "run1/step_100", "output_path": None, "checkpoint_type": "regular"}
    merged = client.post("/merge", json=body)  # the published client's body when no output is given
    assert merged.status_code == 200, merged.text
    assert calls == [(str(out.resolve() / "run1" / "step_100"), str(out.resolve() / "merged" / "step_100"))]
    assert merged.json()["output_path"] == calls[0][1]


def test_listings_are_names_unless_detail_is_asked(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from lmms_eval.entrypoints.server import create_app
    from lmms_eval.entrypoints.server_args import ServerArgs

    app = create_app(ServerArgs(state_dir=str(tmp_path / "state"), output_root=str(tmp_path / "out")))
    client = TestClient(app, base_url="http://127.0.0.1")
    models = client.get("/models").json()["models"]
    assert "dummy" in models and all(isinstance(m, str) for m in models)
    detailed = client.get("/models", params={"detail": "1"}).json()["models"]
    assert [m["model_id"] for m in detailed] == models and "aliases" in detailed[0]


def test_bundled_tasks_answer_to_the_published_helper_names() -> None:
    import importlib

    ocrbench = importlib.import_module("lmms_eval.tasks.ocrbench.utils")
    mmmu = importlib.import_module("lmms_eval.tasks.mmmu.utils")
    pope = importlib.import_module("lmms_eval.tasks.pope.utils")
    rec = importlib.import_module("lmms_eval.tasks.refcoco.utils_rec")
    refcoco = importlib.import_module("lmms_eval.tasks.refcoco.utils")
    assert ocrbench.ocrbench_doc_to_text is ocrbench.doc_to_text
    assert ocrbench.ocrbench_process_results is ocrbench.process_results
    assert mmmu.mmmu_doc_to_text is mmmu.doc_to_text and mmmu.mmmu_process_results is mmmu.process_results
    assert pope.pope_doc_to_text({"question": "Is it red?"}) == "Is it red?"
    assert rec.refcoco_bbox_rec_process_result is refcoco.rec_process_results


# Published references a bundled task does not answer to, with the reason: ours has no function in
# that role (the behaviour is elsewhere), so an alias would not do what the published one does.
UNANSWERED = {
    "mme/utils.mme_process_results": "ours scores the run as one batch (process_results_batch)",
    "mmau/utils.doc_to_choice": "ours is a generation task with no choice list",
    "air_bench/utils.air_bench_process_results_chat": "ours is judge-scored (no per-doc process_results)",
    "air_bench/utils.air_bench_doc_to_choice_foundation": "ours generates; no choice list",
    "clotho_aqa/utils.clotho_aqa_v2_process_results": "ours scores with built-in metrics",
    "vsibench/utils.vsibench_doc_to_messages": "ours builds messages from doc_to_text/visual",
    "vsibench/utils.process_docs": "ours keeps the documents as they are",
    "activitynetqa/utils.activitynetqa_doc_to_answer": "ours names the column (doc_to_target: answer)",
    "videommmu/utils.videommmu_doc_to_answer": "ours names the column (doc_to_target: answer)",
    "perceptiontest/val/utils.perceptiontest_val_doc_to_answer": "ours names the column (answer_id)",
}
# the task folders that carry the published names (those bundled when this test was written); a
# folder added later joins the list once its utils answer to the published names
COVERED = frozenset(
    [
        "activitynetqa",
        "ai2d",
        "air_bench",
        "charades_sta",
        "chartqa",
        "clotho_aqa",
        "coco_cap",
        "common_voice_15",
        "countbenchqa",
        "covost2",
        "cv_bench",
        "docvqa",
        "egoschema",
        "fleurs",
        "flickr30k",
        "gigaspeech",
        "gqa",
        "hallusion_bench",
        "hrbench",
        "infovqa",
        "librispeech",
        "longvideobench",
        "lvbench",
        "mathvision",
        "mathvista",
        "mlvu",
        "mmau",
        "mmbench",
        "mme",
        "mmmu",
        "mmmu_pro",
        "mmstar",
        "mmvp",
        "mvbench",
        "naturalbench",
        "nextqa",
        "nocaps",
        "ocrbench",
        "ok_vqa",
        "perceptiontest",
        "pope",
        "realworldqa",
        "refcoco",
        "scienceqa",
        "screenspot",
        "seedbench",
        "stvqa",
        "tedlium",
        "textvqa",
        "tomato",
        "videomme",
        "videommmu",
        "vizwiz_vqa",
        "vocalsound",
        "vqav2",
        "vsibench",
        "vstar_bench",
        "worldsense",
        "zerobench",
    ]
)
ROLES = ("doc_to_visual", "doc_to_audio", "doc_to_text", "doc_to_messages", "doc_to_choice", "doc_to_target",
         "process_docs", "process_results")  # fmt: skip


@pytest.mark.compat
def test_published_task_yaml_functions_resolve_in_our_package() -> None:
    """Every ``!function`` of a prompt or scoring role in the published YAML of a task we bundle."""
    import importlib
    import subprocess

    from published_venv import published_python

    from lmms_eval.tasks._yaml import FunctionRef, load_yaml_config

    python = published_python()
    code = "import lmms_eval, os; print(os.path.dirname(lmms_eval.__file__))"
    package = subprocess.run([str(python), "-c", code], capture_output=True, text=True, cwd="/", check=True)
    published = Path(package.stdout.strip()) / "tasks"
    ours = Path(__file__).resolve().parents[1] / "lmms_eval" / "tasks"
    names = ((load_yaml_config(y).get("task"), y.parent.name) for y in ours.glob("*/*.yaml"))
    bundled = {name: folder for name, folder in names if isinstance(name, str)}
    missing, checked = [], 0
    for path in sorted(published.glob("*/**/*.yaml")):
        try:
            config = load_yaml_config(path)
        except Exception:  # a published YAML we do not read (its own loader may)
            continue
        task = config.get("task")
        folder_name = path.relative_to(published).parts[0]
        if not isinstance(task, str) or bundled.get(task) != folder_name or folder_name not in COVERED:
            continue
        for role in ROLES:
            ref = config.get(role)
            if not isinstance(ref, FunctionRef):
                continue
            folder = Path(ref.base_dir).resolve().relative_to(published.resolve()).as_posix()
            module, _, name = ref.name.rpartition(".")
            key = f"{folder}/{module}.{name}"
            checked += 1
            try:
                found = hasattr(
                    importlib.import_module(f"lmms_eval.tasks.{folder.replace('/', '.')}.{module}"), name
                )
            except ImportError:
                found = False
            if not found and key not in UNANSWERED:
                missing.append(f"{task}: {role}: {key}")
    assert checked > 300 and not missing, "\n".join(sorted(set(missing)))
