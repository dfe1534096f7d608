"""Regenerate the benchmark table in docs/benchmarks.md from the bundled tasks' metadata.

Usage: python scripts/gen_benchmark_table.py [--check]

``--check`` exits 1 (and changes nothing) when the page is out of date.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

from lmms_eval.tasks.catalog import benchmark_rows, builtin_manager, render_markdown, splice

PAGE = pathlib.Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"


def main() -> int:
    parser = argparse.ArgumentParser(description="Regenerate the benchmark table in docs/benchmarks.md")
    parser.add_argument("--check", action="store_true", help="only report whether the page is current")
    args = parser.parse_args()
    page = PAGE.read_text(encoding="utf-8")
    updated = splice(page, render_markdown(benchmark_rows(builtin_manager())), str(PAGE))
    if args.check:
        if updated != page:
            print(f"{PAGE} is out of date; run: python scripts/gen_benchmark_table.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(updated, encoding="utf-8")
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
