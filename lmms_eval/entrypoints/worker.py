"""One server job in its own process: ``python -m lmms_eval.entrypoints.worker <job.json>``.

The JSON file holds the keywords of :meth:`EvalSettings.from_keywords`. Exit status 0 on success.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    from lmms_eval.errors import LmmsEvalError
    from lmms_eval.secrets import RedactingFilter, redact_text

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname).1s %(name)s: %(message)s", "%H:%M:%S"))
    handler.addFilter(RedactingFilter())
    root = logging.getLogger("lmms_eval")
    root.setLevel(logging.INFO)
    root.addHandler(handler)
    try:
        from lmms_eval.evaluator import run_evaluation
        from lmms_eval.settings import EvalSettings
        from lmms_eval.tasks import TaskManager

        keywords = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
        settings = EvalSettings.from_keywords("job", **keywords)
        manager = TaskManager(include_path=settings.include_path, model_name=settings.model)
        results = run_evaluation(settings, task_manager=manager)
    except LmmsEvalError as exc:
        print(f"lmms-eval: error: {redact_text(str(exc))}", file=sys.stderr)
        return 1
    if results.get("output_error"):
        print(f"lmms-eval: error: {redact_text(str(results['output_error']))}", file=sys.stderr)
        return 1
    print("job finished", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
