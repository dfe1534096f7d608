"""Dataset loading for tasks (``lmms_eval.data.load``), on data built locally in each test.

The Hugging Face Hub is never contacted: Hub-style ids are loaded with the endpoint pointed at a
closed local port, or with offline mode on.
"""

from __future__ import annotations

import http.server
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import textwrap
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import datasets
import huggingface_hub.constants
import pyarrow as pa
import pytest
from PIL import Image

from lmms_eval.api.task import ConfigurableTask
from lmms_eval.api.task_config import TaskConfig
from lmms_eval.data import hub as _hub
from lmms_eval.data import video_files as _video_files
from lmms_eval.data.hub import hub_reachable
from lmms_eval.data.json_native import ListDataset
from lmms_eval.data.load import LOCAL_BUILDERS, load_dataset_splits, media_columns, without_media
from lmms_eval.errors import DatasetError
from lmms_eval.tasks import TaskManager

ROWS = {"question": ["q0", "q1", "q2"], "answer": ["a0", "a1", "a2"], "n": [0, 1, 2]}


@pytest.fixture(autouse=True)
def _quiet_datasets() -> Iterator[None]:
    datasets.disable_progress_bars()
    yield
    datasets.enable_progress_bars()


@pytest.fixture
def hub_state(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """Snapshot and restore every piece of process-global state the Hub code may switch."""
    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HF_ENDPOINT", "LMMS_EVAL_DATASETS_CACHE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", datasets.config.HF_HUB_OFFLINE)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", datasets.config.HF_DATASETS_OFFLINE)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", huggingface_hub.constants.HF_HUB_OFFLINE)
    monkeypatch.setattr(_hub, "_forced_offline_reason", None)
    hub_reachable.cache_clear()
    yield monkeypatch
    hub_reachable.cache_clear()


def closed_port() -> int:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def as_rows(split: Any) -> list[dict[str, Any]]:
    return split.to_list()


# -- native JSON gives the rows datasets gives ---------------------------------------------------

# (file name, text, read natively?)
JSON_CASES = [
    ("missing_keys.jsonl", '{"a": 1, "b": "x"}\n{"a": 2}\n{"c": [1, 2], "a": 3}\n', True),
    ("int_and_float.jsonl", '{"a": 1}\n{"a": 2.5}\n', True),
    ("nested_float.jsonl", '{"s": {"x": 1, "l": [1]}}\n{"s": {"x": 2.5, "l": [0.5]}}\n', True),
    ("key_order.jsonl", '{"b": 1, "a": 2}\n{"a": 3, "c": 4, "b": 5}\n', True),
    ("nested_key_order.jsonl", '{"s": {"x": 1, "y": 2}}\n{"s": {"y": 3, "x": 4}}\n', True),
    (
        "list_of_structs.jsonl",
        '{"l": [{"from": "h", "v": "a"}, {"from": "g", "v": null}]}\n{"l": []}\n',
        True,
    ),
    ("null_struct.jsonl", '{"s": {"x": 1}}\n{"s": null}\n{"b": true}\n', True),
    ("blank_lines_crlf.jsonl", '{"a": 1}\r\n\r\n{"a": 2}\r\n', True),
    ("bom.jsonl", '\ufeff{"a": "\\u00e9"}\n', True),
    ("pretty_array.json", json.dumps([{"a": 1}, {"b": 2.0}], indent=2), True),
    ("one_object.json", json.dumps({"a": [1, 2], "b": {"c": "d"}}, indent=2), True),
    ("lines_in.json", '{"a": 1}\n{"a": 2}\n', True),
    ("document_in.jsonl", json.dumps([{"a": 1}, {"a": 2}], indent=2), True),
    # typed by datasets in ways the native reader leaves to datasets itself
    ("str_and_int.jsonl", '{"a": 1}\n{"a": "x"}\n', False),
    ("bool_and_int.jsonl", '{"a": true}\n{"a": 1}\n', False),
    ("varying_nested_keys.jsonl", '{"s": {"x": 1}}\n{"s": {"x": 1, "y": 2}}\n', False),
    ("dates.jsonl", '{"d": "2020-01-01"}\n{"d": "2021-02-03 10:00:00"}\n', False),
    ("big_int.jsonl", '{"a": 1}\n{"a": 99999999999999999999}\n', False),
    ("scalars.json", "[1, 2, 3]", False),
]


@pytest.mark.parametrize(("name", "text", "native"), JSON_CASES, ids=[c[0] for c in JSON_CASES])
def test_json_rows_match_datasets(tmp_path: Path, name: str, text: str, native: bool) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    loaded = load_dataset_splits("json", None, {"data_files": {"test": name}}, str(tmp_path), "t")
    expected = datasets.load_dataset("json", data_files=str(path), split="train").to_list()
    assert list(loaded) == ["test"]
    assert isinstance(loaded["test"], ListDataset) is native
    # repr, not ==: 1 == 1.0 and key order would not count otherwise
    assert repr(as_rows(loaded["test"])) == repr(expected)


def test_native_json_does_not_import_datasets(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "d.jsonl", [{"q": f"q{i}", "a": i} for i in range(50)])
    script = textwrap.dedent(
        f"""
        import sys
        from lmms_eval.data.load import load_dataset_splits
        splits = load_dataset_splits("jsonl", None, {{"data_files": {{"test": "d.jsonl"}}}}, {str(tmp_path)!r}, "t")
        print(len(splits["test"]), "datasets" in sys.modules, "pyarrow" in sys.modules)
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert proc.stdout.split("\n")[0] == "50 False False"


def test_native_json_split_field_and_inert_kwargs(tmp_path: Path) -> None:
    (tmp_path / "d.json").write_text(json.dumps({"version": 2, "data": [{"a": 1}, {"a": 2.5}]}))
    write_jsonl(tmp_path / "train.jsonl", [{"a": 0}])
    kwargs = {
        "data_files": {"train": "train.jsonl", "test": "d.json"},
        "field": "data",
        "split": "test",
        "token": True,
        "trust_remote_code": True,
    }
    loaded = load_dataset_splits("json", None, kwargs, str(tmp_path), "t")
    assert list(loaded) == ["test"]
    assert isinstance(loaded["test"], ListDataset)
    assert repr(as_rows(loaded["test"])) == "[{'a': 1.0}, {'a': 2.5}]"


def test_native_json_errors_name_task_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "bad.jsonl").write_text('{"a": 1}\n{"a": \n')
    with pytest.raises(DatasetError, match=r"task 'my_task': .*bad\.jsonl:2: invalid JSON line"):
        load_dataset_splits("json", None, {"data_files": {"test": "bad.jsonl"}}, str(tmp_path), "my_task")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(DatasetError, match=r"task 'my_task': .*split 'test' hold no records: .*empty\.jsonl"):
        load_dataset_splits("json", None, {"data_files": {"test": "empty.jsonl"}}, str(tmp_path), "my_task")


def test_list_dataset_api_and_to_hf() -> None:
    rows = [{"q": "a", "n": 1}, {"q": "b", "n": 2}, {"q": "c", "n": 3}]
    docs = ListDataset(rows)
    assert len(docs) == docs.num_rows == 3
    assert docs[1] == rows[1]
    assert docs["q"] == ["a", "b", "c"]
    assert docs.column_names == ["q", "n"]
    assert docs.select([2, 0]).to_list() == [rows[2], rows[0]]
    assert docs[1:].to_list() == rows[1:]
    with pytest.raises(KeyError, match="column 'missing'"):
        docs["missing"]
    hf = docs.to_hf()
    assert isinstance(hf, datasets.Dataset)
    assert hf.to_list() == rows


# -- local parquet / csv / arrow / globs / relative paths --------------------------------------------


def _write_format(fmt: str, folder: Path) -> str:
    """Write ROWS in ``fmt`` under ``folder/data`` and return the data_files path relative to folder."""
    (folder / "data").mkdir(parents=True, exist_ok=True)
    ds = datasets.Dataset.from_dict(ROWS)
    if fmt == "parquet":
        ds.to_parquet(str(folder / "data" / "test.parquet"))
        return "data/test.parquet"
    if fmt == "csv":
        ds.to_csv(str(folder / "data" / "test.csv"), index=False)
        return "data/test.csv"
    if fmt == "arrow_saved":  # the shard Dataset.save_to_disk writes (Arrow stream format)
        ds.save_to_disk(str(folder / "saved"))
        shutil.move(str(folder / "saved" / "data-00000-of-00001.arrow"), str(folder / "data" / "test.arrow"))
        return "data/test.arrow"
    table = pa.table(ROWS)  # "arrow_ipc": an Arrow IPC file written by pyarrow
    with (
        pa.OSFile(str(folder / "data" / "test.arrow"), "wb") as sink,
        pa.ipc.new_file(sink, table.schema) as writer,
    ):
        writer.write_table(table)
    return "data/test.arrow"


@pytest.mark.parametrize("fmt", ["parquet", "csv", "arrow_saved", "arrow_ipc"])
def test_local_files_relative_to_the_yaml_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    task_dir = tmp_path / "task"
    rel = _write_format(fmt, task_dir)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # data_files resolve against the YAML folder, not the cwd
    builder = "arrow" if fmt.startswith("arrow") else fmt
    loaded = load_dataset_splits(builder, None, {"data_files": {"test": rel}}, str(task_dir), "t")
    assert list(loaded) == ["test"]
    assert isinstance(loaded["test"], datasets.Dataset)
    assert loaded["test"].to_dict() == ROWS


def test_data_files_prefer_the_yaml_folder_then_the_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task_dir, cwd = tmp_path / "task", tmp_path / "cwd"
    write_jsonl(task_dir / "d.jsonl", [{"where": "yaml folder"}])
    write_jsonl(cwd / "d.jsonl", [{"where": "cwd"}])
    write_jsonl(cwd / "only_cwd.jsonl", [{"where": "cwd"}])
    monkeypatch.chdir(cwd)
    both = load_dataset_splits("json", None, {"data_files": {"test": "d.jsonl"}}, str(task_dir), "t")
    assert both["test"][0] == {"where": "yaml folder"}
    only = load_dataset_splits("json", None, {"data_files": "only_cwd.jsonl"}, str(task_dir), "t")
    assert list(only) == ["train"] and only["train"][0] == {"where": "cwd"}


def test_glob_data_files(tmp_path: Path) -> None:
    for i in range(3):
        datasets.Dataset.from_dict({"i": [2 * i, 2 * i + 1]}).to_parquet(
            str(tmp_path / f"test-{i:05d}.parquet")
        )
    loaded = load_dataset_splits(
        "parquet", None, {"data_files": {"test": "test-*.parquet"}}, str(tmp_path), "t"
    )
    assert loaded["test"]["i"] == [0, 1, 2, 3, 4, 5]
    write_jsonl(tmp_path / "j" / "part-0.jsonl", [{"i": 0}])
    write_jsonl(tmp_path / "j" / "part-1.jsonl", [{"i": 1}])
    loaded = load_dataset_splits(
        "json", None, {"data_files": {"test": ["j/part-*.jsonl"]}}, str(tmp_path), "t"
    )
    assert sorted(loaded["test"]["i"]) == [0, 1]


def test_json_with_a_file_per_split_and_the_jsonl_alias(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "train.jsonl", [{"q": "t0"}, {"q": "t1"}])
    write_jsonl(tmp_path / "val.jsonl", [{"q": "v0"}])
    kwargs = {"data_files": {"train": "train.jsonl", "validation": ["val.jsonl", "train.jsonl"]}}
    for path in ("json", "jsonl"):
        loaded = load_dataset_splits(path, None, kwargs, str(tmp_path), "t")
        assert {k: as_rows(v) for k, v in loaded.items()} == {
            "train": [{"q": "t0"}, {"q": "t1"}],
            "validation": [{"q": "v0"}, {"q": "t0"}, {"q": "t1"}],
        }


def test_dataset_path_may_be_a_data_file(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "sub" / "d.jsonl", [{"q": "x"}])
    loaded = load_dataset_splits("sub/d.jsonl", None, {}, str(tmp_path), "t")
    assert list(loaded) == ["train"] and loaded["train"][0] == {"q": "x"}
    loaded = load_dataset_splits("sub/d.jsonl", None, {"split": "test"}, str(tmp_path), "t")
    assert list(loaded) == ["test"]


@pytest.mark.parametrize(
    ("data_files", "shown"),
    [
        ({"test": "nope.parquet"}, "nope.parquet"),
        ("data/*.parquet", r"data/\*\.parquet"),
        (["x.csv"], "x.csv"),
    ],
)
def test_missing_data_file_is_one_clear_error(tmp_path: Path, data_files: Any, shown: str) -> None:
    with pytest.raises(DatasetError) as err:
        load_dataset_splits("parquet", None, {"data_files": data_files}, str(tmp_path), "my_task")
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("task 'my_task': data file '")
    assert f"{tmp_path}" in message and "dataset_kwargs.data_files" in message
    assert __import__("re").search(shown, message)


def test_unreadable_local_file_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "broken.parquet").write_bytes(b"this is not parquet")
    with pytest.raises(DatasetError) as err:
        load_dataset_splits("parquet", None, {"data_files": {"test": "broken.parquet"}}, str(tmp_path), "t")
    message = str(err.value)
    assert message.startswith("task 't': could not read the parquet data files ")
    assert str(tmp_path / "broken.parquet") in message and "\n" not in message


def test_local_builder_without_data_files_says_what_to_add(tmp_path: Path) -> None:
    with pytest.raises(
        DatasetError,
        match=r"task 't': dataset_path 'csv' reads local files; list them in dataset_kwargs.data_files",
    ):
        load_dataset_splits("csv", None, {}, str(tmp_path), "t")


def test_every_local_builder_is_a_datasets_builder() -> None:
    from datasets.packaged_modules import _PACKAGED_DATASETS_MODULES

    assert LOCAL_BUILDERS - {"jsonl"} <= set(_PACKAGED_DATASETS_MODULES)


# -- load_from_disk --------------------------------------------------------------------------------


def test_saved_dataset_dict_is_detected_or_named(tmp_path: Path) -> None:
    dd = datasets.DatasetDict(
        {
            "test": datasets.Dataset.from_dict(ROWS),
            "train": datasets.Dataset.from_dict({"question": ["t"], "answer": ["u"], "n": [9]}),
        }
    )
    dd.save_to_disk(str(tmp_path / "saved"))
    detected = load_dataset_splits("saved", None, {}, str(tmp_path), "t")
    named = load_dataset_splits("saved", None, {"load_from_disk": True}, str(tmp_path), "t")
    for loaded in (detected, named):
        assert sorted(loaded) == ["test", "train"]
        assert loaded["test"].to_dict() == ROWS
    only_test = load_dataset_splits(
        "saved", None, {"load_from_disk": True, "split": "test"}, str(tmp_path), "t"
    )
    assert list(only_test) == ["test"]
    with pytest.raises(
        DatasetError, match=r"split 'dev' is not in the saved dataset .* \(splits: test, train\)"
    ):
        load_dataset_splits("saved", None, {"split": "dev"}, str(tmp_path), "t")


def test_saved_single_dataset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    datasets.Dataset.from_dict(ROWS).save_to_disk(str(tmp_path / "one"))
    monkeypatch.chdir(tmp_path)  # a relative dataset_path may also be relative to the cwd
    loaded = load_dataset_splits("one", None, {}, str(tmp_path / "elsewhere"), "t")
    assert list(loaded) == ["train"] and loaded["train"].to_dict() == ROWS
    loaded = load_dataset_splits(
        str(tmp_path / "one"), None, {"load_from_disk": True, "split": "test"}, "/", "t"
    )
    assert list(loaded) == ["test"]


def test_load_from_disk_errors(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"task 't': saved dataset folder 'gone' not found .*save_to_disk"):
        load_dataset_splits("gone", None, {"load_from_disk": True}, str(tmp_path), "t")
    (tmp_path / "plain").mkdir()
    with pytest.raises(DatasetError, match=r"task 't': '.*plain' is not a dataset saved with save_to_disk"):
        load_dataset_splits("plain", None, {"load_from_disk": True}, str(tmp_path), "t")


# -- which dataset_kwargs reach datasets.load_dataset -----------------------------------------------


class LoadRecorder:
    def __init__(self) -> None:
        self.calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append((args, kwargs))
        ds = datasets.Dataset.from_dict(ROWS)
        split = kwargs.get("split")
        return ds if isinstance(split, str) else datasets.DatasetDict({"test": ds})


def test_own_dataset_kwargs_never_reach_load_dataset(tmp_path: Path, hub_state: pytest.MonkeyPatch) -> None:
    recorder = LoadRecorder()
    hub_state.setattr(datasets, "load_dataset", recorder)
    hub_state.setenv("HF_HUB_OFFLINE", "1")
    datasets.Dataset.from_dict(ROWS).to_parquet(str(tmp_path / "t.parquet"))
    own = {
        "video": True,
        "cache_dir": "videos",
        "force_download": True,
        "force_unzip": True,
        "create_link": True,
        "From_YouTube": True,
        "max_retries": 3,
        "builder_script": "x.py",
        "local_files_only": True,
        "load_from_disk": False,
    }
    load_dataset_splits(
        "parquet", None, {**own, "data_files": {"test": "t.parquet"}, "token": True}, str(tmp_path), "t"
    )
    load_dataset_splits(
        "someorg/somedataset",
        "cfg",
        {
            "token": True,
            "revision": "main",
            "cache_dir": str(tmp_path / "c"),
            "trust_remote_code": True,
            "data_files": {"test": "data/test-*.parquet"},  # inside the Hub repo: kept as written
        },
        str(tmp_path),
        "t",
    )
    hub_state.setenv("LMMS_EVAL_DATASETS_CACHE", str(tmp_path / "env_cache"))
    load_dataset_splits("someorg/somedataset", None, {"split": "test[:2]"}, str(tmp_path), "t")
    assert recorder.calls == [
        (("parquet", None), {"data_files": {"test": str(tmp_path / "t.parquet")}, "token": True}),
        (
            ("someorg/somedataset", "cfg"),
            {
                "token": True,
                "revision": "main",
                "cache_dir": str(tmp_path / "c"),
                "data_files": {"test": "data/test-*.parquet"},
            },
        ),
        (("someorg/somedataset", None), {"split": "test[:2]", "cache_dir": str(tmp_path / "env_cache")}),
    ]


def test_a_split_kwarg_keys_the_result_by_split(hub_state: pytest.MonkeyPatch, tmp_path: Path) -> None:
    hub_state.setattr(datasets, "load_dataset", LoadRecorder())
    hub_state.setenv("HF_HUB_OFFLINE", "1")
    loaded = load_dataset_splits("someorg/somedataset", None, {"split": "test[:2]"}, str(tmp_path), "t")
    assert sorted(loaded) == ["test", "test[:2]"]
    assert load_dataset_splits("someorg/somedataset", None, {}, str(tmp_path), "t").keys() == {"test"}


# -- the Hub: unreachable, offline, cached ----------------------------------------------------------


def test_unreachable_hub_fails_fast_with_a_clear_error(hub_state: pytest.MonkeyPatch, tmp_path: Path) -> None:
    hub_state.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    probes: list[str] = []
    answers_http = _hub._answers_http
    hub_state.setattr(_hub, "_answers_http", lambda url: probes.append(url) or answers_http(url))
    with pytest.raises(DatasetError) as err:
        load_dataset_splits("someorg/somedataset", "cfg", {"token": True}, str(tmp_path), "hub_task")
    message = str(err.value)
    assert len(probes) == 1  # one bounded probe, no retry loop
    assert "\n" not in message
    assert message.startswith(
        "task 'hub_task': dataset 'someorg/somedataset' (config 'cfg') is not in the local"
    )
    assert "is unreachable" in message and "127.0.0.1" in message
    assert "point dataset_path at a local copy" in message
    assert "--dataset_root DIR" in message and "'lmms-eval tasks info hub_task' lists" in message
    # the process switched to offline mode so later loads answer from the cache at once
    assert os.environ["HF_HUB_OFFLINE"] == "1" and datasets.config.HF_HUB_OFFLINE is True
    with pytest.raises(DatasetError, match="is unreachable"):
        load_dataset_splits("someorg/other", None, {}, str(tmp_path), "hub_task")
    assert len(probes) == 1  # answered without probing again


def test_offline_mode_gives_the_same_clear_error_without_probing(
    hub_state: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    hub_state.setenv("HF_HUB_OFFLINE", "1")

    def no_probe(endpoint: str | None = None) -> bool:
        raise AssertionError("the Hub must not be probed in offline mode")

    hub_state.setattr(_hub, "hub_reachable", no_probe)
    with pytest.raises(DatasetError) as err:
        load_dataset_splits("someorg/somedataset", None, {}, str(tmp_path), "hub_task")
    message = str(err.value)
    assert message.startswith(
        "task 'hub_task': dataset 'someorg/somedataset' is not in the local datasets cache"
    )
    assert "offline mode is on" in message and "\n" not in message
    # datasets was imported before the variable was set: it is switched too
    assert datasets.config.HF_HUB_OFFLINE is True and huggingface_hub.constants.HF_HUB_OFFLINE is True


def _cache_as_hub_dataset(cache: Path, repo_id: str, src: Path) -> None:
    """Build datasets' cache of ``repo_id`` the way a past online load would have left it."""
    datasets.Dataset.from_dict(ROWS).to_parquet(str(src / "test.parquet"))
    datasets.load_dataset("parquet", data_files={"test": str(src / "test.parquet")}, cache_dir=str(cache))
    built = next((cache / "parquet").glob("default-*/0.0.0/*/"))
    namespace, name = repo_id.split("/")
    target = cache / f"{namespace}___{name}" / "default" / "0.0.0" / "0123456789abcdef"
    shutil.copytree(built, target)
    (target / "parquet-test.arrow").rename(target / f"{name}-test.arrow")


def test_unreachable_hub_still_loads_a_cached_dataset(hub_state: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _cache_as_hub_dataset(cache, "someorg/cached", tmp_path)
    hub_state.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    loaded = load_dataset_splits("someorg/cached", None, {"cache_dir": str(cache)}, str(tmp_path), "t")
    assert loaded["test"].to_dict() == ROWS


@contextmanager
def http_server(status: int) -> Iterator[str]:
    """A local HTTP server answering every HEAD request with ``status``."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_HEAD(self) -> None:
            self.send_response(status)
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(var, raising=False)
        monkeypatch.delenv(var.upper(), raising=False)


@pytest.mark.usefixtures("no_proxies")
def test_hub_reachable_needs_an_http_answer(hub_state: pytest.MonkeyPatch) -> None:
    with http_server(200) as ok, http_server(404) as missing, http_server(503) as down:
        assert hub_reachable(ok) is True
        assert hub_reachable(missing) is True  # the server answered
        assert hub_reachable(down) is False
    assert hub_reachable(f"http://127.0.0.1:{closed_port()}") is False
    # a port that accepts connections but never answers: unreachable once the probe times out
    hub_state.setattr(_hub, "HUB_PROBE_TIMEOUT_S", 0.3)
    silent = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    silent.bind(("127.0.0.1", 0))
    silent.listen(4)
    try:
        assert hub_reachable(f"http://127.0.0.1:{silent.getsockname()[1]}") is False
    finally:
        silent.close()


@pytest.mark.usefixtures("no_proxies")
def test_hub_reachable_goes_through_the_proxy(hub_state: pytest.MonkeyPatch) -> None:
    with http_server(200) as ok:
        hub_state.setenv("http_proxy", f"http://127.0.0.1:{closed_port()}")
        assert hub_reachable(ok) is False  # the dead proxy is what answers (or not)
        hub_reachable.cache_clear()
        hub_state.setenv("no_proxy", "127.0.0.1")
        assert hub_reachable(ok) is True


def test_hub_errors_when_online(hub_state: pytest.MonkeyPatch, tmp_path: Path) -> None:
    hub_state.setattr(_hub, "hub_reachable", lambda endpoint=None: True)

    def not_found(*args: Any, **kwargs: Any) -> Any:
        raise datasets.exceptions.DatasetNotFoundError("Dataset 'someorg/x' doesn't exist on the Hub")

    hub_state.setattr(datasets, "load_dataset", not_found)
    with pytest.raises(
        DatasetError, match=r"task 't': dataset 'someorg/x' was not found on the Hugging Face Hub .*HF_TOKEN"
    ):
        load_dataset_splits("someorg/x", None, {}, str(tmp_path), "t")

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise ConnectionError("Connection refused")

    hub_state.setattr(datasets, "load_dataset", refused)
    with pytest.raises(DatasetError, match=r"could not reach the Hugging Face Hub .*HF_HUB_OFFLINE=1"):
        load_dataset_splits("someorg/x", None, {}, str(tmp_path), "t")


# -- media columns ------------------------------------------------------------------------------------


def _image(color: str) -> Image.Image:
    return Image.new("RGB", (4, 4), color)


def test_without_media_drops_image_and_list_of_image_columns() -> None:
    features = datasets.Features(
        {
            "image": datasets.Image(),
            "frames": datasets.Sequence(datasets.Image()),
            "question": datasets.Value("string"),
            "meta": {"source": datasets.Value("string")},
        }
    )
    ds = datasets.Dataset.from_dict(
        {
            "image": [_image("red"), _image("blue")],
            "frames": [[_image("red")], []],
            "question": ["q0", "q1"],
            "meta": [{"source": "a"}, {"source": "b"}],
        },
        features=features,
    )
    assert media_columns(ds) == ["image", "frames"]
    light = without_media(ds)
    assert light.column_names == ["question", "meta"]
    assert light[1] == {"question": "q1", "meta": {"source": "b"}}
    assert isinstance(ds[0]["image"], Image.Image)  # the original keeps its media
    docs = ListDataset([{"q": 1}])
    assert without_media(docs) is docs


def test_media_columns_cover_audio_video_and_nested_lists() -> None:
    features = datasets.Features(
        {
            "audio": datasets.Audio(),
            "clips": datasets.List(datasets.Video()),
            "pages": datasets.LargeList(datasets.List(datasets.Image())),
            "tags": datasets.List(datasets.Value("string")),
        }
    )
    assert media_columns(SimpleNamespace(features=features)) == ["audio", "clips", "pages"]


def test_scoring_docs_have_no_media_unless_asked(tmp_path: Path) -> None:
    features = datasets.Features({"image": datasets.Image(), "answer": datasets.Value("string")})
    ds = datasets.Dataset.from_dict({"image": [_image("red")], "answer": ["a"]}, features=features)
    datasets.DatasetDict({"test": ds}).save_to_disk(str(tmp_path / "saved"))
    common = {"task": "t", "dataset_path": "saved", "test_split": "test", "doc_to_text": "answer"}
    task = ConfigurableTask(TaskConfig(**common), yaml_path=str(tmp_path / "t.yaml"))
    assert task.eval_docs.column_names == ["image", "answer"]
    assert task.scoring_docs.column_names == ["answer"]
    keep = ConfigurableTask(
        TaskConfig(**common, process_results_use_image=True), yaml_path=str(tmp_path / "t.yaml")
    )
    assert keep.scoring_docs.column_names == ["image", "answer"]


def test_process_docs_gets_a_real_dataset(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "d.jsonl", [{"q": f"q{i}", "n": i} for i in range(4)])
    seen: list[Any] = []

    def keep_even(docs: Any) -> Any:
        seen.append(docs)
        return docs.filter(lambda doc: doc["n"] % 2 == 0)

    config = TaskConfig(
        task="t",
        dataset_path="json",
        dataset_kwargs={"data_files": {"test": "d.jsonl"}},
        test_split="test",
        doc_to_text="q",
        process_docs=keep_even,
    )
    task = ConfigurableTask(config, yaml_path=str(tmp_path / "t.yaml"))
    assert [doc["q"] for doc in task.eval_docs] == ["q0", "q2"]
    assert len(seen) == 1 and isinstance(seen[0], datasets.Dataset)


# -- video files -----------------------------------------------------------------------------------


def _video_source(folder: Path) -> None:
    (folder / "data").mkdir(parents=True)
    datasets.Dataset.from_dict({"video": ["a.mp4", "clips/b.mp4"], "answer": ["x", "y"]}).to_parquet(
        str(folder / "data" / "test.parquet")
    )
    with zipfile.ZipFile(folder / "videos.zip", "w") as archive:
        archive.writestr("a.mp4", b"video a")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        payload = b"video b" * 1000
        info = tarfile.TarInfo("clips/b.mp4")
        info.size = len(payload)
        archive.addfile(info, io.BytesIO(payload))
    data = buffer.getvalue()
    half = len(data) // 2
    (folder / "clips.tar.00").write_bytes(data[:half])  # a tar archive split in two parts
    (folder / "clips.tar.01").write_bytes(data[half:])
    (folder / "notes.targets.json").write_text("{}")  # not an archive part


def test_video_archives_are_extracted_into_the_cache_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "video_ds"
    _video_source(source)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))
    kwargs = {"video": True, "cache_dir": "my_videos", "data_files": {"test": "data/test.parquet"}}
    loaded = load_dataset_splits(str(source), None, kwargs, str(tmp_path), "video_task")
    assert loaded["test"]["video"] == ["a.mp4", "clips/b.mp4"]
    cache = tmp_path / "hf_home" / "my_videos"
    assert _video_files.video_cache_dir("my_videos") == str(cache)
    assert (cache / "a.mp4").read_bytes() == b"video a"
    assert (cache / "clips" / "b.mp4").read_bytes() == b"video b" * 1000
    # an existing cache is left alone, unless force_unzip
    (cache / "a.mp4").write_bytes(b"edited")
    load_dataset_splits(str(source), None, kwargs, str(tmp_path), "video_task")
    assert (cache / "a.mp4").read_bytes() == b"edited"
    load_dataset_splits(str(source), None, {**kwargs, "force_unzip": True}, str(tmp_path), "video_task")
    assert (cache / "a.mp4").read_bytes() == b"video a"


def test_video_create_link_and_absolute_cache_dir(tmp_path: Path) -> None:
    source = tmp_path / "video_ds"
    _video_source(source)
    link = tmp_path / "linked"
    kwargs = {
        "video": True,
        "cache_dir": str(link),
        "create_link": True,
        "data_files": {"test": "data/test.parquet"},
    }
    load_dataset_splits(str(source), None, kwargs, str(tmp_path), "video_task")
    assert link.is_symlink() and (link / "videos.zip").exists()


def test_video_files_of_an_uncached_hub_dataset_offline(
    hub_state: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    hub_state.setenv("HF_HUB_OFFLINE", "1")
    hub_state.setenv("HF_HOME", str(tmp_path / "hf_home"))
    with pytest.raises(
        DatasetError,
        match=r"task 'v': the video files of dataset 'someorg/videos' are not in the local Hub cache and offline mode is on",
    ):
        load_dataset_splits("someorg/videos", None, {"video": True, "cache_dir": "v"}, str(tmp_path), "v")
    with pytest.raises(DatasetError, match=r"pass --dataset_root DIR .*'lmms-eval tasks info v' lists"):
        load_dataset_splits("someorg/videos", None, {"video": True, "cache_dir": "v"}, str(tmp_path), "v")


# -- end to end: a local task through TaskManager and simple_evaluate ------------------------------------


def test_local_parquet_and_json_tasks_end_to_end(tmp_path: Path) -> None:
    from lmms_eval import simple_evaluate

    tasks_dir = tmp_path / "my_tasks"
    (tasks_dir / "data").mkdir(parents=True)
    datasets.Dataset.from_dict(
        {"question": [f"What is {i} + 1?" for i in range(6)], "answer": [str(i + 1) for i in range(6)]}
    ).to_parquet(str(tasks_dir / "data" / "test.parquet"))
    write_jsonl(
        tasks_dir / "data" / "qa.jsonl", [{"question": f"q{i}", "answer": f"a{i}", "n": i} for i in range(5)]
    )
    (tasks_dir / "utils.py").write_text(
        textwrap.dedent(
            """
            import datasets

            def keep_even(docs):
                assert isinstance(docs, datasets.Dataset), type(docs)
                return docs.filter(lambda doc: doc["n"] % 2 == 0)
            """
        )
    )
    common = textwrap.dedent(
        """
        test_split: test
        output_type: generate_until
        doc_to_text: "{{question}}"
        doc_to_target: answer
        metric_list:
          - metric: exact_match
            aggregation: mean
            higher_is_better: true
        """
    )
    (tasks_dir / "local_parquet.yaml").write_text(
        "task: local_parquet\ndataset_path: parquet\ndataset_kwargs:\n  data_files:\n    test: data/test.parquet\n"
        + common
    )
    (tasks_dir / "local_json.yaml").write_text(
        "task: local_json\ndataset_path: json\ndataset_kwargs:\n  data_files:\n    test: data/qa.jsonl\n"
        "process_docs: !function utils.keep_even\n" + common
    )
    manager = TaskManager(include_path=str(tmp_path))
    results = simple_evaluate(
        model="dummy",
        model_args="answer_field=answer",
        tasks=["local_parquet", "local_json"],
        task_manager=manager,
        log_samples=True,
        output_path=str(tmp_path / "out"),
    )
    assert results["results"]["local_parquet"]["exact_match,none"] == 1.0
    assert results["results"]["local_json"]["exact_match,none"] == 1.0
    assert results["n-samples"]["local_parquet"]["effective"] == 6
    assert results["n-samples"]["local_json"]["effective"] == 3  # process_docs kept n = 0, 2, 4
    samples_file = next((tmp_path / "out").glob("*/*_samples_local_json.jsonl"))
    samples = [json.loads(line) for line in samples_file.read_text().splitlines()]
    assert [(s["input"], s["target"]) for s in samples] == [("q0", "a0"), ("q2", "a2"), ("q4", "a4")]
