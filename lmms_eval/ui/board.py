"""The leaderboard and training-run views of the UI: payloads built from the runs under the logs
folder with :mod:`lmms_eval.leaderboard` (the module ``lmms-eval leaderboard`` prints), and the
eval server's jobs of a training run (``GET /jobs?training_run=``) as pending points."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lmms_eval.leaderboard import BoardRun, Leaderboard, build_leaderboard, to_csv, to_markdown
from lmms_eval.results.schema import ResultsFile
from lmms_eval.secrets import redact
from lmms_eval.ui.runs import Run, metric_rows
from lmms_eval.ui.security import Refused

IN_FLIGHT = ("queued", "running")


def board_runs(runs: Sequence[Run]) -> list[BoardRun]:
    """The runs with a readable results file, as the leaderboard takes them."""
    return [
        BoardRun(run.id, run.results, tuple(run.files.sample_files()))
        for run in runs
        if run.results is not None and run.results.results
    ]


def leaderboard(runs: Sequence[Run], baseline: str | None, correction: str) -> Leaderboard:
    if correction not in ("holm", "bh"):
        raise Refused(422, f"correction must be 'holm' or 'bh', got '{correction[:40]}'")
    return build_leaderboard(board_runs(runs), baseline or None, correction=correction)  # type: ignore[arg-type]


def export(board: Leaderboard, fmt: str, runs: Sequence[str], tasks: Sequence[str]) -> str:
    """The board as ``md`` or ``csv`` text (what the CLI prints), restricted to the rows and task
    columns shown (the marks stay those of the whole board's correction)."""
    if fmt not in ("md", "csv"):
        raise Refused(422, f"format must be 'md' or 'csv', got '{fmt[:40]}'")
    if runs:
        wanted = set(runs)
        board.rows = [r for r in board.rows if r.id in wanted]
    if tasks:
        board.tasks = [t for t in board.tasks if t in set(tasks)]
    return to_markdown(board) if fmt == "md" else to_csv(board)


def training_of(results: ResultsFile | None) -> tuple[str, int | None] | None:
    training = results.training if results else None
    if training is None or training.training_run is None:
        return None
    return training.training_run, training.step


def training_runs(runs: Sequence[Run]) -> list[dict[str, Any]]:
    """Every training run found in the results files: name, checkpoints evaluated, last step."""
    found: dict[str, list[int]] = {}
    for run in runs:
        training = training_of(run.results)
        if training is not None:
            found.setdefault(training[0], []).extend([training[1]] if training[1] is not None else [])
    return [
        {"name": name, "checkpoints": len(steps), "last_step": max(steps, default=None)}
        for name, steps in sorted(found.items())
    ]


def _point(step: int, run_id: str | None, status: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {"step": step, "run": run_id, "status": status, "metrics": rows}


def training_view(runs: Sequence[Run], name: str, jobs: list[dict[str, Any]] | None) -> dict[str, Any]:
    """The checkpoints of training run ``name``: one point per step from the results files, the
    server's completed jobs whose files are not in the logs folder, and its jobs in flight."""
    points: dict[int, dict[str, Any]] = {}
    for run in sorted(runs, key=lambda r: r.files.stamp):  # the newest evaluation of a step wins
        training = training_of(run.results)
        if training is None or training[0] != name or training[1] is None or run.results is None:
            continue
        rows = [
            {"task": task, **row} for task, entry in run.results.results.items() for row in metric_rows(entry)
        ]
        points[training[1]] = _point(training[1], run.id, "completed", rows)
    pending = []
    for job in jobs or []:
        step = job.get("step")
        if not isinstance(step, int):
            continue
        if job.get("status") in IN_FLIGHT:
            pending.append({"step": step, "status": job["status"], "job_id": job.get("job_id")})
        elif job.get("status") == "completed" and step not in points:
            points[step] = _point(step, None, "completed", list(job.get("scores") or []))
    if not points and not pending:
        raise Refused(404, f"no training run '{name}' in the logs folder or on the eval server")
    return redact(
        {
            "name": name,
            "points": [points[s] for s in sorted(points)],
            "pending": sorted(pending, key=lambda p: p["step"]),
            "failed": [
                {"step": j.get("step"), "job_id": j.get("job_id"), "error": j.get("error")}
                for j in jobs or []
                if j.get("status") == "failed"
            ],
            "server": jobs is not None,
        }
    )
