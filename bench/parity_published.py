"""Compare our scores with the published lmms-eval's, key by key, on synthetic data.

For each case of ``bench/parity/cases.py`` (synthetic docs in the published schema, one scripted
answer per doc, chosen where extraction rules differ), this scores the answers twice:

* **published**: ``bench/parity/published_side.py`` in a virtual environment with the published
  ``lmms-eval`` (its unmodified task code: YAML ``process_results``, filters and aggregations);
* **ours**: our task (TaskManager), through our evaluator's own stages: filters
  (``postprocess.apply_filters``), ``postprocess.score_task`` and ``aggregation.aggregate_task``,
  with the published-fallback random stream seeded as ``--seed`` seeds it.

It prints, per task, every published key with the published value, ours under that key and ours
under the ``<metric>_strict`` key (our stricter rule, when the task reports one), and exits 1 when
a published key differs. The published venv is built on first use (``--venv``, default
``/tmp/lmms_eval_published_<version>``): ``python -m venv`` then ``pip install --no-deps
lmms-eval==<version>`` plus the few packages its task utils import (``filelock==4.2.12``: 0.7.3
imports ``filelock._api``). Torch comes from this environment (a ``.pth`` line), as the published
task utils import it but scoring does not use it.

Run: ``python bench/parity_published.py [--tasks mmstar,mmmu_val] [--seed 0] [--markdown FILE]``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "parity"))

import cases as parity_cases  # noqa: E402

VERSION = "0.7.3"
PUBLISHED_DEPS = [
    "filelock==4.2.12",
    "loguru",
    "numpy",
    "pyyaml",
    "pydantic",
    "tenacity",
    "pillow",
    "datasets",
    "openai",
    "requests",
    "sacrebleu",
    "tqdm",
    "pytablewriter",
    "jsonlines",
    "sympy",
    "httpx",
    "python-dotenv",
    "Jinja2",
    "numexpr",
    "zss",
    "math-verify",
    "evaluate",
    "pycocoevalcap",
    "Levenshtein",
    "editdistance",
    "opencv-python-headless",
    "decord",  # the published LongVideoBench utils import it
]


class VenvError(RuntimeError):
    """The published package could not be installed (no registry, no Python venv, ...)."""


def ensure_venv(venv: Path, version: str = VERSION) -> Path:
    """The venv's python, building the venv with the published package when it lacks it."""
    python = venv / "bin" / "python"
    check = [
        str(python),
        "-c",
        "import importlib.metadata as m, sysconfig; site = sysconfig.get_paths()['purelib']; "
        f"assert [d.version for d in m.distributions(name='lmms-eval', path=[site])] == ['{version}']",
    ]
    if python.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return python
    steps = [
        [sys.executable, "-m", "venv", str(venv)],
        [str(python), "-m", "pip", "install", "-q", "--no-deps", f"lmms-eval=={version}"],
        [str(python), "-m", "pip", "install", "-q", *PUBLISHED_DEPS],
    ]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            raise VenvError(f"{' '.join(step[:4])} ... failed: {tail[0]}")
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # torch (imported by the published task utils, unused when scoring) from this environment
    Path(site, "zz_torch_from_parent.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def run_published(python: Path, cases: list[dict[str, Any]]) -> dict[str, Any]:
    env = {
        **os.environ,
        "OPENAI_API_KEY": "sk-parity-unused",  # the published MathVista utils need one at import
        "OPENAI_API_BASE": "http://127.0.0.1:9/v1",  # never reached: judge calls fail at once
        "HF_HOME": os.environ.get("HF_HOME", str(Path.home() / ".cache" / "huggingface")),
        "PYTHONPATH": "",
    }
    done = subprocess.run(
        [str(python), str(HERE / "parity" / "published_side.py")],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        env=env,
        cwd="/",
        timeout=900,
    )
    if done.returncode != 0:
        raise RuntimeError(f"published side failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout)


def run_ours(case: dict[str, Any], seed: int) -> dict[str, Any]:
    """Our scores for one case, through the evaluator's filter, scoring and aggregation stages."""
    from lmms_eval import aggregation, postprocess
    from lmms_eval.api.instance import Instance
    from lmms_eval.api.task import ConfigurableTask
    from lmms_eval.scoring import published
    from lmms_eval.tasks import TaskManager

    task = TaskManager().load_task_or_group([case["task"]])[case["task"]]
    if not isinstance(task, ConfigurableTask):
        raise TypeError(f"{case['task']} is a group; cases name one task")
    docs = case["docs"]
    task._eval_docs = docs  # the docs as given (already in the processed schema)
    task._scoring_docs = docs
    requests = []
    for doc_id, answer in enumerate(case["answers"]):
        meta = {"task": case["task"], "doc_id": doc_id, "repeats": 1, "split": case["split"]}
        request = Instance("generate_until", (None, {}, doc_id, case["task"], case["split"]), 0, meta)
        request.resps = [answer]
        requests.append(request)
    published.reseed(seed)
    postprocess.apply_filters(task, requests, None)
    result = postprocess.score_task(task, requests, False, None)
    scores = aggregation.aggregate_task(result, 0, seed)
    return {
        k: v
        for k, v in scores.items()
        if "," in k and not any(m in k for m in ("_stderr", "_ci_", "_n_clusters"))
    }


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def _strict_key(key: str) -> str:
    metric, _, filter_key = key.rpartition(",")
    return f"{metric}_strict,{filter_key}"


def compare(names: list[str] | None, seed: int, python: Path) -> list[dict[str, Any]]:
    """One row per published key: task, key, published value, ours, ours strict, agree."""
    cases = parity_cases.build(names, seed)
    published = run_published(python, cases)
    rows = []
    for case in cases:
        theirs = published[case["task"]]
        ours = run_ours(case, seed)
        if theirs["error"]:
            rows.append(
                {
                    "task": case["task"],
                    "key": "(raises)",
                    "published": theirs["error"],
                    "ours": None,
                    "strict": None,
                    "agree": False,
                }
            )
            continue
        for key, value in sorted(theirs["scores"].items()):
            row = {
                "task": case["task"],
                "key": key,
                "published": value,
                "ours": ours.get(key),
                "strict": ours.get(_strict_key(key)),
            }
            row["agree"] = _same(value, row["ours"])
            rows.append(row)
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    def cell(value: Any) -> str:
        if isinstance(value, float):
            return f"{value:.5g}"
        return "" if value is None else str(value)

    lines = [
        "| task | key | published | ours (published key) | ours (strict key) | agree |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['task']} | `{r['key']}` | {cell(r['published'])} | {cell(r['ours'])} | {cell(r['strict'])} | {'yes' if r['agree'] else '**no**'} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tasks", default="", help="comma-separated case names (default: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--venv", type=Path, default=Path(f"/tmp/lmms_eval_published_{VERSION}"))
    parser.add_argument("--markdown", type=Path, help="also write the table to this file")
    args = parser.parse_args(argv)
    python = ensure_venv(args.venv)
    rows = compare([t for t in args.tasks.split(",") if t] or None, args.seed, python)
    table = markdown(rows)
    sys.stdout.write(table)
    if args.markdown:
        args.markdown.write_text(table)
    return 0 if all(r["agree"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
