"""One server job in its own process: ``python -m lmms_eval.entrypoints.worker <job.json> [<progress.json>]``.

The job file holds the keywords of :meth:`EvalSettings.from_keywords`. The progress file, when
named, is replaced (atomically, at most every half second) with where the run is; the server reads
it for ``GET /jobs/{id}`` and ``/events``. Exit status 0 on success.

Jobs with ``num_gpus > 1`` run as ``python -m torch.distributed.run --standalone --nproc_per_node N -m
lmms_eval.entrypoints.worker ...``: every rank answers its share of the documents, and only rank 0
writes the progress file and the results (see :mod:`lmms_eval.distributed`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lmms_eval.entrypoints.store import TRAINING_KEY

if TYPE_CHECKING:
    from lmms_eval.evaluator import ProgressCallback, RunProgress

PROGRESS_EVERY_S = 0.5


def progress_writer(path: Path) -> ProgressCallback:
    """A callback that keeps ``path`` holding the latest :class:`RunProgress` (with ``eta_s``).

    Progress is advisory: a write that fails (the state folder's disk full) is skipped, never
    fails the job."""
    last = 0.0

    def write(event: RunProgress) -> None:
        nonlocal last
        now = time.monotonic()
        edge = event.done == 0 or event.done == event.total
        if not edge and now - last < PROGRESS_EVERY_S:
            return
        last = now
        payload = asdict(event) | {"eta_s": event.eta_s(), "updated_at": time.time()}
        tmp = path.with_suffix(".tmp")
        try:
            tmp.write_text(json.dumps(payload), encoding="utf-8")
            os.replace(tmp, path)
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)

    return write


def _configure_logging() -> None:
    from lmms_eval.secrets import RedactingFilter

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname).1s %(name)s: %(message)s", "%H:%M:%S"))
    handler.addFilter(RedactingFilter())
    root = logging.getLogger("lmms_eval")
    root.setLevel(logging.INFO)
    root.addHandler(handler)


def main(argv: list[str]) -> int:
    from lmms_eval.distributed import is_main_process
    from lmms_eval.errors import LmmsEvalError
    from lmms_eval.secrets import redact_text

    main_rank = is_main_process()
    _configure_logging()
    with contextlib.suppress(OSError, ValueError):  # lower priority than the server (ServerArgs.job_nice)
        os.nice(int(os.environ.get("LMMS_EVAL_JOB_NICE", "0")))
    try:
        from lmms_eval.evaluator import run_evaluation
        from lmms_eval.settings import EvalSettings
        from lmms_eval.tasks import TaskManager

        keywords = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
        training = keywords.pop(TRAINING_KEY, None)
        settings = EvalSettings.from_keywords("job", **keywords)
        manager = TaskManager(include_path=settings.include_path, model_name=settings.model)
        progress = progress_writer(Path(argv[1])) if len(argv) > 1 and main_rank else None
        results = run_evaluation(settings, task_manager=manager, progress=progress)
    except LmmsEvalError as exc:
        _say(f"lmms-eval: error: {redact_text(str(exc))}")
        return 1
    if results.get("output_error"):
        _say(f"lmms-eval: error: {redact_text(str(results['output_error']))}")
        return 1
    if main_rank:
        if training and settings.output_path:
            record_training(settings.output_path, training)
        _say("job finished")
    return 0


def record_training(output_path: str, training: dict[str, Any]) -> None:
    """Write the job's training run (``training_run``, ``step``, ``metadata``) into the results
    file the run just wrote (its ``training`` key), replaced atomically; a failure is logged."""
    from lmms_eval.errors import LmmsEvalError
    from lmms_eval.results import ResultsFile, find_runs
    from lmms_eval.results.schema import TrainingInfo

    runs = [r for r in find_runs(output_path) if r.results is not None]
    if not runs:
        _say("lmms-eval: warning: no results file to record the training step in")
        return
    path = max(runs, key=lambda r: r.newness()).results
    assert path is not None
    try:
        results = ResultsFile.load(path)
        results.training = TrainingInfo.model_validate(training)
        tmp = path.with_name(f".{path.name}.training")
        tmp.write_text(results.dump(), encoding="utf-8")
        os.replace(tmp, path)
    except (OSError, ValueError, LmmsEvalError) as exc:
        _say(f"lmms-eval: warning: the training step was not recorded in {path.name}: {exc}")


def _say(line: str) -> None:
    """A line to the job's log (stderr); a log whose disk is full loses the line, not the job."""
    with contextlib.suppress(OSError):
        print(line, file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
