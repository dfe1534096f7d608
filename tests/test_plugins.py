"""Model plugins: the ``lmms_eval.models`` entry-point group, LMMS_EVAL_PLUGINS and ``@register_model``.

The entry-point tests install a real (unpacked) distribution: a package plus a ``*.dist-info``
folder on ``sys.path``, which ``importlib.metadata`` discovers like any installed package.
"""

from __future__ import annotations

import importlib
import json
import logging
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import lmms_eval.models as models
from lmms_eval.api import registry as api_registry
from lmms_eval.api.instance import GenerationResult, Instance
from lmms_eval.api.model import lmms
from lmms_eval.api.registry import RegistrationError, register_model
from lmms_eval.cli import main
from lmms_eval.errors import ModelNotFoundError
from lmms_eval.models import get_model, isolated_registry
from lmms_eval.models import registry_v2 as registry_v2_module
from lmms_eval.models.chat.dummy import DummyChat
from lmms_eval.models.registry_v2 import ModelClassError
from lmms_eval.models.simple.dummy import DummySimple

PLUGIN_MODELS = '''
from lmms_eval.api.model import lmms
from lmms_eval.models.registry_v2 import ModelManifest


class MyModel(lmms):
    """Answers with the doc's ``answer`` field, looked up through task_dict."""

    is_simple = False

    def __init__(self, answer_field: str = "label", batch_size: int = 1, device: str | None = None) -> None:
        super().__init__()
        self.answer_field = answer_field

    def generate_until(self, requests):
        out = []
        for request in requests:
            doc_to_messages, gen_kwargs, doc_id, task, split = request.args
            doc = self.task_dict[task][split][doc_id]
            doc_to_messages(doc)
            out.append(str(doc[self.answer_field]))
        return out


class MySimple(lmms):
    is_simple = True

    def generate_until(self, requests):
        return ["simple" for _ in requests]


def get_manifests():
    return [
        ModelManifest(
            "my_model",
            simple_class_path="myplugin.models.MySimple",
            chat_class_path="myplugin.models.MyModel",
            aliases=("my_model_alias",),
        ),
        ModelManifest("my_mislabelled", chat_class_path="myplugin.models.MySimple"),
    ]
'''

OTHER_PLUGIN = """
from lmms_eval.models.chat.dummy import DummyChat
from lmms_eval.models.registry_v2 import ModelManifest


class Replacement(DummyChat):
    pass


SINGLE = ModelManifest("single_model", chat_class_path="otherplug:Replacement")
MANY = (m for m in [ModelManifest("many_a", chat_class_path="otherplug:Replacement"),
                    ModelManifest("many_b", chat_class_path="otherplug:Replacement")])
OVERRIDE = ModelManifest("dummy", chat_class_path="otherplug:Replacement")
NOT_A_MANIFEST = {"model_id": "dict_model"}
"""


def install_distribution(root: Path, name: str, entry_points: str, files: dict[str, str]) -> None:
    """Write ``files`` and ``<name>-0.1.dist-info`` (METADATA, entry_points.txt) under ``root``."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    dist_info = root / f"{name}-0.1.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (dist_info / "entry_points.txt").write_text(entry_points)


@pytest.fixture
def plugin_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A registry that reloads plugins, restored afterwards with the plugin modules forgotten."""
    monkeypatch.setattr(logging.getLogger("lmms_eval"), "propagate", True)  # for caplog
    with isolated_registry():
        yield
    for module in [m for m in sys.modules if m.split(".")[0] in {"myplugin", "otherplug", "legacyplug"}]:
        del sys.modules[module]
    importlib.invalidate_caches()


@pytest.fixture
def myplugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plugin_env: None) -> Path:
    root = tmp_path / "site"
    install_distribution(
        root,
        "myplugin",
        "[lmms_eval.models]\nmy_plugin = myplugin.models:get_manifests\n",
        {"myplugin/__init__.py": "", "myplugin/models.py": PLUGIN_MODELS},
    )
    monkeypatch.syspath_prepend(str(root))
    return root


# -- entry points ------------------------------------------------------------------------------------


def test_entry_point_plugin_models_resolve(myplugin: Path) -> None:
    cls = get_model("my_model")
    assert f"{cls.__module__}.{cls.__name__}" == "myplugin.models.MyModel"
    assert get_model("my_model_alias") is cls
    assert get_model("my_model", force_simple=True).__name__ == "MySimple"
    assert models.MODEL_REGISTRY_V2.loaded
    assert get_model("dummy") is DummyChat  # built-ins are still there


def test_plugin_class_with_wrong_is_simple_fails_at_load(myplugin: Path) -> None:
    with pytest.raises(ModelClassError, match="registered as a chat model but has is_simple=True"):
        get_model("my_mislabelled")


def test_entry_point_payload_forms_and_broken_plugins(
    myplugin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "site2"
    install_distribution(
        root,
        "otherplug",
        "[lmms_eval.models]\n"
        "single = otherplug:SINGLE\n"
        "many = otherplug:MANY\n"
        "override = otherplug:OVERRIDE\n"
        "broken = otherplug:does_not_exist\n"
        "bad_payload = otherplug:NOT_A_MANIFEST\n",
        {"otherplug/__init__.py": OTHER_PLUGIN},
    )
    monkeypatch.syspath_prepend(str(root))
    caplog.set_level(logging.WARNING, logger="lmms_eval")
    replacement = get_model("single_model")
    assert replacement.__name__ == "Replacement"
    assert get_model("many_a") is replacement and get_model("many_b") is replacement
    # plugins are registered with overwrite: a plugin may replace a built-in's chat class
    assert get_model("dummy") is replacement
    assert get_model("dummy", force_simple=True) is DummySimple
    assert get_model("my_model").__name__ == "MyModel"  # one broken plugin does not stop the others
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("'broken'" in w and "does_not_exist" in w for w in warnings), warnings
    assert any("'bad_payload'" in w and "expected a ModelManifest" in w for w in warnings), warnings
    with pytest.raises(ModelNotFoundError):
        get_model("dict_model")


def test_entry_points_are_scanned_once(myplugin: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = registry_v2_module.metadata.entry_points

    def counting(**kwargs: Any) -> Any:
        calls.append(kwargs.get("group", ""))
        return real(**kwargs)

    monkeypatch.setattr(registry_v2_module.metadata, "entry_points", counting)
    get_model("my_model")
    get_model("my_model_alias")
    models.ensure_registry()
    assert calls == ["lmms_eval.models"]
    with isolated_registry():  # the documented way to rescan
        get_model("my_model")
    assert calls == ["lmms_eval.models", "lmms_eval.models"]


def test_cli_runs_a_plugin_model_end_to_end(myplugin: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    code = main(
        [
            "--model", "my_model_alias", "--model_args", "answer_field=answer", "--tasks", "demo_qa",
            "--limit", "6", "--output_path", str(out),
        ]
    )  # fmt: skip
    assert code == 0
    results = json.loads(next(out.rglob("*_results.json")).read_text())
    assert results["config"]["model_backend"] == "myplugin.models.MyModel (chat)"
    assert results["config"]["model_id"] == "my_model"
    assert results["results"]["demo_qa"]["exact_match,none"] == 1.0
    assert results["n-samples"]["demo_qa"]["effective"] == 6


def test_cli_reports_a_mislabelled_plugin_model(myplugin: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--model", "my_mislabelled", "--tasks", "demo_qa", "--limit", "1"])
    assert code == 1
    err = capsys.readouterr().err
    assert "is_simple=True" in err and "Traceback" not in err


# -- LMMS_EVAL_PLUGINS ---------------------------------------------------------------------------------

LEGACY_FILES = {
    "legacyplug/__init__.py": "",
    "legacyplug/models/__init__.py": (
        "from legacyplug.models.by_class import ByClass\n"
        "AVAILABLE_MODELS = {\n"
        "    'legacy_by_name': 'LegacyByName',\n"
        "    'legacy_by_path': 'legacyplug.models.paths.LegacyChat',\n"
        "    'legacy_by_class': ByClass,\n"
        "}\n"
    ),
    "legacyplug/models/legacy_by_name.py": (
        "from lmms_eval.models.simple.dummy import DummySimple\n\n"
        "class LegacyByName(DummySimple):\n    pass\n"
    ),
    "legacyplug/models/paths.py": (
        "from lmms_eval.models.chat.dummy import DummyChat\n\nclass LegacyChat(DummyChat):\n    pass\n"
    ),
    "legacyplug/models/by_class.py": (
        "from lmms_eval.models.simple.dummy import DummySimple\n\nclass ByClass(DummySimple):\n    pass\n"
    ),
}


def test_legacy_environment_variable_plugins(
    plugin_env: None,
    write_files: Callable[..., Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    root = write_files(LEGACY_FILES, tmp_path / "legacy_site")
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setenv("LMMS_EVAL_PLUGINS", "legacyplug, lmms_eval_no_such_plugin")
    caplog.set_level(logging.WARNING, logger="lmms_eval")
    by_name = get_model("legacy_by_name")
    assert (by_name.__module__, by_name.__name__) == ("legacyplug.models.legacy_by_name", "LegacyByName")
    by_path = get_model("legacy_by_path")
    assert by_path.__name__ == "LegacyChat" and by_path.is_simple is False  # registered as chat
    by_class = get_model("legacy_by_class")
    assert by_class is sys.modules["legacyplug.models.by_class"].ByClass
    messages = " ".join(r.getMessage() for r in caplog.records)
    assert "LMMS_EVAL_PLUGINS is deprecated" in messages
    assert "lmms_eval_no_such_plugin.models" in messages


def test_legacy_plugins_are_not_loaded_without_the_variable(
    plugin_env: None, write_files: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(write_files(LEGACY_FILES, tmp_path / "legacy_site")))
    with pytest.raises(ModelNotFoundError):
        get_model("legacy_by_name")
    assert "legacyplug" not in sys.modules


# -- @register_model -------------------------------------------------------------------------------------


def test_register_model_decorator_registers_chat_and_simple(plugin_env: None) -> None:
    @register_model("decorated", "decorated_alias")
    class DecoratedChat(lmms):
        is_simple = False

        def generate_until(self, requests: list[Instance]) -> list[str | GenerationResult]:
            return ["chat" for _ in requests]

    @register_model("decorated")
    class DecoratedSimple(lmms):
        def generate_until(self, requests: list[Instance]) -> list[str | GenerationResult]:
            return ["simple" for _ in requests]

    assert get_model("decorated") is DecoratedChat
    assert get_model("decorated_alias") is DecoratedChat
    assert get_model("decorated", force_simple=True) is DecoratedSimple
    assert api_registry.MODEL_REGISTRY["decorated_alias"] is DecoratedChat
    model = get_model("decorated").create_from_arg_string("")
    assert model.generate_until([Instance("generate_until", (), 0)]) == ["chat"]


def test_register_model_rejects_non_models(plugin_env: None) -> None:
    with pytest.raises(TypeError, match=re.escape("not a subclass of lmms_eval.api.model.lmms")):

        @register_model("not_a_model")
        class NotAModel:
            pass

    with pytest.raises(ValueError, match="at least one"):
        register_model()
    with pytest.raises(ModelNotFoundError):
        get_model("not_a_model")


def test_register_model_collisions_are_errors_unless_overwrite(
    plugin_env: None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="lmms_eval")

    @register_model("dummy")  # a built-in id: replaced whole, with one warning (issue 28)
    class NotTheDummy(DummyChat):
        pass

    assert get_model("dummy") is NotTheDummy
    assert sum("'dummy' is replaced" in r.getMessage() for r in caplog.records) == 1

    @register_model("dummy", overwrite=True)
    class Replacement(DummyChat):
        pass

    assert get_model("dummy") is Replacement
    assert get_model("dummy", force_simple=True) is Replacement  # the built-in was replaced whole above

    @register_model("decorated_twice")
    class Twice(DummyChat):
        pass

    register_model("decorated_twice")(Twice)  # the same class again (a module imported twice) is fine
    with pytest.raises(
        RegistrationError, match="alias 'mock' of model 'other' already points to model 'dummy'"
    ):
        register_model("other", "mock")(Twice)


def test_classes_decorated_before_the_model_registry_exists_are_handed_over() -> None:
    # a class decorated while lmms_eval.models is not imported yet waits in api.registry
    code = (
        "import sys\n"
        "from lmms_eval.api.model import lmms\n"
        "from lmms_eval.api.registry import MODEL_REGISTRY, register_model\n"
        "@register_model('early_model', 'early')\n"
        "class Early(lmms):\n"
        "    is_simple = False\n"
        "assert 'lmms_eval.models' not in sys.modules\n"
        "assert MODEL_REGISTRY['early'] is Early\n"
        "from lmms_eval.models import get_model, MODEL_ALIASES\n"
        "assert get_model('early') is Early and MODEL_ALIASES['early_model'] == ('early',)\n"
        "print('ok')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.stdout.strip() == "ok", proc.stderr


def test_decorated_models_are_forgotten_after_the_isolated_block() -> None:
    with isolated_registry():

        @register_model("short_lived")
        class ShortLived(DummyChat):
            pass

        assert get_model("short_lived") is ShortLived
    assert "short_lived" not in api_registry.MODEL_REGISTRY
    with pytest.raises(ModelNotFoundError):
        get_model("short_lived")
