"""Writers of ``{timestamp}_results.json`` and ``{timestamp}_samples_{task}.jsonl``.

Sample lines are appended as each document is scored, each with one ``write`` (a failed write is cut
back, so a samples file never ends in half a line); the results file is replaced atomically after
every task, so a crash loses nothing already scored. File names come from
:mod:`lmms_eval.results.layout`.

A sample line is written as given (a :class:`~lmms_eval.results.samples.SampleRecord` or a mapping
in its layout), without validation, so logging samples costs what the JSON encoding costs. The
results file is validated against :class:`~lmms_eval.results.schema.ResultsFile` each time it is
written; a file that does not validate is still written (no scores are lost) and the problem is
logged as an error naming the key.

An output folder that cannot be written is a :class:`~lmms_eval.errors.ConfigError` when the writer
is made (:func:`check_output_path` runs the same check earlier). A write that fails during the run
(disk full, file too large) does not stop the evaluation: the writer keeps the first error in
:attr:`OutputWriter.error`, logs it once and writes nothing more.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import tempfile
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from lmms_eval.errors import ConfigError
from lmms_eval.results.encoding import dumps, validation_problem
from lmms_eval.results.layout import results_file_name, samples_file_name, taken_stamps
from lmms_eval.results.samples import SampleRecord
from lmms_eval.results.schema import ResultsFile
from lmms_eval.results.versions import SCHEMA_VERSION
from lmms_eval.utils import file_timestamp, redact

logger = logging.getLogger(__name__)

__all__ = ["OutputWriter", "check_output_path", "dumps"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _reason(exc: OSError, path: str) -> str:
    """Why a path cannot be written, in words (``Permission denied``, ``it is a file, not a folder``)."""
    if exc.errno == errno.EEXIST or (exc.errno == errno.ENOTDIR and os.path.isfile(path)):
        return "it is a file, not a folder"
    if exc.errno == errno.ENOTDIR:
        return "a part of the path is a file, not a folder"
    return exc.strerror or str(exc)


def _output_folder(output_path: str) -> str:
    """The folder that ``--output_path`` names (a ``.json``/``.jsonl`` path means its parent)."""
    output_path = os.path.expanduser(output_path)
    if output_path.endswith((".json", ".jsonl")):
        output_path = os.path.dirname(output_path) or "."
    return output_path


def _unwritable(option_value: str, directory: str, exc: OSError, model_folder: bool) -> ConfigError:
    where = f"cannot write {directory}" if model_folder else "cannot write there"
    return ConfigError(f"--output_path {option_value}: {where}: {_reason(exc, directory)}")


def _probe(directory: str, option_value: str, model_folder: bool = False) -> None:
    """Create ``directory`` and write (and remove) a file in it, or raise a one-line ConfigError."""
    try:
        os.makedirs(directory, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=directory, prefix=".lmms-eval-probe-")
        try:
            os.write(fd, b"\n")  # a full disk fails here rather than at the first result
        finally:
            os.close(fd)
            os.unlink(probe)
    except OSError as exc:
        raise _unwritable(option_value, directory, exc, model_folder) from None


def check_output_path(output_path: str) -> str:
    """Pre-flight for ``--output_path``: create the folder and make sure a file can be written in it.

    Returns the folder; raises :class:`ConfigError` (``--output_path /x: cannot write there:
    Permission denied``) when it cannot be created or written. Cheap enough to call before any
    task or model is loaded.
    """
    folder = _output_folder(output_path)
    _probe(folder, output_path)
    return folder


def _model_folder(output_path: str, folder: str, name: str) -> str:
    """``folder/name``, refused (ConfigError) unless it resolves to a folder inside ``folder``."""
    if not name:
        return folder
    directory = os.path.join(folder, name)
    base, target = os.path.realpath(folder), os.path.realpath(directory)
    if os.path.isabs(name) or target == base or os.path.commonpath([base, target]) != base:
        raise ConfigError(
            f"--output_path {output_path}: the model folder name {name!r} would put files outside it "
            f"(it resolves to {target}); use a model name without '..', '/' or links out of the folder"
        )
    return directory


class OutputWriter:
    """Files of one run under ``{output_path}/{model_name_sanitized}/``.

    Raises :class:`ConfigError` when the folder cannot be created or written, or when
    ``model_name_sanitized`` would leave ``output_path``. Write failures during the run are kept
    in :attr:`error` instead of raised (see the module docstring).
    """

    def __init__(self, output_path: str, model_name_sanitized: str, timestamp: str | None = None) -> None:
        folder = check_output_path(output_path)
        self.directory = _model_folder(output_path, folder, model_name_sanitized)
        self.error: str | None = None
        self._samples: dict[str, int] = {}  # task -> file descriptor of its samples file
        self._sizes: dict[str, int] = {}  # task -> bytes of whole lines written so far
        _probe(self.directory, output_path, model_folder=self.directory != folder)
        try:
            self.timestamp = self._unique_stamp(timestamp or file_timestamp())
        except OSError as exc:
            raise _unwritable(output_path, self.directory, exc, self.directory != folder) from None

    def _unique_stamp(self, stamp: str) -> str:
        """``stamp``, or ``stamp_2``, ``stamp_3``... when a run in the same second already wrote files."""
        taken = taken_stamps(self.directory)
        candidate, n = stamp, 1
        while candidate in taken:
            n += 1
            candidate = f"{stamp}_{n}"
        # claim the stamp right away so a concurrent run in this second picks another one
        path = os.path.join(self.directory, results_file_name(candidate))
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            return self._unique_stamp(stamp)
        try:
            _write_all(fd, _STARTING)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(path)  # no empty, unparsable results file
            raise
        finally:
            os.close(fd)
        return candidate

    @property
    def results_path(self) -> str:
        return os.path.join(self.directory, results_file_name(self.timestamp))

    def samples_path(self, task_name: str) -> str:
        return os.path.join(self.directory, samples_file_name(self.timestamp, task_name))

    def _fail(self, path: str, exc: OSError) -> None:
        """Keep the first write error, log it once, and stop writing."""
        if self.error is None:
            self.error = (
                f"cannot write {path}: {exc.strerror or exc}; no further results or samples were "
                "written (the files hold everything written before)"
            )
            logger.error("%s", self.error)
        self.close_samples()

    def write_sample(self, task_name: str, record: SampleRecord | Mapping[str, Any]) -> None:
        """Append one JSON line; on a write error the file is cut back to its last whole line."""
        if self.error is not None:
            return
        path = self.samples_path(task_name)
        line = record.to_dict() if isinstance(record, SampleRecord) else record
        data = (dumps(redact(line)) + "\n").encode("utf-8")
        fd = self._samples.get(task_name)
        try:
            if fd is None:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
                self._samples[task_name], self._sizes[task_name] = fd, 0
            _write_all(fd, data)
        except OSError as exc:
            if fd is not None:
                _truncate(fd, self._sizes.get(task_name, 0))
            self._fail(path, exc)
            return
        self._sizes[task_name] += len(data)

    def close_samples(self, task_name: str | None = None) -> None:
        names = [task_name] if task_name else list(self._samples)
        for name in names:
            fd = self._samples.pop(name, None)
            if fd is not None:
                try:
                    os.close(fd)
                except OSError as exc:  # nothing is buffered here, but a network file system may object
                    logger.warning("closing %s: %s", self.samples_path(name), exc)

    def write_results(self, results: ResultsFile | Mapping[str, Any]) -> str:
        """Validate and atomically (re)write the results file; on a write error the previous one stays."""
        if self.error is not None:
            return self.results_path
        data = results.to_dict() if isinstance(results, ResultsFile) else results
        text = dumps(redact(data), indent=2)
        _check_results(text, self.results_path)
        payload = text.encode("utf-8")
        tmp: str | None = None
        try:
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".results-", suffix=".tmp")
            try:
                _write_all(fd, payload)
            finally:
                os.close(fd)
            os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600; results are as readable as samples
            os.replace(tmp, self.results_path)
        except OSError as exc:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
            self._fail(self.results_path, exc)
        return self.results_path

    def close(self) -> None:
        self.close_samples()


_STARTING = b'{"status": "starting"}'  # claims the stamp; a valid results file with no tasks yet


def _check_results(text: str, path: str) -> None:
    """Log (not raise) a results file that breaks the schema: the scores are written all the same."""
    try:
        ResultsFile.model_validate_json(text)
    except ValidationError as exc:
        logger.error(
            "%s does not match the results schema %s: %s", path, SCHEMA_VERSION, validation_problem(exc)
        )


def _write_all(fd: int, data: bytes) -> None:
    """Write ``data`` whole; a short write followed by an error raises that error."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        view = view[written:]


def _truncate(fd: int, size: int) -> None:
    try:
        os.ftruncate(fd, size)
        os.lseek(fd, size, os.SEEK_SET)
    except OSError as exc:
        logger.warning("could not cut a samples file back to its last whole line: %s", exc)
