"""Output folders that cannot be written, disks that fill up during a run, model folders that escape.

* A folder that cannot be created or written is a one-line ``ConfigError`` when the writer is made
  (and from the :func:`check_output_path` pre-flight), before any model is built.
* A write that fails later (ENOSPC, EFBIG) never leaves half a sample line or a broken results file,
  is not raised: the first error is kept in ``writer.error`` and logged once, and nothing more is
  written. Tested on a real tiny tmpfs where mounting is permitted, and always by injecting the
  error and with ``RLIMIT_FSIZE`` in a subprocess.
* A model folder name that resolves outside ``--output_path`` is refused.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lmms_eval.api.model import lmms
from lmms_eval.cli import main
from lmms_eval.errors import ConfigError
from lmms_eval.results import writer as results_module
from lmms_eval.results.writer import OutputWriter, check_output_path

LOG_LINE = re.compile(r"^\d\d:\d\d:\d\d [DIWEC] ")  # a log record (configure_logging's format)


def _assert_files_whole(folder: Path) -> tuple[int, list[dict[str, Any]]]:
    """Every samples line parses and every results file is valid JSON; (sample lines, results)."""
    lines = 0
    for path in folder.rglob("*.jsonl"):
        text = path.read_text(encoding="utf-8")
        assert text == "" or text.endswith("\n"), f"{path} ends in half a line"
        for line in text.splitlines():
            json.loads(line)
            lines += 1
    found = [json.loads(p.read_text(encoding="utf-8")) for p in folder.rglob("*_results.json")]
    assert not list(folder.rglob(".results-*")), "a failed results temp file was left behind"
    return lines, found


def _record(i: int, size: int = 900) -> dict[str, Any]:
    return {"doc_id": i, "resps": ["x" * size], "target": "é"}


# -- folders that cannot be written --------------------------------------------------------------------


def test_output_path_that_is_a_file(tmp_path: Path) -> None:
    target = tmp_path / "plain.txt"
    target.write_text("not a folder", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        OutputWriter(str(target), "model")
    assert str(info.value) == f"--output_path {target}: cannot write there: it is a file, not a folder"
    with pytest.raises(ConfigError) as info:
        check_output_path(str(target / "below"))
    assert str(info.value) == (
        f"--output_path {target / 'below'}: cannot write there: a part of the path is a file, not a folder"
    )


def test_permission_denied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    if os.geteuid() != 0:
        locked.chmod(0o500)
    else:  # root writes anywhere: fail the write as the kernel would for another user
        real = tempfile.mkstemp

        def deny(*args: Any, **kwargs: Any) -> Any:
            if str(kwargs.get("dir", "")).startswith(str(locked)):
                raise PermissionError(errno.EACCES, "Permission denied")
            return real(*args, **kwargs)

        monkeypatch.setattr(tempfile, "mkstemp", deny)
    with pytest.raises(ConfigError) as info:
        OutputWriter(str(locked), "model")
    assert str(info.value) == f"--output_path {locked}: cannot write there: Permission denied"


def test_model_folder_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "model").write_text("", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        OutputWriter(str(tmp_path), "model")
    assert str(info.value) == (
        f"--output_path {tmp_path}: cannot write {tmp_path / 'model'}: it is a file, not a folder"
    )


def test_preflight_creates_the_folder_and_leaves_nothing_behind(tmp_path: Path) -> None:
    folder = tmp_path / "new" / "runs"
    assert check_output_path(str(folder)) == str(folder)
    assert folder.is_dir() and list(folder.iterdir()) == []
    assert check_output_path(str(folder / "results.json")) == str(folder)  # a file path means its folder


def test_cli_fails_before_the_model_is_built(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_model(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the model was built before the output folder was checked")

    monkeypatch.setattr(lmms, "create_from_arg_string", classmethod(no_model))
    target = tmp_path / "file"
    target.write_text("", encoding="utf-8")
    assert main(["--model", "dummy", "--tasks", "demo_qa", "--output_path", str(target)]) == 1
    err = [line for line in capsys.readouterr().err.strip().splitlines() if not LOG_LINE.match(line)]
    assert len(err) == 1 and err[0].startswith("lmms-eval: error: "), err  # one line, no traceback
    assert "output_path" in err[0] and str(target) in err[0]


# -- model folder names ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["..", "../elsewhere", "a/../..", ".", "/tmp/abs", "a/../../b"])
def test_model_folder_names_that_leave_output_path_are_refused(tmp_path: Path, name: str) -> None:
    out = tmp_path / "out"
    with pytest.raises(ConfigError) as info:
        OutputWriter(str(out), name)
    message = str(info.value)
    assert message.startswith(
        f"--output_path {out}: the model folder name {name!r} would put files outside it"
    )
    assert "\n" not in message
    assert not (tmp_path / "elsewhere").exists() and not (tmp_path / "b").exists()


def test_symlink_escape_is_refused(tmp_path: Path) -> None:
    out, outside = tmp_path / "out", tmp_path / "outside"
    out.mkdir()
    outside.mkdir()
    (out / "model").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ConfigError, match="would put files outside it"):
        OutputWriter(str(out), "model")
    assert list(outside.iterdir()) == []


def test_plain_names_and_a_symlinked_output_path_are_fine(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    writer = OutputWriter(str(tmp_path / "link"), "org__model-7B")
    assert Path(writer.directory).resolve() == real / "org__model-7B"
    assert OutputWriter(str(tmp_path / "plain"), "").directory == str(tmp_path / "plain")


# -- write failures during the run (injected) ------------------------------------------------------------


def _fail_after(monkeypatch: pytest.MonkeyPatch, good_writes: int, code: int = errno.ENOSPC) -> None:
    """Let ``good_writes`` writes through, then write half of the next one and fail with ``code``."""
    real = results_module._write_all
    calls = {"n": 0}

    def write_all(fd: int, data: bytes) -> None:
        calls["n"] += 1
        if calls["n"] <= good_writes:
            real(fd, data)
            return
        os.write(fd, data[: len(data) // 2])
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(results_module, "_write_all", write_all)


def test_sample_write_failure_is_cut_back_recorded_and_logged_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    writer = OutputWriter(str(tmp_path), "m")
    _fail_after(monkeypatch, 3)
    with caplog.at_level(logging.ERROR, logger="lmms_eval.results.writer"):
        for i in range(10):
            writer.write_sample("task", _record(i))  # never raises
        writer.write_results({"results": {}})  # stopped: a no-op
        writer.close()
    path = writer.samples_path("task")
    assert writer.error == (
        f"cannot write {path}: No space left on device; no further results or samples were written "
        "(the files hold everything written before)"
    )
    assert len([r for r in caplog.records if r.levelno == logging.ERROR]) == 1
    lines, found = _assert_files_whole(tmp_path)
    assert lines == 3
    assert found == [{"status": "starting"}]


def test_results_write_failure_keeps_the_previous_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = OutputWriter(str(tmp_path), "m")
    writer.write_results({"results": {"a": {"acc,none": 1.0}}, "status": "running"})
    _fail_after(monkeypatch, 0, errno.EFBIG)
    assert writer.write_results({"results": {"a": {}, "b": {}}}) == writer.results_path
    assert writer.error is not None and writer.error.startswith(
        f"cannot write {writer.results_path}: File too large"
    )
    _, found = _assert_files_whole(tmp_path)
    assert found == [{"results": {"a": {"acc,none": 1.0}}, "status": "running"}]


def test_a_full_disk_during_a_cli_run_still_prints_the_scores(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    _fail_after(monkeypatch, 6)  # the results file claimed at the start, then five sample lines
    args = ["--model", "dummy", "--tasks", "demo_qa", "--limit", "20", "--bootstrap_iters", "0"]
    main([*args, "--output_path", str(tmp_path), "--log_samples"])  # the exit status is the CLI's business
    assert "|demo_qa|" in capsys.readouterr().out  # the table of the scores computed
    assert [r.getMessage() for r in caplog.records if "No space left on device" in r.getMessage()]
    lines, found = _assert_files_whole(tmp_path)
    assert lines == 5 and found == [{"status": "starting"}]


# -- write failures on a real file system -----------------------------------------------------------------


_WRITER_SCRIPT = textwrap.dedent(
    """
    import json, resource, signal, sys
    from lmms_eval.results.writer import OutputWriter

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
    resource.setrlimit(resource.RLIMIT_FSIZE, (20000, 20000))
    samples = OutputWriter(sys.argv[1], "samples")
    for i in range(100):
        samples.write_sample("task", {"doc_id": i, "resps": ["x" * 900]})
    samples.close()
    results = OutputWriter(sys.argv[1], "results")
    results.write_results({"status": "running", "results": {}})
    results.write_results({"results": {"big": "y" * 30000}})
    print(json.dumps({"samples": samples.error, "results": results.error}))
    """
)


def test_file_size_limit_in_a_subprocess(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _WRITER_SCRIPT, str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    errors = json.loads(done.stdout.strip().splitlines()[-1])
    assert errors["samples"].startswith("cannot write ") and "File too large" in errors["samples"]
    assert errors["results"].startswith("cannot write ") and "File too large" in errors["results"]
    lines, found = _assert_files_whole(tmp_path)
    assert 10 <= lines < 100
    assert {"status": "running", "results": {}} in found
    assert all(os.path.getsize(p) <= 20000 for p in tmp_path.rglob("*.jsonl"))


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs (root only; skipped where mounting is not permitted)."""
    yield from _mount(tmp_path / "disk", "size=64k")


def _mount(where: Path, options: str) -> Iterator[Path]:
    where.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode(errors='replace').strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_real_full_disk_while_writing_samples(tiny_disk: Path) -> None:
    writer = OutputWriter(str(tiny_disk), "m")
    writer.write_results({"status": "running", "results": {}})
    for i in range(200):
        writer.write_sample("task", _record(i, 700))
    writer.close()
    assert writer.error is not None and "No space left on device" in writer.error
    lines, found = _assert_files_whole(tiny_disk)
    assert 10 < lines < 200 and found == [{"status": "running", "results": {}}]


def test_real_full_disk_while_writing_results(tiny_disk: Path) -> None:
    writer = OutputWriter(str(tiny_disk), "m")
    writer.write_results({"status": "running", "results": {}})
    writer.write_results({"results": {"big": "z" * 200_000}})  # more than the disk holds
    assert writer.error is not None and writer.error.startswith(
        f"cannot write {writer.results_path}: No space"
    )
    assert _assert_files_whole(tiny_disk)[1] == [{"status": "running", "results": {}}]


def test_real_read_only_folder(tmp_path: Path) -> None:
    for disk in _mount(tmp_path / "ro", "ro,size=16k"):
        with pytest.raises(ConfigError) as info:
            OutputWriter(str(disk / "runs"), "m")
        assert str(info.value) == f"--output_path {disk / 'runs'}: cannot write there: Read-only file system"


def test_full_disk_at_the_start_is_a_config_error(tiny_disk: Path) -> None:
    with contextlib.suppress(OSError), open(tiny_disk / "filler", "wb") as filler:
        while True:
            filler.write(b"\0" * 4096)
            filler.flush()
    with pytest.raises(ConfigError) as info:
        OutputWriter(str(tiny_disk), "m")
    assert str(info.value) == f"--output_path {tiny_disk}: cannot write there: No space left on device"
    assert sorted(p.name for p in tiny_disk.rglob("*")) == ["filler"]  # nothing half made is left
