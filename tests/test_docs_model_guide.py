"""docs/model_guide.md: every snippet runs. The two example models answer a real run of the bundled
``demo_qa`` task, the registration snippets register what they say, the plugin snippets work as a
package, and the dummy / from_log commands run and give the scores the guide promises."""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

import lmms_eval
from lmms_eval.cli import main as cli_main
from lmms_eval.models import isolated_registry
from lmms_eval.models.registry_v2 import ENTRY_POINT_GROUP
from lmms_eval.protocol import ChatMessages

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "model_guide.md"
FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def blocks(kind: str) -> list[str]:
    return [m.group(2) for m in FENCE.finditer(GUIDE.read_text(encoding="utf-8")) if m.group(1) == kind]


def block(kind: str, marker: str) -> str:
    (found,) = [code for code in blocks(kind) if marker in code]
    return found


def run(code: str, namespace: dict[str, Any] | None = None) -> dict[str, Any]:
    namespace = {"__name__": "model_guide"} if namespace is None else namespace
    exec(compile(code, str(GUIDE), "exec"), namespace)
    return namespace


def test_the_guide_has_the_snippets_this_test_runs() -> None:
    assert len(blocks("python")) == 8 and len(blocks("bash")) == 2 and len(blocks("toml")) == 1


def answers(folder: Path) -> list[str]:
    (samples,) = folder.rglob("*_samples_demo_qa.jsonl")
    rows = [json.loads(line) for line in samples.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [row["filtered_resps"][0] for row in rows]


def test_the_chat_example_answers_a_run(tmp_path: Path) -> None:
    run(blocks("python")[0])  # section 1: the import
    shouting = run(block("python", "class ShoutingModel"))["ShoutingModel"]
    lmms_eval.simple_evaluate(
        model=shouting(), tasks=["demo_qa"], limit=3, output_path=str(tmp_path), log_samples=True
    )
    found = answers(tmp_path)
    assert len(found) == 3 and all(a.startswith("WHAT IS ") for a in found), found


def test_the_simple_example_registers_and_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "word_overlap.py").write_text(block("python", "class WordOverlap"), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "word_overlap", raising=False)
    with isolated_registry():
        namespace = run(block("python", "import word_overlap"))
    scores = namespace["results"]["results"]["demo_qa"]
    assert scores["exact_match,none"] == 0.0  # it answers "A" to arithmetic
    assert namespace["results"]["n-samples"]["demo_qa"]["effective"] == 3


def test_the_chat_messages_example_validates() -> None:
    namespace = {"pil_image_or_path": Image.new("RGB", (8, 8)), "samples": np.zeros(1600, dtype=np.float32)}
    messages = ChatMessages.from_raw(run(block("python", "messages = ["), namespace)["messages"])
    images, videos, audios = messages.extract_media()
    assert (len(images), videos, len(audios)) == (1, ["clip.mp4"], 1)
    assert messages.text() == "Be brief.\nWhat happens here?"


def test_the_builtin_table_snippet_matches_the_package() -> None:
    code = block("python", "BUILTIN_MODELS:")
    source = (ROOT / "lmms_eval" / "models" / "__init__.py").read_text(encoding="utf-8")
    dummy_line = next(line.strip() for line in code.splitlines() if '"dummy"' in line)
    assert dummy_line in source  # the guide shows the real dummy entry
    import lmms_eval.models as models

    namespace = run(code, {"ModelManifest": models.ModelManifest, "_builtin": models._builtin,
                           "INSTALL_HF": models.INSTALL_HF})  # fmt: skip
    mine = namespace["BUILTIN_MODELS"][1]
    assert mine.model_id == "my_model" and mine.aliases == ("my_model_old_name",)
    assert str(mine.chat_class_path).startswith("lmms_eval.models.chat.my_model")  # chat/<id>.py
    assert mine.install_hint == models.INSTALL_HF


def test_the_manifest_snippet_registers_the_model_and_alias() -> None:
    with isolated_registry() as registry:
        run(block("python", "MODEL_REGISTRY_V2.register_manifest("))
        resolved = registry.resolve("my_model_old_name")
        assert (resolved.model_id, resolved.model_type, resolved.class_path) == (
            "my_model",
            "chat",
            "my_package.models:MyModel",
        )
    with isolated_registry() as registry, pytest.raises(Exception, match="my_model"):
        registry.resolve("my_model")  # the snippet's registration did not leak


def test_the_plugin_snippets_make_a_working_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    pyproject = tomllib.loads(block("toml", "entry-points"))
    (group,) = pyproject["project"]["entry-points"]
    assert group == ENTRY_POINT_GROUP
    assert pyproject["project"]["entry-points"][group] == {"shouting": "my_lmms_plugin.models:MANIFESTS"}
    package = tmp_path / "my_lmms_plugin"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    shouting = block("python", "class ShoutingModel")
    (package / "models.py").write_text(shouting + "\n\n" + block("python", "MANIFESTS = ["), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    from my_lmms_plugin.models import MANIFESTS  # type: ignore[import-not-found]

    with isolated_registry() as registry:
        for manifest in MANIFESTS:
            registry.register_manifest(manifest, overwrite=True)  # what the entry-point loader does
        out = tmp_path / "out"
        lmms_eval.simple_evaluate(
            model="loud", tasks=["demo_qa"], limit=2, output_path=str(out), log_samples=True
        )
    found = answers(out)
    assert len(found) == 2 and all(a.startswith("WHAT IS ") for a in found), found


def results_of(folder: Path) -> dict[str, Any]:
    (path,) = sorted(folder.rglob("*_results.json"))[-1:]
    return json.loads(path.read_text(encoding="utf-8"))["results"]["demo_qa"]


def test_the_dummy_and_from_log_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LMMS_EVAL_HOME", str(tmp_path / "home"))
    dummy, from_log = (block.replace("\\\n", " ") for block in blocks("bash"))
    oracle, echo = (shlex.split(line) for line in dummy.splitlines() if line.strip())
    assert cli_main([*oracle[1:], "--output_path", "oracle", "--verbosity", "ERROR"]) == 0
    assert 0.6 <= results_of(tmp_path / "oracle")["exact_match,none"] <= 0.95  # accuracy=0.8 of 20 docs
    assert cli_main([*echo[1:], "--verbosity", "ERROR"]) == 0
    (samples,) = (tmp_path / "out").rglob("*_samples_demo_qa.jsonl")
    first = json.loads(samples.read_text(encoding="utf-8").splitlines()[0])
    assert first["resps"][0][0].startswith("What is")  # echo: the prompt comes back
    logged, replayed = (shlex.split(line.split("#")[0]) for line in from_log.splitlines() if line.strip())
    assert cli_main([*logged[1:], "--verbosity", "ERROR"]) == 0
    before = results_of(tmp_path / "outputs")
    assert cli_main([*replayed[1:], "--output_path", "replayed", "--verbosity", "ERROR"]) == 0
    after = results_of(tmp_path / "replayed")
    assert after["exact_match,none"] == before["exact_match,none"] > 0.5  # "same scores"
