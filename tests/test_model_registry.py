"""ModelManifest, ModelRegistryV2, the built-in models and the read-only ``lmms_eval.models`` views."""

from __future__ import annotations

import logging
import re
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import lmms_eval.models as models
from lmms_eval.api.registry import ReadOnlyViewError
from lmms_eval.errors import LmmsEvalError, ModelNotFoundError
from lmms_eval.models import (
    AVAILABLE_CHAT_TEMPLATE_MODELS,
    AVAILABLE_SIMPLE_MODELS,
    MODEL_ALIASES,
    MODEL_REGISTRY_V2,
    get_model,
    isolated_registry,
    resolve_model,
)
from lmms_eval.models.chat.dummy import DummyChat
from lmms_eval.models.registry_v2 import (
    INSTALL_API,
    INSTALL_HF,
    INSTALL_VLLM,
    ModelClassError,
    ModelManifest,
    ModelRegistrationError,
    ModelRegistryV2,
)
from lmms_eval.models.simple.dummy import DummySimple

MODEL_SOURCE = """
from lmms_eval.api.model import lmms


class SimpleOne(lmms):
    is_simple = True

    def generate_until(self, requests):
        return ["simple" for _ in requests]


class ChatOne(lmms):
    is_simple = False

    def generate_until(self, requests):
        return ["chat" for _ in requests]


class NotAModel:
    is_simple = False
"""


@pytest.fixture
def model_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A fresh importable package ``<name>`` with ``<name>.impl`` (models) and ``<name>.needs_dep``."""
    name = f"regpkg_{uuid.uuid4().hex[:12]}"
    package = tmp_path / name
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "impl.py").write_text(MODEL_SOURCE)
    (package / "needs_dep.py").write_text("import lmms_eval_test_missing_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[module]


@pytest.fixture
def global_registry() -> Iterator[None]:
    with isolated_registry():
        yield


# -- ModelManifest ---------------------------------------------------------------------------------


def test_manifest_normalises_aliases() -> None:
    manifest = ModelManifest("m", chat_class_path="pkg.mod.C", aliases="m_old")  # type: ignore[arg-type]
    assert manifest.aliases == ("m_old",)
    manifest = ModelManifest("m", simple_class_path="pkg.mod:C", aliases=["a", "b", "a", "m"])  # type: ignore[arg-type]
    assert manifest.aliases == ("a", "b")
    with pytest.raises(AttributeError):
        manifest.model_id = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"model_id": ""}, "non-empty"),
        ({"model_id": "m"}, "needs a simple_class_path or a chat_class_path"),
        ({"model_id": "m", "chat_class_path": "NoModule"}, "not 'package.module.Class'"),
        ({"model_id": "m", "simple_class_path": "pkg.mod C"}, "simple_class_path"),
        ({"model_id": "m", "chat_class_path": "pkg.C", "aliases": ("",)}, "aliases"),
    ],
)
def test_manifest_validation(kwargs: dict[str, object], fragment: str) -> None:
    with pytest.raises(ModelRegistrationError, match=fragment):
        ModelManifest(**kwargs)  # type: ignore[arg-type]


# -- resolution -----------------------------------------------------------------------------------


def both_kinds() -> ModelRegistryV2:
    registry = ModelRegistryV2()
    registry.register_manifest(
        ModelManifest("both", simple_class_path="pkg.simple.S", chat_class_path="pkg.chat.C", aliases=("b",))
    )
    registry.register_manifest(ModelManifest("simple_only", simple_class_path="pkg.simple.Only"))
    registry.register_manifest(ModelManifest("chat_only", chat_class_path="pkg.chat.Only"))
    return registry


@pytest.mark.parametrize(
    ("name", "force_simple", "expected"),
    [
        ("both", False, ("both", "chat", "pkg.chat.C")),
        ("both", True, ("both", "simple", "pkg.simple.S")),
        ("b", False, ("both", "chat", "pkg.chat.C")),
        ("b", True, ("both", "simple", "pkg.simple.S")),
        ("simple_only", False, ("simple_only", "simple", "pkg.simple.Only")),
        ("simple_only", True, ("simple_only", "simple", "pkg.simple.Only")),
        ("chat_only", True, ("chat_only", "chat", "pkg.chat.Only")),
    ],
)
def test_resolve_prefers_chat_unless_force_simple(
    name: str, force_simple: bool, expected: tuple[str, str, str]
) -> None:
    resolved = both_kinds().resolve(name, force_simple=force_simple)
    assert (resolved.model_id, resolved.model_type, resolved.class_path) == expected
    assert resolved.requested_name == name
    assert resolved.is_simple == (expected[1] == "simple")


def test_unknown_model_suggests_close_names() -> None:
    registry = both_kinds()
    with pytest.raises(ModelNotFoundError, match=r"unknown model 'bothh'.*Did you mean 'both'"):
        registry.resolve("bothh")
    assert "b" in registry and "both" in registry and "nope" not in registry
    assert registry.list_model_names() == ["b", "both", "chat_only", "simple_only"]
    assert registry.list_canonical_model_ids() == ["both", "chat_only", "simple_only"]
    assert registry.get_manifest("b").model_id == "both"


# -- registration conflicts ----------------------------------------------------------------------------


def test_manifests_for_one_id_merge() -> None:
    registry = ModelRegistryV2()
    registry.register_manifest(ModelManifest("m", simple_class_path="pkg.s.S", aliases=("m1",)))
    registry.register_manifest(ModelManifest("m", chat_class_path="pkg.c.C", aliases=("m2",)))
    registry.register_manifest(ModelManifest("m", chat_class_path="pkg.c.C"))  # same path: no conflict
    manifest = registry.get_manifest("m2")
    assert (manifest.simple_class_path, manifest.chat_class_path) == ("pkg.s.S", "pkg.c.C")
    assert manifest.aliases == ("m1", "m2")


def test_conflicting_class_path_raises_unless_overwrite() -> None:
    registry = ModelRegistryV2()
    registry.register_manifest(ModelManifest("m", chat_class_path="pkg.c.C"))
    with pytest.raises(ModelRegistrationError, match=re.escape("already has chat class 'pkg.c.C'")):
        registry.register_manifest(ModelManifest("m", chat_class_path="pkg.c.Other"))
    assert registry.resolve("m").class_path == "pkg.c.C"
    registry.register_manifest(ModelManifest("m", chat_class_path="pkg.c.Other"), overwrite=True)
    assert registry.resolve("m").class_path == "pkg.c.Other"
    assert isinstance(ModelRegistrationError("x"), ValueError)


def test_conflicting_alias_raises_unless_overwrite() -> None:
    registry = ModelRegistryV2()
    registry.register_manifest(ModelManifest("a", chat_class_path="pkg.a.A", aliases=("shared",)))
    with pytest.raises(
        ModelRegistrationError, match="alias 'shared' of model 'b' already points to model 'a'"
    ):
        registry.register_manifest(ModelManifest("b", chat_class_path="pkg.b.B", aliases=("shared",)))
    assert "b" not in registry  # nothing half-registered
    registry.register_manifest(
        ModelManifest("b", chat_class_path="pkg.b.B", aliases=("shared",)), overwrite=True
    )
    assert registry.resolve("shared").model_id == "b"
    assert registry.get_manifest("a").aliases == ()  # the alias moved


def test_alias_and_model_id_collisions() -> None:
    registry = ModelRegistryV2()
    registry.register_manifest(ModelManifest("a", chat_class_path="pkg.a.A", aliases=("old_a",)))
    with pytest.raises(ModelRegistrationError, match="alias 'a' of model 'b' is already a registered model"):
        registry.register_manifest(ModelManifest("b", chat_class_path="pkg.b.B", aliases=("a",)))
    with pytest.raises(ModelRegistrationError, match="model 'old_a' is already an alias of model 'a'"):
        registry.register_manifest(ModelManifest("old_a", chat_class_path="pkg.o.O"))
    registry.register_manifest(ModelManifest("old_a", chat_class_path="pkg.o.O"), overwrite=True)
    assert registry.resolve("old_a").class_path == "pkg.o.O"
    assert registry.get_manifest("a").aliases == ()
    # overwrite: a model id taken as an alias stops being a model, with its own aliases
    registry.register_manifest(ModelManifest("a", chat_class_path="pkg.a.A", aliases=("a2",)))
    assert registry.resolve("a2").model_id == "a"
    registry.register_manifest(ModelManifest("c", chat_class_path="pkg.c.C", aliases=("a",)), overwrite=True)
    assert registry.resolve("a").model_id == "c"
    assert registry.list_model_names() == ["a", "c", "old_a"]


def test_snapshot_and_restore() -> None:
    registry = both_kinds()
    snapshot = registry.snapshot()
    registry.register_manifest(ModelManifest("later", chat_class_path="pkg.l.L", aliases=("b2",)))
    registry.register_manifest(ModelManifest("both", chat_class_path="pkg.chat.New"), overwrite=True)
    registry.restore(snapshot)
    assert "later" not in registry and "b2" not in registry
    assert registry.resolve("both").class_path == "pkg.chat.C"


# -- class loading ---------------------------------------------------------------------------------------


def test_class_is_imported_only_by_get_model_class(model_package: str) -> None:
    registry = ModelRegistryV2()
    registry.register_manifest(
        ModelManifest(
            "lazy",
            simple_class_path=f"{model_package}.impl.SimpleOne",
            chat_class_path=f"{model_package}.impl:ChatOne",
        )
    )
    registry.resolve("lazy")
    registry.resolve("lazy", force_simple=True)
    registry.list_model_names()
    assert f"{model_package}.impl" not in sys.modules
    chat = registry.get_model_class("lazy")
    assert f"{model_package}.impl" in sys.modules
    assert chat.__name__ == "ChatOne" and chat.is_simple is False
    assert registry.get_model_class("lazy", force_simple=True).__name__ == "SimpleOne"


def test_is_simple_must_match_the_registration(model_package: str) -> None:
    registry = ModelRegistryV2()
    registry.register_manifest(ModelManifest("wrong_chat", chat_class_path=f"{model_package}.impl.SimpleOne"))
    registry.register_manifest(
        ModelManifest("wrong_simple", simple_class_path=f"{model_package}.impl.ChatOne")
    )
    with pytest.raises(ModelClassError) as info:
        registry.get_model_class("wrong_chat")
    message = str(info.value)
    assert "registered as a chat model but has is_simple=True" in message
    assert "is_simple = False" in message  # says how to fix it
    with pytest.raises(ModelClassError, match="registered as a simple model but has is_simple=False"):
        registry.get_model_class("wrong_simple")


@pytest.mark.parametrize(
    ("path", "fragment"),
    [
        ("{pkg}.impl.NotAModel", "is not a subclass of lmms_eval.api.model.lmms"),
        ("{pkg}.impl.Missing", "does not exist"),
        ("{pkg}.no_such_module.Model", "module '{pkg}.no_such_module' of .* does not exist"),
        ("{pkg}.needs_dep.Model", "could not be imported.*lmms_eval_test_missing_dependency"),
    ],
)
def test_bad_classes_give_clear_errors(model_package: str, path: str, fragment: str) -> None:
    registry = ModelRegistryV2()
    registry.register_manifest(ModelManifest("bad", chat_class_path=path.format(pkg=model_package)))
    with pytest.raises(ModelClassError, match=fragment.format(pkg=model_package)) as info:
        registry.get_model_class("bad")
    assert isinstance(info.value, LmmsEvalError)


def test_registered_class_objects_need_no_import() -> None:
    from lmms_eval.models.registry_v2 import register_model_class

    class Local(DummyChat):
        pass

    registry = ModelRegistryV2()
    manifest = register_model_class("local", Local, aliases=("loc",), registry=registry)
    assert manifest.chat_class_path is not None and "<locals>" in manifest.chat_class_path
    assert registry.get_model_class("loc") is Local


# -- lmms_eval.models ------------------------------------------------------------------------------------


def test_builtin_dummy_resolution(global_registry: None) -> None:
    assert get_model("dummy") is DummyChat
    assert get_model("dummy", force_simple=True) is DummySimple
    assert get_model("mock") is DummyChat  # an alias from MODEL_ALIASES
    resolved = resolve_model("dummy_video_reader", force_simple=True)
    assert (resolved.model_id, resolved.class_path) == (
        "dummy",
        "lmms_eval.models.simple.dummy.DummySimple",
    )


def test_every_builtin_entry_resolves_to_an_importable_class(global_registry: None) -> None:
    for table, force_simple in ((AVAILABLE_SIMPLE_MODELS, True), (AVAILABLE_CHAT_TEMPLATE_MODELS, False)):
        for model_id in table:
            cls = get_model(model_id, force_simple=force_simple)
            assert cls.is_simple is force_simple, model_id


def test_builtin_tables_are_views_of_the_registry(global_registry: None) -> None:
    assert AVAILABLE_SIMPLE_MODELS["dummy"] == "DummySimple"
    assert AVAILABLE_CHAT_TEMPLATE_MODELS["dummy"] == "DummyChat"
    assert "from_log" in AVAILABLE_SIMPLE_MODELS and "from_log" not in AVAILABLE_CHAT_TEMPLATE_MODELS
    assert MODEL_ALIASES["dummy"] == ("dummy_video_reader", "mock")
    assert "idefics3" not in MODEL_ALIASES  # ids without aliases are left out
    for model_id in BUILTIN_MODELS_IDS:
        assert model_id in AVAILABLE_SIMPLE_MODELS or model_id in AVAILABLE_CHAT_TEMPLATE_MODELS


BUILTIN_MODELS_IDS = [m.model_id for m in models.BUILTIN_MODELS]


@pytest.mark.parametrize("view", [AVAILABLE_SIMPLE_MODELS, AVAILABLE_CHAT_TEMPLATE_MODELS, MODEL_ALIASES])
def test_writing_to_a_view_says_how_to_register(view: object) -> None:
    writes = [
        lambda v: v.__setitem__("late_model", "Late"),
        lambda v: v.__delitem__("dummy"),
        lambda v: v.update({"late_model": "Late"}),
        lambda v: v.pop("dummy"),
        lambda v: v.clear(),
        lambda v: v.setdefault("late_model", "Late"),
    ]
    for write in writes:
        with pytest.raises(ReadOnlyViewError) as info:
            write(view)
        message = str(info.value)
        assert "read-only" in message and "register_model" in message and "register_manifest" in message
        assert "\n" not in message
        assert isinstance(info.value, TypeError)
    assert "dummy" in view  # type: ignore[operator]


def test_registrations_show_in_the_views(global_registry: None, model_package: str) -> None:
    assert "late_model" not in models.ensure_registry()
    MODEL_REGISTRY_V2.register_manifest(
        ModelManifest(
            "late_model",
            simple_class_path=f"{model_package}.impl.SimpleOne",
            chat_class_path=f"{model_package}.impl:ChatOne",
            aliases=("late",),
        )
    )
    assert AVAILABLE_SIMPLE_MODELS["late_model"] == f"{model_package}.impl.SimpleOne"
    assert AVAILABLE_CHAT_TEMPLATE_MODELS["late_model"] == f"{model_package}.impl:ChatOne"
    assert MODEL_ALIASES["late_model"] == ("late",)
    assert get_model("late").__name__ == "ChatOne"
    assert get_model("late_model", force_simple=True).__name__ == "SimpleOne"
    MODEL_REGISTRY_V2.register_alias("dummy_later_alias", "dummy")
    assert MODEL_ALIASES["dummy"] == ("dummy_video_reader", "mock", "dummy_later_alias")
    assert get_model("dummy_later_alias") is DummyChat


def test_a_builtin_id_is_taken_with_one_warning(
    global_registry: None, model_package: str, caplog: pytest.LogCaptureFixture
) -> None:
    """As in the published package a plugin may replace a built-in id, but never silently (issue 28)."""
    caplog.set_level(logging.WARNING, logger="lmms_eval")
    MODEL_REGISTRY_V2.register_manifest(
        ModelManifest("dummy", chat_class_path=f"{model_package}.impl:ChatOne")
    )
    warnings = [r.getMessage() for r in caplog.records if "'dummy' is replaced" in r.getMessage()]
    assert len(warnings) == 1 and f"{model_package}.impl:ChatOne" in warnings[0]
    assert get_model("dummy").__name__ == "ChatOne"
    assert MODEL_REGISTRY_V2.get_manifest("dummy").simple_class_path is None  # replaced whole
    with pytest.raises(ModelRegistrationError, match="alias 'mock' of model 'mine' already points"):
        MODEL_REGISTRY_V2.register_manifest(
            ModelManifest("mine", chat_class_path=f"{model_package}.impl:ChatOne", aliases=("mock",))
        )


def test_install_hints_are_part_of_the_manifests(global_registry: None, model_package: str) -> None:
    hints = {m.model_id: m.install_hint for m in MODEL_REGISTRY_V2.manifests()}
    assert hints["huggingface"] == INSTALL_HF == "pip install 'lmms_eval[hf]'"
    assert hints["openai"] == hints["async_openai"] == INSTALL_API == "pip install 'lmms_eval[api]'"
    assert hints["vllm"] == INSTALL_VLLM == "pip install vllm"
    assert hints["dummy"] is None
    MODEL_REGISTRY_V2.register_manifest(
        ModelManifest(
            "needs_extra", chat_class_path=f"{model_package}.needs_dep.Model", install_hint=INSTALL_HF
        )
    )
    with pytest.raises(ModelClassError) as info:
        get_model("needs_extra")
    assert "lmms_eval_test_missing_dependency" in str(info.value)
    assert str(info.value).endswith("Install what it needs with: pip install 'lmms_eval[hf]'")


def test_class_objects_collide_unless_overwrite(global_registry: None) -> None:
    from lmms_eval.models.registry_v2 import register_model_class

    class First(DummyChat):
        pass

    class Second(DummyChat):
        pass

    register_model_class("objects", First)
    register_model_class("objects", First)  # the same class again is no collision
    with pytest.raises(ModelRegistrationError, match=r"already has chat class .*First.*got .*Second"):
        register_model_class("objects", Second)
    assert get_model("objects") is First
    register_model_class("objects", Second, overwrite=True)
    assert get_model("objects") is Second


def test_isolated_registry_restores_everything(model_package: str) -> None:
    before_names = models.ensure_registry().list_model_names()
    before_views = (dict(AVAILABLE_SIMPLE_MODELS), dict(MODEL_ALIASES))
    assert MODEL_REGISTRY_V2.loaded
    with isolated_registry() as registry:
        assert registry is MODEL_REGISTRY_V2
        assert not registry.loaded  # plugins load again inside
        registry.register_manifest(
            ModelManifest("temp_model", simple_class_path=f"{model_package}.impl.SimpleOne", aliases=("tmp",))
        )
        assert get_model("tmp").__name__ == "SimpleOne"
        assert registry.loaded
    assert MODEL_REGISTRY_V2.loaded
    assert models.ensure_registry().list_model_names() == before_names
    assert (dict(AVAILABLE_SIMPLE_MODELS), dict(MODEL_ALIASES)) == before_views
    with pytest.raises(ModelNotFoundError):
        get_model("tmp")


def test_importing_the_registry_imports_no_model_module() -> None:
    code = textwrap.dedent(
        """
        import sys
        from lmms_eval.models import ensure_registry, resolve_model
        ensure_registry()
        print(resolve_model("dummy").class_path)
        print(sorted(m for m in sys.modules if m.startswith("lmms_eval.models.")))
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    class_path, loaded = proc.stdout.strip().splitlines()
    assert class_path == "lmms_eval.models.chat.dummy.DummyChat"
    assert loaded == "['lmms_eval.models.registry_v2']"
