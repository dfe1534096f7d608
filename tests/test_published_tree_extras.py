"""Published task-tree features beyond the basics of ``test_published_tree.py``.

Each test builds a miniature tree with what a published task folder does (import
``GeneralConfigTracker``, name a ``datasets.Features`` value with ``!function``, import a function
that only the published version of a bundled benchmark has, define one task name in two files)
and checks what our loader makes of it. Nothing here imports the published package.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest
from test_published_tree import BASE, DATA, ROWS, _manager, _task

import lmms_eval
from lmms_eval.api.group import ConfigurableGroup
from lmms_eval.errors import ConfigError
from lmms_eval.loggers.evaluation_tracker import GeneralConfigTracker
from lmms_eval.tasks import TaskManager

# -- lmms_eval.loggers.evaluation_tracker ----------------------------------------------------------


@pytest.mark.parametrize(
    ("model_args", "name"),
    [
        ("pretrained=Qwen/Qwen2-VL-7B,dtype=bf16", "Qwen/Qwen2-VL-7B"),
        ("model=gpt-4o", "gpt-4o"),
        ("path=/ckpt/run1/", "/ckpt/run1/"),
        ("peft=me/adapter,pretrained=base/model", "me/adapter"),  # the adapter names the run
        ("pretrained=a, dtype=x", "a"),
        ("dtype=bf16", ""),
        ("", ""),
        ("not an argument string", ""),
    ],
)
def test_model_name_from_model_args(model_args: str, name: str) -> None:
    assert GeneralConfigTracker._get_model_name(model_args) == name


def test_tracker_records_the_run() -> None:
    tracker = GeneralConfigTracker()
    tracker.log_experiment_args("qwen2_vl", "pretrained=Qwen/Qwen2-VL-7B", "Be brief.", "", False)
    tracker.log_end_time()
    assert (tracker.model_name, tracker.model_name_sanitized) == ("Qwen/Qwen2-VL-7B", "Qwen__Qwen2-VL-7B")
    assert tracker.system_instruction_sha and tracker.chat_template_sha is None
    assert float(tracker.total_evaluation_time_seconds or "-1") >= 0


def test_a_task_importing_the_tracker_loads(write_files, tmp_path: Path) -> None:
    utils = (
        "from lmms_eval.loggers.evaluation_tracker import GeneralConfigTracker\n"
        "def text(doc):\n    return GeneralConfigTracker._get_model_name('model=' + doc['question'])\n"
    )
    files = {
        "jm/data.jsonl": DATA,
        "jm/utils.py": utils,
        "jm/t.yaml": BASE + "task: jm\ndoc_to_text: !function utils.text\n",
    }
    task = _task(_manager(write_files(files, tmp_path / "tree")), "jm")
    assert task.doc_to_text(ROWS[2]) == "q2"


# -- !function naming a value under dataset_kwargs -------------------------------------------------


def test_dataset_kwargs_may_name_a_value_but_doc_fields_need_a_function(write_files, tmp_path: Path) -> None:
    utils = "FEATURES = {'question': 'string', 'answer': 'string'}\nLIMIT = 3\ndef text(doc):\n    return doc['question']\n"
    kwargs = "dataset_path: json\ndataset_kwargs:\n  data_files:\n    test: data.jsonl\n  features: !function utils.FEATURES\n"
    files = {
        "ego/data.jsonl": DATA,
        "ego/utils.py": utils,
        "ego/ok.yaml": kwargs + "test_split: test\ntask: ego\ndoc_to_text: !function utils.text\n",
        "ego/bad.yaml": BASE + "task: ego_bad\ndoc_to_text: !function utils.LIMIT\n",
    }
    manager = _manager(write_files(files, tmp_path / "tree"))
    task = _task(manager, "ego")
    assert task.config.dataset_kwargs["features"] == {"question": "string", "answer": "string"}
    with pytest.raises(ConfigError, match=r"!function 'utils\.LIMIT' names a value of type int"):
        _task(manager, "ego_bad")


# -- a published folder of the same name as one we bundle -----------------------------------------

TWIN = (
    "def assign_correctness(items, key):\n    return [dict(i, correct=i[key] == i['answer']) for i in items]\n"
    "def process_results(doc, results):\n    return {'twin': 1}\n"
)
USER = (
    "from lmms_eval.tasks.hallusion_bench.utils import assign_correctness, process_results\n"
    "def text(doc):\n    return str(assign_correctness([{'p': 'no', 'answer': doc['answer']}], 'p')[0]['correct'])\n"
    "def ours():\n    return process_results\n"
)


def test_names_ours_lacks_come_from_the_published_twin(write_files, tmp_path: Path) -> None:
    import lmms_eval.tasks.hallusion_bench.utils as ours  # imported before the tree is registered

    files = {
        "hallusion_bench/utils.py": TWIN,
        "hb_user/data.jsonl": DATA,
        "hb_user/utils.py": USER,
        "hb_user/t.yaml": BASE
        + "task: hb_user\ndoc_to_text: !function utils.text\n"
        + "process_results: !function lmms_eval.tasks.hallusion_bench.utils.assign_correctness\n",
    }
    task = _task(_manager(write_files(files, tmp_path / "tree")), "hb_user")
    assert [task.doc_to_text(r) for r in ROWS[:2]] == ["True", "False"]
    user = sys.modules["lmms_eval.tasks.hb_user.utils"]
    assert user.ours() is ours.process_results  # a name ours defines stays ours
    assert task.config.process_results.__module__ != ours.__name__  # the twin's, by !function path
    with pytest.raises(ImportError, match=r"cannot import name 'nowhere_defined'"):
        exec("from lmms_eval.tasks.hallusion_bench.utils import nowhere_defined", {})


LIBRISPEECH = "lmms_eval.tasks.librispeech.utils"


def _twin_tree(write_files, root: Path, monkeypatch: pytest.MonkeyPatch, twin: str, attr: str) -> TaskManager:
    """A published ``librispeech/utils.py`` and a task naming ``<our librispeech.utils>.<attr>``;
    our module is un-imported for the test (and restored afterwards), so the tree comes first."""
    import lmms_eval.tasks.librispeech as package

    monkeypatch.delitem(sys.modules, LIBRISPEECH, raising=False)
    monkeypatch.setattr(package, "utils", getattr(package, "utils", None), raising=False)
    files = {
        "librispeech/utils.py": twin,
        "twin_user/data.jsonl": DATA,
        "twin_user/t.yaml": BASE + f"task: twin_user\ndoc_to_visual: !function {LIBRISPEECH}.{attr}\n",
    }
    return _manager(write_files(files, root))


def test_twin_fallback_for_a_module_first_imported_after_the_tree(
    write_files, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    twin = "def librispeech_twin_only_audio(doc):\n    return ['twin']\n"
    manager = _twin_tree(write_files, tmp_path / "tree", monkeypatch, twin, "librispeech_twin_only_audio")
    assert _task(manager, "twin_user").doc_to_visual(ROWS[0]) == ["twin"]
    module = sys.modules[LIBRISPEECH]
    assert module.__file__ == str(Path(lmms_eval.__file__).parent / "tasks" / "librispeech" / "utils.py")
    assert callable(module.librispeech_wer)  # ours, still there


def test_a_broken_twin_is_reported_as_an_import_failure(
    write_files, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    twin = "import not_installed_module_xyz\n"
    manager = _twin_tree(write_files, tmp_path / "tree", monkeypatch, twin, "only_in_twin")
    with pytest.raises(ConfigError, match=r"it imports 'not_installed_module_xyz', which is not installed"):
        _task(manager, "twin_user")


# -- one name in two files -------------------------------------------------------------------------


def _dup_tree(write_files, root: Path) -> Path:
    files: dict[str, str] = {}
    for folder in ("en", "all"):
        files[f"{folder}/data.jsonl"] = DATA
        files[f"{folder}/dev.yaml"] = BASE + f"task: dev_reasoning\ndoc_to_text: '{folder}'\n"
        files[f"{folder}/group.yaml"] = f"group: {folder}_reasoning\ntask:\n  - dev_reasoning\n"
    files["vet/data.jsonl"] = DATA
    files["vet/vet.yaml"] = BASE + "task: vet\ndoc_to_text: plain\n"
    files["vet/vet_group_img.yaml"] = BASE + "task: vet\ndoc_to_text: composite\n"
    return write_files(files, root)


def test_a_group_uses_the_definition_in_its_own_folder(write_files, tmp_path: Path) -> None:
    manager = _manager(_dup_tree(write_files, tmp_path / "dup"))
    for folder in ("en", "all"):
        group = manager.load_task_or_group([f"{folder}_reasoning"])[f"{folder}_reasoning"]
        assert isinstance(group, ConfigurableGroup)
        (leaf,) = group.leaves()
        assert leaf.doc_to_text(ROWS[0]) == folder
    with pytest.raises(ConfigError, match=r"'dev_reasoning' is defined more than once: .*en/dev\.yaml"):
        manager.load_task_or_group(["dev_reasoning"])  # by itself the name stays ambiguous


def test_the_file_named_after_a_task_defines_it_with_a_warning(write_files, tmp_path: Path, caplog) -> None:
    from lmms_eval.cli.tasks import validate

    root = _dup_tree(write_files, tmp_path / "dup")
    manager = _manager(root)
    with caplog.at_level(logging.WARNING, logger="lmms_eval.tasks._loader"):
        assert _task(manager, "vet").doc_to_text(ROWS[0]) == "plain"
        _task(manager, "vet")
    warnings = [r.getMessage() for r in caplog.records if "'vet' is defined more than once" in r.getMessage()]
    assert len(warnings) == 1 and "vet_group_img.yaml" in warnings[0]
    assert validate(str(root)) == 1  # validate still reports every duplicated name
