"""The response cache cannot lose data: ``cache clear``/``prune`` only touch our folders and files and
never a running evaluation's answers; keys follow the model's content; answers finished before
Ctrl-C are kept."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import lmms_eval
from lmms_eval import inference
from lmms_eval.api.instance import Instance
from lmms_eval.api.task import ConfigurableTask
from lmms_eval.caching import (
    CacheEntry,
    CacheError,
    NotACacheError,
    ResponseCache,
    ResponseCacheSession,
    _files,
    clear_cache,
    content,
    keys,
    model_content_fingerprint,
)
from lmms_eval.cli import main
from lmms_eval.models.chat.dummy import DummyChat
from lmms_eval.models.hf.backend import DEMO_FOLDER
from lmms_eval.tasks import TaskManager


def load_task(name: str, manager: TaskManager | None = None) -> ConfigurableTask:
    task = (manager or TaskManager()).load_task_or_group([name])[name]
    assert isinstance(task, ConfigurableTask)
    return task


def _evaluate(model_args: str, cache: Path, model: str = "dummy", limit: int = 12) -> dict[str, Any]:
    return lmms_eval.simple_evaluate(
        model=model,
        model_args=model_args,
        tasks=["demo_qa"],
        limit=limit,
        use_cache=str(cache),
        show_progress=False,
        bootstrap_iters=0,
    )


def _entry(key: str, task: str = "t") -> CacheEntry:
    return CacheEntry(key, "generate_until", task, 0, 0, 0, "m", "fp", {"text": key})


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _cache_with_answers(folder: Path, count: int = 3) -> None:
    with ResponseCache(folder) as cache:
        cache.put_many([_entry(f"k{i}") for i in range(count)])


# -- clear and prune touch only response caches, and only our files -----------------------------------


@pytest.mark.parametrize("action", [["clear"], ["prune", "--task", "t"], ["stats"]])
def test_a_folder_of_someones_files_is_refused_and_left_as_it_was(
    action: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / "projects" / "runs").mkdir(parents=True)
    (home / "notes.txt").write_text("mine")
    (home / "projects" / "runs" / "exp1.db").write_bytes(b"my results")
    (home / "runs").mkdir()
    (home / "runs" / "thesis.tex").write_text("draft")  # a runs/ folder that is not ours
    before = _snapshot(home)
    monkeypatch.setenv("HOME", str(home))
    assert main(["cache", *action, "--path", "~"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"lmms-eval: error: {home} is not a response cache") and err.count("\n") == 1
    assert _snapshot(home) == before and not (home / "cache.db").exists()


@pytest.mark.parametrize("action", [["clear"], ["prune", "--model", "m"], ["stats"]])
def test_a_cache_db_that_is_not_ours_is_refused(
    action: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "app"
    folder.mkdir()
    db = sqlite3.connect(folder / "cache.db")
    db.execute("CREATE TABLE users (name TEXT)")
    db.execute("INSERT INTO users VALUES ('ada')")
    db.commit()
    db.close()
    before = _snapshot(folder)
    assert main(["cache", *action, "--path", str(folder)]) == 1
    err = capsys.readouterr().err
    assert f"{folder} is not a response cache: its cache.db holds other tables (users)" in err
    assert _snapshot(folder) == before and not (folder / "runs").exists()


def test_a_text_file_named_cache_db_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "cache.db").write_text("not a database")
    assert main(["cache", "clear", "--path", str(tmp_path)]) == 1
    assert "its cache.db is not an SQLite database" in capsys.readouterr().err
    assert (tmp_path / "cache.db").read_text() == "not a database"


def test_use_cache_refuses_someone_elses_database_without_changing_it(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "cache.db")
    db.execute("CREATE TABLE t (x)")
    db.commit()
    db.close()
    before = _snapshot(tmp_path)
    with pytest.raises(NotACacheError, match="is not a response cache"):
        ResponseCache(tmp_path)
    assert _snapshot(tmp_path) == before and not (tmp_path / "runs").exists()


def test_clear_removes_only_the_files_the_cache_wrote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "cache"
    _cache_with_answers(folder)
    (folder / "README.md").write_text("keep me")
    (folder / "runs" / "notes.txt").write_text("keep me too")
    (folder / "runs" / "otherhost-1-deadbeef.corrupt").write_bytes(b"x")  # a damaged run moved aside
    (folder / "runs" / "otherhost-2-0badcafe.db").write_bytes(b"y")  # left by a killed run, long ago
    old = time.time() - 3600
    os.utime(folder / "runs" / "otherhost-2-0badcafe.db", (old, old))
    (folder / ".merge.lock.stale-12345678").mkdir()
    assert main(["cache", "clear", "--path", str(folder)]) == 0
    assert "removed 4 file(s)" in capsys.readouterr().out  # cache.db, 2 run files, stale lock
    left = sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))
    assert left == ["README.md", "runs", "runs/notes.txt"]


def test_a_damaged_cache_db_of_ours_can_still_be_cleared(tmp_path: Path) -> None:
    _cache_with_answers(tmp_path)
    (tmp_path / "cache.db").write_bytes(b"garbage" * 100)
    assert [p.name for p in clear_cache(tmp_path)] == ["cache.db"]


def test_a_missing_folder_has_nothing_to_clear(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cache", "clear", "--path", str(tmp_path / "nope")]) == 0
    assert "no response cache at" in capsys.readouterr().out and not (tmp_path / "nope").exists()


def test_wait_must_be_a_number_of_seconds(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["cache", "clear", "--wait", "soon"])
    assert "expected a number of seconds >= 0, got 'soon'" in capsys.readouterr().err


def test_cache_db_removed_under_an_open_cache_is_reopened_not_lost(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)  # open, but holding no run file yet
    clear_cache(tmp_path)
    cache.put(_entry("late"))  # the run file is created now; cache.db is opened again
    cache.close()
    with ResponseCache(tmp_path) as again:
        assert again.get_many(["late"]) == {"late": {"text": "late"}}


# -- a running evaluation holds the cache ---------------------------------------------------------------

_HOLDER = textwrap.dedent(
    """
    import sys
    from lmms_eval.caching import CacheEntry, ResponseCache, ResponseCacheSession
    path, count = sys.argv[1], int(sys.argv[2])
    cache = ResponseCache(path)
    session = ResponseCacheSession(cache, "holder")
    cache.put_many([
        CacheEntry(f"h{i}", "generate_until", "held" if i % 2 else "other", i, 0, 0, "holder",
                   session.model_fp, {"text": f"a{i}"})
        for i in range(count)
    ])
    print("ready", flush=True)
    sys.stdin.readline()  # until the test says stop (or kills us)
    session.close()
    print("closed", flush=True)
    """
)


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """A second process evaluating with a cache in ``tmp_path/cache``: 10 answers stored, still running."""
    _cache_with_answers(tmp_path / "cache", count=2)
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(tmp_path / "cache"), "10"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.communicate(timeout=30)


def _stop(proc: subprocess.Popen[str]) -> str:
    out, _ = proc.communicate("stop\n", timeout=60)
    assert proc.returncode == 0
    return out


def _run_files(folder: Path) -> list[Path]:
    return sorted((folder / "runs").glob("*.db"))


@pytest.mark.parametrize("action", [["clear"], ["prune", "--task", "held"]])
def test_clear_and_prune_refuse_while_an_evaluation_runs(
    action: list[str],
    holder: subprocess.Popen[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    folder = tmp_path / "cache"
    monkeypatch.setattr(_files, "RUN_FILE_GRACE_S", 0.0)  # decide by the run file's lock alone
    (run_file,) = _run_files(folder)
    assert _files.run_file_locked(run_file)
    before = sorted(folder.rglob("*"))
    assert main(["cache", *action, "--path", str(folder)]) == 1
    err = capsys.readouterr().err
    assert f"is in use by 1 running evaluation: process {holder.pid} on host {_files.HOST}" in err
    assert "nothing was changed" in err and "--wait SECONDS" in err and err.count("\n") == 1
    assert sorted(folder.rglob("*")) == before
    _stop(holder)  # its answers are merged, none lost
    with ResponseCache(folder) as cache:
        assert len(cache) == 12 and _run_files(folder) == []


def _cli_in_background(args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "lmms_eval", "cache", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for_waiting(proc: subprocess.Popen[str]) -> None:
    assert proc.stderr is not None
    line = proc.stderr.readline()
    assert "waiting up to 60 s for process" in line, line
    assert proc.poll() is None


def test_clear_with_wait_clears_after_the_evaluation_ended(
    holder: subprocess.Popen[str], tmp_path: Path
) -> None:
    folder = tmp_path / "cache"
    clear = _cli_in_background(["clear", "--path", str(folder), "--wait", "60"])
    _wait_for_waiting(clear)
    assert (folder / "cache.db").exists() and len(_run_files(folder)) == 1  # nothing removed yet
    assert "closed" in _stop(holder)
    out, err = clear.communicate(timeout=60)
    assert clear.returncode == 0, err
    assert "removed" in out and not (folder / "cache.db").exists() and _run_files(folder) == []


def test_prune_with_wait_prunes_after_the_answers_were_merged(
    holder: subprocess.Popen[str], tmp_path: Path
) -> None:
    folder = tmp_path / "cache"
    prune = _cli_in_background(["prune", "--path", str(folder), "--task", "held", "--wait", "60"])
    _wait_for_waiting(prune)
    _stop(holder)
    out, err = prune.communicate(timeout=60)
    assert prune.returncode == 0, err
    assert "removed 5 entries" in out  # the 5 'held' answers of the run, merged first
    with ResponseCache(folder) as cache:
        assert {r["task"]: r["entries"] for r in cache.stats()} == {"other": 5, "t": 2}


def test_wait_gives_up_with_the_holder_named(holder: subprocess.Popen[str], tmp_path: Path) -> None:
    with pytest.raises(
        CacheError, match=f"still in use after 0.5 s by 1 running evaluation: process {holder.pid}"
    ):
        clear_cache(tmp_path / "cache", wait=0.5)
    assert (tmp_path / "cache" / "cache.db").exists()


@pytest.mark.parametrize("action", ["clear", "prune"])
def test_leftovers_of_a_killed_evaluation_are_merged_or_cleared(
    action: str, holder: subprocess.Popen[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "cache"
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=30)
    (run_file,) = _run_files(folder)
    assert not _files.run_file_locked(run_file)
    if action == "clear":
        assert main(["cache", "clear", "--path", str(folder)]) == 0
        assert not (folder / "cache.db").exists() and _run_files(folder) == []
        return
    assert main(["cache", "prune", "--path", str(folder), "--task", "held"]) == 0
    assert "removed 5 entries" in capsys.readouterr().out
    with ResponseCache(folder) as cache:
        assert len(cache) == 7 and _run_files(folder) == []


# -- the key follows the model's content --------------------------------------------------------------


def _checkpoint(folder: Path, weights: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text('{"model_type": "tiny"}')
    (folder / "tokenizer.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(weights)
    return folder


def test_rewritten_weights_at_the_same_path_miss_and_unchanged_ones_hit(tmp_path: Path) -> None:
    ckpt = _checkpoint(tmp_path / "ckpt", b"\x01" * 4096)
    args = f"answer_field=answer,pretrained={ckpt}"
    first = _evaluate(args, tmp_path / "cache")
    assert first["cache"]["stored"] == 12 and first["cache"]["content_sources"] == ["pretrained"]
    again = _evaluate(args + ",batch_size=4,device=cpu", tmp_path / "cache")
    assert again["cache"]["hits"] == 12
    assert again["cache"]["content_fingerprint"] == first["cache"]["content_fingerprint"]

    stat = (ckpt / "model.safetensors").stat()
    (ckpt / "model.safetensors").write_bytes(b"\x02" * 4096)  # retrained: same size, same name
    os.utime(ckpt / "model.safetensors", ns=(stat.st_atime_ns, stat.st_mtime_ns))  # even the same mtime
    retrained = _evaluate(args, tmp_path / "cache")
    assert retrained["cache"]["hits"] == 0 and retrained["cache"]["misses"] == 12
    assert retrained["cache"]["model_fingerprint"] != first["cache"]["model_fingerprint"]


def test_large_weights_are_described_by_size_and_mtime_and_never_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(content, "SMALL_FILE_BYTES", 1024)
    ckpt = _checkpoint(tmp_path / "ckpt", b"\x01" * 4096)
    weights = ckpt / "model.safetensors"
    fp = model_content_fingerprint({"pretrained": str(ckpt)}).value
    stat = weights.stat()
    weights.write_bytes(b"\x02" * 4096)
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert model_content_fingerprint({"pretrained": str(ckpt)}).value == fp  # stat only: not read
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert model_content_fingerprint({"pretrained": str(ckpt)}).value != fp


def test_folders_are_walked_to_a_bounded_depth_and_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(5):
        (tmp_path / f"f{i}").write_text(str(i))
    (tmp_path / "a" / "b" / "c").mkdir(parents=True)
    (tmp_path / "a" / "b" / "c" / "deep.txt").write_text("x")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "index").write_text("x")
    fp = model_content_fingerprint({"pretrained": str(tmp_path)}).value
    for ignored in (tmp_path / "a" / "b" / "c" / "deep.txt", tmp_path / ".git" / "index"):
        ignored.write_text("changed")
    assert model_content_fingerprint({"pretrained": str(tmp_path)}).value == fp
    (tmp_path / "f0").write_text("changed")
    assert model_content_fingerprint({"pretrained": str(tmp_path)}).value != fp
    monkeypatch.setattr(content, "MAX_FILES", 2)
    fp = model_content_fingerprint({"pretrained": str(tmp_path)}).value
    (tmp_path / "f4").write_text("beyond the limit")
    assert model_content_fingerprint({"pretrained": str(tmp_path)}).value == fp


def test_rewritten_from_log_file_misses(tmp_path: Path) -> None:
    docs = load_task("demo_qa").eval_docs
    log = tmp_path / "logs" / "20260101_000000_samples_demo_qa.jsonl"
    log.parent.mkdir()

    def write(answer: Any) -> None:
        log.write_text("".join(json.dumps({"doc_id": i, "resps": [[answer(i)]]}) + "\n" for i in range(12)))

    write(lambda i: str(docs[i]["answer"]))
    first = _evaluate(f"logs={log}", tmp_path / "cache", model="from_log")
    assert first["cache"]["stored"] == 12 and first["cache"]["content_sources"] == ["logs"]
    assert _evaluate(f"logs={log}", tmp_path / "cache", model="from_log")["cache"]["hits"] == 12
    write(lambda i: "wrong")
    rewritten = _evaluate(f"logs={log}", tmp_path / "cache", model="from_log")
    assert rewritten["cache"]["hits"] == 0 and rewritten["cache"]["stored"] == 12
    assert rewritten["results"]["demo_qa"] != first["results"]["demo_qa"]  # the new answers were scored


def test_pretrained_demo_is_fingerprinted_as_the_bundled_folder() -> None:
    demo = model_content_fingerprint({"pretrained": "demo"})
    assert demo.value and demo.sources == ("pretrained",)
    assert demo == model_content_fingerprint({"pretrained": str(DEMO_FOLDER)})


def test_hub_id_in_the_local_cache_is_fingerprinted_by_its_snapshot_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    refs = tmp_path / "models--Org--Tiny" / "refs"
    refs.mkdir(parents=True)
    (refs / "main").write_text("1111111111111111111111111111111111111111")
    (refs / "v2").write_text("2222222222222222222222222222222222222222")
    main_fp = model_content_fingerprint({"pretrained": "Org/Tiny"})
    assert main_fp.value and main_fp.sources == ("pretrained",)
    assert model_content_fingerprint({"pretrained": "Org/Tiny", "revision": "v2"}).value != main_fp.value
    (refs / "main").write_text("3333333333333333333333333333333333333333")  # a new upload was fetched
    assert model_content_fingerprint({"pretrained": "Org/Tiny"}).value != main_fp.value
    assert model_content_fingerprint({"pretrained": "Org/NotCached", "model": "gpt-4o"}).value == ""


def test_speed_settings_and_secrets_do_not_change_the_key_and_are_not_stored(tmp_path: Path) -> None:
    ckpt = _checkpoint(tmp_path / "ckpt", b"\x01" * 64)
    key_file = tmp_path / "key.txt"  # a secret arg naming a file is not looked at either
    key_file.write_text("sk-first-key-aaaaaaaaaaaaaaaaaaaa")
    base = {"pretrained": str(ckpt), "api_key": str(key_file)}
    fp = keys.model_fingerprint("m", base, model_content_fingerprint(base).value)
    key_file.write_text("sk-rotated-key-bbbbbbbbbbbbbbbbbbbb")
    rotated = {**base, "api_key": "sk-rotated-key-bbbbbbbbbbbbbbbbbbbb", "batch_size": 8, "device": "cuda:1"}
    assert keys.model_fingerprint("m", rotated, model_content_fingerprint(rotated).value) == fp

    secret = "sk-abcdefghijklmnopqrstuvwxyz123456"
    model = DummyChat(answer_field="answer")
    requests, task_fps = _demo_requests(model, limit=3)
    with ResponseCache(tmp_path / "cache") as cache:
        session = ResponseCacheSession(cache, "m", {"pretrained": str(ckpt), "api_key": secret}, lm=model)
        inference.run_requests(model, requests, model_call=session.model_call(model, task_fps))
    assert session.counters.stored == 3 and secret not in json.dumps(session.summary())
    stored = b"".join(p.read_bytes() for p in (tmp_path / "cache").rglob("*") if p.is_file())
    assert secret.encode() not in stored and str(ckpt).encode() not in stored


class _Versioned(DummyChat):
    """A model that knows its own content version."""

    def __init__(self, version: str) -> None:
        super().__init__(answer_field="answer")
        self.version = version

    def content_fingerprint(self) -> str:
        return self.version


def test_a_model_own_content_fingerprint_takes_precedence(tmp_path: Path) -> None:
    ckpt = _checkpoint(tmp_path / "ckpt", b"\x01" * 64)
    with ResponseCache(tmp_path / "cache") as cache:
        v1 = ResponseCacheSession(cache, "m", {"pretrained": str(ckpt)}, lm=_Versioned("v1"))
        (ckpt / "model.safetensors").write_bytes(b"\x02" * 64)  # the model's word wins over the files
        again = ResponseCacheSession(cache, "m", {"pretrained": str(ckpt)}, lm=_Versioned("v1"))
        v2 = ResponseCacheSession(cache, "m", {"pretrained": str(ckpt)}, lm=_Versioned("v2"))
        given = ResponseCacheSession(cache, "m", {"pretrained": str(ckpt)}, content_fingerprint="v1")
        assert v1.model_fp == again.model_fp == given.model_fp != v2.model_fp
        assert v1.summary()["content_sources"] == ["model"]
        late = ResponseCacheSession(cache, "m", {"pretrained": str(ckpt)})  # told the model at model_call
        late.model_call(_Versioned("v2"), {})
        assert late.model_fp == v2.model_fp


def test_models_known_by_name_keep_their_old_keys() -> None:
    assert keys.KEY_VERSION == 1
    assert model_content_fingerprint({"model_version": "gpt-4o-mini", "api_key": "sk-x"}).value == ""
    assert keys.model_fingerprint("openai", {"model": "gpt-4o"}, "") == keys.model_fingerprint(
        "openai", {"model": "gpt-4o"}
    )


# -- answers finished before Ctrl-C are kept -------------------------------------------------------------


class _Interrupted(DummyChat):
    """Reports ``finish`` answers of a batch through the gate, then is interrupted."""

    def __init__(self, finish: int, batch_size: int = 8) -> None:
        super().__init__(answer_field="answer", batch_size=batch_size)
        self.finish = finish

    def generate_until(self, requests: list[Instance]) -> list[Any]:  # type: ignore[override]
        for request in requests[: self.finish]:
            self.gate.done(self._reply(request), request)
        raise KeyboardInterrupt

    def _reply(self, request: Instance) -> str:
        return f"answer {request.doc_id}"


def _demo_requests(model: DummyChat, limit: int) -> tuple[list[Instance], dict[str, str]]:
    task = load_task("demo_qa")
    model.task_dict["demo_qa"] = task.model_docs()
    return task.build_all_requests(chat=True, limit=limit), {"demo_qa": task.fingerprint()}


def test_answers_reported_before_ctrl_c_are_kept(tmp_path: Path) -> None:
    model = _Interrupted(finish=3)
    requests, task_fps = _demo_requests(model, limit=8)
    session = ResponseCacheSession(ResponseCache(tmp_path), "dummy", lm=model)
    with pytest.raises(KeyboardInterrupt):
        inference.run_requests(model, requests, model_call=session.model_call(model, task_fps))
    session.close()
    assert session.counters.stored == 3

    model = _Interrupted(finish=0)
    requests, task_fps = _demo_requests(model, limit=8)
    with ResponseCache(tmp_path) as cache:
        assert len(cache) == 3
        rerun = ResponseCacheSession(cache, "dummy", lm=model)
        call = rerun.model_call(model, task_fps)
        assert call("generate_until", requests[:3]) == ["answer 0", "answer 1", "answer 2"]
        with pytest.raises(KeyboardInterrupt):  # the others were not stored: asked again
            call("generate_until", requests[3:4])
        rerun.close()
    assert rerun.counters.hits == 3 and rerun.counters.stored == 0


def test_an_answer_of_a_request_repeated_in_the_batch_is_not_guessed(tmp_path: Path) -> None:
    model = _Interrupted(finish=1)
    requests, task_fps = _demo_requests(model, limit=2)
    with ResponseCache(tmp_path) as cache:
        session = ResponseCacheSession(cache, "dummy", lm=model)
        call = session.model_call(model, task_fps)
        with pytest.raises(KeyboardInterrupt):  # repeat 0 and 1 of doc 0, then doc 1
            call("generate_until", [requests[0], requests[0], requests[1]])
    assert session.counters.stored == 0
