"""Published parity of the wave-4 video and audio benchmarks: ``bench/parity_published.py`` run on
the cases of ``bench/parity/cases_wave4.py``.

Run: ``python bench/parity_wave4.py [--python /path/to/published/venv/bin/python] [--markdown FILE]``.
Without ``--python`` the published venv of ``parity_published.py`` is used (built on first use);
the audio cases also need ``editdistance``, ``jiwer``, ``zhconv`` and ``more_itertools`` there.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

import parity_published  # bench/ is sys.path[0]

sys.path.insert(0, str(Path(__file__).resolve().parent / "parity"))
cases_wave4 = importlib.import_module("cases_wave4")  # bench/parity/cases_wave4.py


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tasks", default="", help="comma-separated case names (default: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--python", type=Path, help="the published venv's python")
    parser.add_argument("--markdown", type=Path, help="also write the table to this file")
    args = parser.parse_args()
    python = args.python or parity_published.ensure_venv(
        Path(f"/tmp/lmms_eval_published_{parity_published.VERSION}")
    )
    parity_published.parity_cases.build = cases_wave4.build  # the wave-4 cases instead of the others
    names = [n for n in args.tasks.split(",") if n] or None
    rows = parity_published.compare(names, args.seed, python)
    table = parity_published.markdown(rows)
    print(table)
    if args.markdown:
        args.markdown.write_text(table)
    return 0 if all(r["agree"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
