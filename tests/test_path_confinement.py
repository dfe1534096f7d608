"""Every path a request names is confined to a server root, and which values are paths comes from
types: the run settings' fields and the typed constructor arguments of every registered backend."""

from __future__ import annotations

import inspect
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from fastapi import HTTPException
from fastapi.testclient import TestClient

from lmms_eval.api.model import constructor_hints
from lmms_eval.api.path_types import PathKind, looks_like_path, path_arg_of
from lmms_eval.api.registry import import_path
from lmms_eval.entrypoints.paths import (
    confine_request,
    declared_path_args,
    model_path_args,
    request_path_fields,
)
from lmms_eval.entrypoints.server_args import ServerArgs

# parts of an argument name that say it may name a file or folder
FILE_NAME_HINTS = (
    *("path", "file", "dir", "folder", "root", "cache", "pretrained", "model", "checkpoint", "ckpt"),
    *("tokenizer", "processor", "lora", "adapter", "peft", "log", "responses", "prompt", "template"),
)


def can_name_a_file(name: str, default: Any) -> bool:
    """The heuristic: a file-like argument name, or a default value that is a path."""
    if any(hint in name.lower() for hint in FILE_NAME_HINTS):
        return True
    return isinstance(default, os.PathLike) or (isinstance(default, str) and looks_like_path(default))


def untyped_file_arguments(cls: type) -> list[str]:
    """The constructor arguments of ``cls`` and of its base classes that can name a file but carry
    no path kind."""
    found = []
    for klass in cls.__mro__:
        if "__init__" not in vars(klass) or klass is object:
            continue
        hints = constructor_hints(klass, extras=True)
        for name, parameter in inspect.signature(klass.__init__).parameters.items():
            if name == "self" or parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
                continue
            if can_name_a_file(name, parameter.default) and path_arg_of(hints.get(name)) is None:
                found.append(name if klass is cls else f"{name} (of {klass.__name__})")
    return list(dict.fromkeys(found))


@dataclass(frozen=True)
class Backend:
    model_id: str
    force_simple: bool
    class_path: str

    @property
    def cls(self) -> type:
        return import_path(self.class_path)


def registered_backends() -> list[Backend]:
    """Every chat and simple class of every registered model (built-in and plugins)."""
    from lmms_eval.models import ensure_registry

    out = []
    for manifest in ensure_registry().manifests():
        if manifest.chat_class_path:
            out.append(Backend(manifest.model_id, False, manifest.chat_class_path))
        if manifest.simple_class_path:
            out.append(Backend(manifest.model_id, True, manifest.simple_class_path))
    return out


BACKENDS = registered_backends()


def test_every_backend_argument_that_can_name_a_file_is_path_typed() -> None:
    offenders = [
        f"{backend.model_id} ({backend.class_path}): {name}"
        for backend in BACKENDS
        for name in untyped_file_arguments(backend.cls)
    ]
    assert not offenders, "arguments that can name a file but have no path type:\n" + "\n".join(offenders)


def test_the_check_sees_an_untyped_file_argument() -> None:
    class Plugin:
        def __init__(
            self, weights_dir: str = "", limit: int = 1, extra: str = "/opt/x", name: str = "a"
        ) -> None:
            pass

    class Subclass(Plugin):
        def __init__(self, mode: str = "x", **kwargs: Any) -> None:
            super().__init__(**kwargs)

    assert untyped_file_arguments(Plugin) == ["weights_dir", "extra"]
    assert untyped_file_arguments(Subclass) == ["weights_dir (of Plugin)", "extra (of Plugin)"]
    assert {"dummy", "openai", "vllm", "from_log", "huggingface"} <= {b.model_id for b in BACKENDS}


@pytest.fixture
def roots(tmp_path: Path) -> ServerArgs:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP SECRET", encoding="utf-8")
    (outside / "x.yaml").write_text("task: evil\n", encoding="utf-8")
    for name in ("data", "ckpt", "out", "cache"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "inside.txt").write_text("fine", encoding="utf-8")
        (tmp_path / name / "link").symlink_to(outside)
    (tmp_path / "data" / "t.yaml").write_text("task: mine\n", encoding="utf-8")
    return ServerArgs(
        state_dir=str(tmp_path / "state"),
        data_root=str(tmp_path / "data"),
        checkpoint_root=str(tmp_path / "ckpt"),
        output_root=str(tmp_path / "out"),
        cache_dir=str(tmp_path / "cache"),
    )


def root_of(args: ServerArgs, kind: PathKind) -> Path:
    folders = {PathKind.CHECKPOINT: args.checkpoint_path(), PathKind.OUTPUT: args.output_path()}
    return folders.get(kind, args.cache_path() if kind is PathKind.CACHE else args.data_path())


def path_typed_arguments() -> Iterator[tuple[Backend, str, PathKind]]:
    for backend in BACKENDS:
        for name, hint in constructor_hints(backend.cls, extras=True).items():
            arg = path_arg_of(hint)
            if arg is not None:
                yield backend, name, arg.kind


def refused(args: ServerArgs, request: dict[str, Any]) -> str:
    with pytest.raises(HTTPException) as caught:
        confine_request(args, "job", request)
    assert caught.value.status_code == 422
    return str(caught.value.detail)


def test_every_path_typed_backend_argument_is_confined(roots: ServerArgs, tmp_path: Path) -> None:
    outside = tmp_path / "outside" / "secret.txt"
    checked = 0
    for backend, name, kind in path_typed_arguments():
        request = {"model": backend.model_id, "force_simple": backend.force_simple}
        for value in (str(outside), "../outside/secret.txt", "link/secret.txt"):
            given = {**request, "model_args": {name: value}}
            if kind is PathKind.NAME:  # never opened as a file: passed on as it is
                assert confine_request(roots, "job", given)["model_args"][name] == value
                continue
            detail = refused(roots, given)
            assert detail.startswith(f"model_args.{name}:") and "outside" in detail, (backend, detail)
            checked += 1
        if kind is not PathKind.NAME:
            done = confine_request(roots, "job", {**request, "model_args": {name: "inside.txt"}})
            assert done["model_args"][name] == str(root_of(roots, kind) / "inside.txt")
    assert checked >= 3 * 10


@pytest.mark.parametrize(
    ("model", "model_args"),
    [
        ("vllm", {"tokenizer": "/outside"}),  # taken by **engine_kwargs
        ("vllm", {"speculative_config": {"model": "../../etc"}}),  # nested
        ("no_such_model", {"pretrained": "/etc"}),  # a model that does not resolve
        (None, {"weights": "~/secret"}),
    ],
)
def test_undeclared_arguments_are_confined_as_checkpoints(
    roots: ServerArgs, model: str | None, model_args: dict[str, Any]
) -> None:
    key = next(iter(model_args))
    assert refused(roots, {"model": model, "model_args": model_args}).startswith(f"model_args.{key}:")


def test_a_refused_value_of_a_secret_named_key_is_not_shown(roots: ServerArgs) -> None:
    detail = refused(roots, {"model": "vllm", "model_args": {"hf_token": "/s3cr3t-value"}})
    assert detail.startswith("model_args.hf_token:") and "s3cr3t" not in detail


def test_values_that_are_not_paths_pass_unchanged(roots: ServerArgs) -> None:
    given = {
        "model": "vllm",
        "model_args": {
            "pretrained": "Qwen/Qwen2-VL-2B-Instruct",  # a Hub id
            "system_prompt": "Answer with one word.",
            "chat_template": "{% for m in messages %}{{ m.content }}{% endfor %}",
            "tokenizer": "Qwen/Qwen2-VL-2B-Instruct",
            "max_model_len": 4096,
        },
        "tasks": "demo_qa,mme*",
        "apply_chat_template": True,
    }
    done = confine_request(roots, "job", given)
    assert done["model_args"] == given["model_args"]
    assert done["tasks"] == "demo_qa,mme*" and done["apply_chat_template"] is True
    openai = {"model": "openai", "model_args": {"model": "/models/llama-3", "system_prompt": "Be brief."}}
    assert confine_request(roots, "job", openai)["model_args"] == openai["model_args"]  # a served name


def test_an_absolute_prompt_that_names_nothing_is_text(roots: ServerArgs, tmp_path: Path) -> None:
    """Qwen3's ``/no_think`` is a prompt, not a file: an absolute value naming nothing stays text,
    while one naming an existing file outside the roots is still refused."""
    given = {"model": "openai", "model_args": {"model": "m", "system_prompt": "/no_think"}}
    assert confine_request(roots, "job", given)["model_args"]["system_prompt"] == "/no_think"
    secret = str(tmp_path / "outside" / "secret.txt")
    detail = refused(roots, {"model": "openai", "model_args": {"model": "m", "system_prompt": secret}})
    assert detail.startswith("model_args.system_prompt:")
    relative = {"model": "openai", "model_args": {"model": "m", "system_prompt": "../../no_such_file"}}
    assert refused(roots, relative).startswith("model_args.system_prompt:")  # relative: never text


def test_request_fields_come_from_the_settings_types(roots: ServerArgs) -> None:
    kinds = {name: arg.kind for name, arg in request_path_fields().items()}
    assert kinds == {
        "output_path": PathKind.OUTPUT,
        "baseline": PathKind.OUTPUT,
        "use_cache": PathKind.CACHE,
        "include_path": PathKind.DATA,
        "dataset_root": PathKind.DATA,
        "apply_chat_template": PathKind.FILE_OR_TEXT,
        "tasks": PathKind.TASK,
    }
    for field in kinds:
        if field != "tasks":
            assert refused(roots, {field: "/etc"}).startswith(f"{field}:")
    assert refused(roots, {"tasks": "demo_qa,/etc/x.yaml"}).startswith("tasks:")
    assert refused(roots, {"output_path": "a\x00b"}).startswith("output_path:")  # a 422, not a 500


def test_arguments_passed_on_through_kwargs_keep_their_base_class_kind() -> None:
    from lmms_eval.models.simple.dummy import DummySimple

    class Wrapped(DummySimple):
        def __init__(self, flavour: str = "plain", **kwargs: Any) -> None:
            super().__init__(**kwargs)

    declared = declared_path_args(Wrapped)
    assert declared["flavour"] is None
    responses = declared["responses"]
    assert responses is not None and responses.kind is PathKind.DATA


def test_model_path_args_read_the_signature() -> None:
    assert model_path_args("no_such_model") is None
    dummy = model_path_args("dummy") or {}
    kinds = {name: arg.kind for name, arg in dummy.items() if arg is not None}
    assert kinds == {"responses": PathKind.DATA, "pretrained": PathKind.CHECKPOINT}
    assert dummy["response"] is None  # declared, not a path
    logs = (model_path_args("replay") or {})["logs"]  # an alias resolves too
    assert logs is not None and logs.kind is PathKind.OUTPUT


# -- over HTTP ------------------------------------------------------------------------------------


@pytest.fixture
def client(roots: ServerArgs) -> TestClient:
    from lmms_eval.entrypoints.server import create_app

    # no lifespan (no `with`): the scheduler does not start, so accepted jobs stay queued
    return TestClient(create_app(roots, token=None), base_url="http://127.0.0.1")


def queued(client: TestClient) -> int:
    return sum(client.get("/queue").json()["counts"].values())


SECRET = "outside/secret.txt"
# (case, the field the 422 names, request); "@/" stands for the test's temporary folder
REFUSED = [
    ("openai system_prompt", "model_args.system_prompt",
     {"model": "openai", "model_args": {"model": "m", "system_prompt": "@/" + SECRET}}),
    ("hf system_prompt", "model_args.system_prompt",
     {"model": "huggingface", "model_args": {"system_prompt": "../" + SECRET}}),
    ("dummy responses", "model_args.responses", {"model": "dummy", "model_args": {"responses": "@/" + SECRET}}),
    ("from_log logs", "model_args.logs", {"model": "from_log", "model_args": {"logs": "@/outside"}}),
    ("symlink", "model_args.responses", {"model": "dummy", "model_args": {"responses": "link/secret.txt"}}),
    ("dotdot", "model_args.responses",
     {"model": "dummy", "model_args": {"responses": "a/../../outside/secret.txt"}}),
    ("tasks yaml", "tasks", {"model": "dummy", "tasks": ["@/outside/x.yaml"]}),
    ("tasks symlink", "tasks", {"model": "dummy", "tasks": "link/x.yaml"}),
    ("tasks dotdot", "tasks", {"model": "dummy", "tasks": "demo_qa,../outside/x.yaml"}),
    ("include_path", "include_path", {"model": "dummy", "include_path": "@/outside"}),
    ("chat template", "apply_chat_template", {"model": "huggingface", "apply_chat_template": "@/" + SECRET}),
]  # fmt: skip


def _with_root(value: Any, tmp_path: Path) -> Any:
    if isinstance(value, str):
        return str(tmp_path) + value[1:] if value.startswith("@/") else value
    if isinstance(value, dict):
        return {k: _with_root(v, tmp_path) for k, v in value.items()}
    if isinstance(value, list):
        return [_with_root(v, tmp_path) for v in value]
    return value


@pytest.mark.parametrize(("case", "field", "body"), REFUSED, ids=[c for c, _, _ in REFUSED])
def test_paths_outside_the_roots_are_422_and_queue_nothing(
    client: TestClient, tmp_path: Path, case: str, field: str, body: dict[str, Any]
) -> None:
    body = {"tasks": "demo_qa", "limit": 1, **_with_root(body, tmp_path)}
    before = queued(client)
    response = client.post("/evaluate", json=body)
    assert response.status_code == 422, response.text
    detail = response.json()["detail"]
    assert detail.startswith(f"{field}:") and "outside" in detail, detail
    assert "TOP SECRET" not in response.text
    assert queued(client) == before


def test_the_same_values_inside_the_roots_are_accepted(client: TestClient, roots: ServerArgs) -> None:
    data, out = roots.data_path(), roots.output_path()
    (data / "prompt.txt").write_text("Be brief.", encoding="utf-8")
    (data / "r.jsonl").write_text('{"task": "demo_qa", "doc_id": 0, "response": "x"}\n', encoding="utf-8")
    (out / "old_run").mkdir()
    cases = [
        ({"model": "openai", "model_args": {"model": "m", "system_prompt": "prompt.txt"}}, "system_prompt"),
        ({"model": "dummy", "model_args": {"responses": str(data / "r.jsonl")}}, "responses"),
        ({"model": "from_log", "model_args": {"logs": "old_run"}}, "logs"),
    ]
    for body, key in cases:
        response = client.post("/evaluate", json={"tasks": "demo_qa", "limit": 1, **body})
        assert response.status_code == 200, response.text
        value = response.json()["request"]["model_args"][key]
        assert Path(value).is_absolute() and Path(value).exists(), value
    response = client.post("/evaluate", json={"model": "dummy", "tasks": ["demo_qa", "t.yaml"], "limit": 1})
    assert response.status_code == 200, response.text
    assert response.json()["request"]["tasks"] == f"demo_qa,{data / 't.yaml'}"
    assert queued(client) == len(cases) + 1
