"""Measure how much of the published lmms-eval task library loads through ``--include_path``.

Downloads the published wheel (``pip download lmms-eval==<version> --no-deps``) into a temporary
folder, unpacks its ``lmms_eval/tasks`` tree and, with our ``TaskManager(include_path=<tree>)``,
indexes every task and group name and builds each one (config validated, ``!function`` imported,
no dataset downloaded). Prints the counts, the share, and the failure causes by size.

The published package itself loads the names whose utils import with its own dependencies. A name
that fails here only because it imports an optional module outside the published core dependencies
(``soundfile``, ``editdistance``, ``spacy``, ...; :data:`NOT_CORE`), or whose YAML names a
function its ``utils.py`` lacks, fails there too, so the share is taken over the other names.
``--published-count N`` compares with a count measured by running the published package, and
``--published-names FILE`` (a JSON list of the names it loads) name by name, listing the names it
loads that fail here (see ``bench/README.md``). ``--json`` prints everything, each failure with its
error. Run: ``python bench/bench_published_tree.py [--json]``.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

# optional modules the tree imports that are not among the published package's core dependencies
NOT_CORE = (
    "soundfile",
    "editdistance",
    "spacy",
    "rouge",
    "Levenshtein",
    "azure",
    "pdf2image",
    "more_itertools",
    "decord",
    "librosa",
    "word2number",
    "jieba",
    "anls",
    "langdetect",
    "FlagEmbedding",
    "bleurt_pytorch",
    "geopy",
    "bs4",
    "apted",
    "pylatexenc",
    "immutabledict",
    "rapidfuzz",
    "matplotlib",
    "skimage",
    "reka",
    "vllm",
    "playwright",
    "pronouncing",
    "requests_cache",
    "unidecode",
    "pywsd",
    "sam2",
    "qa_metrics",
    "capture_metric",
    "rouge_score",
    "shapely",
    "func_timeout",
    "sglang",
    "distance",
    "fitz",
    "duckduckgo_search",
    "langchain_community",
    "opencc",
    "zhconv",
)
_MISSING = re.compile(r"it imports '([\w.]+)', which is not installed")


def fetch_tree(version: str, folder: Path) -> Path:
    """Download the published wheel into ``folder`` and unpack it; return its ``lmms_eval/tasks``."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            f"lmms-eval=={version}",
            "--no-deps",
            "-q",
            "-d",
            str(folder),
        ],
        check=True,
    )
    wheel = next(folder.glob("lmms_eval-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(folder / "unpacked")
    return folder / "unpacked" / "lmms_eval" / "tasks"


def measure(tree: Path) -> dict[str, object]:
    """Index and load every task/group name defined under ``tree``."""
    import logging

    from lmms_eval.tasks import TaskManager

    logging.disable(logging.WARNING)
    manager = TaskManager(include_path=str(tree), use_cache=False)
    root = str(tree.resolve())
    names = sorted(
        n for n, e in manager.index.entries.items() if e.kind != "tag" and e.path and e.path.startswith(root)
    )
    failed: dict[str, str] = {}
    for name in names:
        try:
            manager._loader.load(name)
        except Exception as exc:  # every failure is counted, by cause
            failed[name] = f"{type(exc).__name__}: {exc}"
    not_core = {n for n, e in failed.items() if _fails_in_published_too(e)}
    comparable = len(names) - len(not_core)
    loaded = len(names) - len(failed)
    causes = collections.Counter(_cause(e) for n, e in failed.items() if n not in not_core)
    return {
        "indexed": len(names),
        "tags": len(manager.all_tags),
        "duplicates": sorted(manager.index.duplicates),
        "loaded": loaded,
        "failed_optional_dependency": len(not_core),
        "comparable": comparable,
        "share": loaded / comparable if comparable else 0.0,
        "causes": causes.most_common(25),
        "failed": failed,
    }


def compare_with_published(result: dict[str, object], names_file: str) -> dict[str, str]:
    """Add how many of the names the published package loads (a JSON list in ``names_file``) we
    load, and which we do not, with our error for each (returned too)."""
    with open(names_file, encoding="utf-8") as handle:
        published = set(json.load(handle))
    failed: dict[str, str] = result["failed"]  # type: ignore[assignment]
    missing = {name: failed[name] for name in sorted(published & set(failed))}
    result["published_loaded"] = len(published)
    result["published_loaded_here"] = len(published) - len(missing)
    result["published_share"] = 1 - len(missing) / len(published) if published else 0.0
    result["published_missing"] = missing
    return missing


def _fails_in_published_too(error: str) -> bool:
    """A missing optional non-core module, or a ``!function`` naming a function its file lacks
    (the published package raises the same AttributeError)."""
    found = _MISSING.search(error)
    if found:
        return found.group(1).split(".")[0] in NOT_CORE
    return "has no attribute" in error and "!function" in error


def _cause(error: str) -> str:
    found = _MISSING.search(error)
    if found:
        return f"missing module {found.group(1)}"
    return re.sub(r"/\S+", "<path>", error)[:120]


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--version", default="0.7.3")
    parser.add_argument("--tree", help="an unpacked published tasks folder (skips the download)")
    parser.add_argument("--published-count", type=int, help="names the published package loads itself")
    parser.add_argument(
        "--published-names",
        help="a JSON list of the names the published package loads (compared name by name)",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON (with every failure)")
    args = parser.parse_args()
    # what the published tasks expect of a user's environment: some read $HF_HOME or build an
    # OpenAI client (which wants a key) when their utils.py is imported; nothing is downloaded
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HOME", os.path.join(os.path.expanduser("~"), ".cache", "huggingface"))
    os.environ.setdefault("OPENAI_API_KEY", "sk-placeholder")
    os.environ.setdefault("Deepseek_API", "sk-placeholder")  # phyx builds a judge client at import
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(args.tree) if args.tree else fetch_tree(args.version, Path(tmp))
        result = measure(tree)
    if args.published_count:
        result["share_of_published"] = result["loaded"] / args.published_count  # type: ignore[operator]
    missing = compare_with_published(result, args.published_names) if args.published_names else None
    if args.json:
        print(json.dumps(result))
        return 0
    print(
        f"lmms-eval {args.version} task tree: {result['indexed']} task/group names indexed, {result['tags']} tags"
    )
    print(
        f"loaded: {result['loaded']}; failing for a published-side reason (optional non-core module, function missing from its utils.py): {result['failed_optional_dependency']}"
    )
    print(f"share of comparable names loaded: {result['share']:.1%}")
    if "share_of_published" in result:
        print(f"loaded / published count: {result['share_of_published']:.1%}")
    if missing is not None:
        published = result["published_loaded"]
        here = result["published_loaded_here"]
        share = result["published_share"]
        print(f"of the {published} names the published package loads, loaded here: {here} ({share:.1%})")
        for name, error in missing.items():
            print(f"  not loaded: {name}: {_cause(error)}")
    for cause, count in result["causes"]:  # type: ignore[attr-defined]
        print(f"  {count:4d}  {cause}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
