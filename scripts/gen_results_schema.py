"""Regenerate docs/results_schema.json, the JSON Schema of the output files, from lmms_eval.results.

Usage: python scripts/gen_results_schema.py [--check]

``--check`` exits 1 (and changes nothing) when the file is out of date.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

from lmms_eval.results import json_schema

SCHEMA_FILE = pathlib.Path(__file__).resolve().parent.parent / "docs" / "results_schema.json"


def render() -> str:
    """The file's text: the schema as indented JSON, ending in a newline."""
    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description="Regenerate docs/results_schema.json")
    parser.add_argument("--check", action="store_true", help="only report whether the file is current")
    args = parser.parse_args()
    text = render()
    current = SCHEMA_FILE.read_text(encoding="utf-8") if SCHEMA_FILE.exists() else ""
    if args.check:
        if current != text:
            print(f"{SCHEMA_FILE} is out of date; run: python scripts/gen_results_schema.py", file=sys.stderr)
            return 1
        return 0
    SCHEMA_FILE.write_text(text, encoding="utf-8")
    print(f"wrote {SCHEMA_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
