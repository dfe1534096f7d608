"""Benchmark ``lmms-eval tasks list`` over a generated tree of task YAMLs, and CLI import cost.

Generates ``--folders`` folders (default 200) of ``--tasks-per-folder`` task YAMLs (default 10, so
2,000 tasks) shaped like real lmms-eval task folders: a ``_default_template_yaml`` included by every
task, ``!function utils.x`` references, a ``utils.py``, a group YAML listing the folder's tasks,
tags, a few ``.yml`` folders, comment docstrings and long prompts (files of 1-3 KB), plus a handful
of suite groups of groups. Then times, as subprocesses:

* cold: ``lmms-eval tasks list --include_path <tree>`` with a fresh ``LMMS_EVAL_HOME`` (no index cache);
* warm: the same with the cache from a previous run (median of ``--warm-runs``);
* warm after editing one YAML (one header re-scanned);
* ``python -c "import lmms_eval"``, ``lmms-eval --help`` and ``lmms-eval tasks list`` (built-in tasks);

and checks that ``import lmms_eval``, ``--help`` and ``tasks list`` import none of torch,
transformers, datasets or pandas. Target: warm listing under 0.5 s. Run: ``python bench/bench_task_index.py``.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from _common import (  # bench/ is sys.path[0] when run as python bench/<name>.py
    HEAVY_MODULES,
    Stat,
    cli_command,
    fmt_s,
    heavy_imports,
    isolated_env,
    load_average,
    machine_line,
    print_table,
    run_timed,
    verdict,
)

WARM_TARGET_S = 0.5
FAMILIES = (
    "mmbench",
    "chartqa",
    "docvqa",
    "videomme",
    "mathvista",
    "scienceqa",
    "textvqa",
    "audiocaps",
    "seedbench",
    "mmmu",
)
SPLITS = ("val", "test", "dev", "mini", "full", "en", "cn", "hard", "easy", "cot")
LOREM = (
    "Look at the image carefully and reason about every visible detail before you answer. "
    "Consider the axes, the legend, the labels and any text that appears in the picture. "
    "If the question asks for a number, give only the number without units. "
)


@dataclass
class Tree:
    root: Path
    task_names: list[str] = field(default_factory=list)
    group_names: list[str] = field(default_factory=list)
    tag_names: set[str] = field(default_factory=set)
    yaml_files: int = 0
    total_bytes: int = 0

    def write(self, path: Path, text: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        if path.suffix in (".yaml", ".yml"):
            self.yaml_files += 1
            self.total_bytes += len(text.encode())


def _docstring(rng: random.Random, title: str, lines: int) -> str:
    body = "\n".join(f"# {LOREM[: rng.randint(60, 110)].strip()}" for _ in range(lines))
    return f"# {title}\n#\n{body}\n"


def _template(folder: str, output_type: str) -> str:
    return f"""# Shared settings of the {folder} tasks.
dataset_path: lmms-lab/{folder}
dataset_kwargs:
  token: true
  cache_dir: {folder}
output_type: {output_type}
doc_to_visual: !function utils.{folder}_doc_to_visual
doc_to_text: !function utils.{folder}_doc_to_text
doc_to_target: answer
generation_kwargs:
  max_new_tokens: 64
  temperature: 0
  top_p: 1.0
  num_beams: 1
  do_sample: false
  until: ["\\n\\n"]
process_results: !function utils.{folder}_process_results
metric_list:
  - metric: {folder}_score
    aggregation: !function utils.{folder}_aggregate
    higher_is_better: true
lmms_eval_specific_kwargs:
  default:
    pre_prompt: ""
    post_prompt: "\\nAnswer the question using a single word or phrase."
  qwen_vl:
    pre_prompt: ""
    post_prompt: " Answer:"
metadata:
  version: 0.0
"""


def _utils(folder: str) -> str:
    return f'''"""Helpers of the {folder} tasks (never imported by ``tasks list``)."""


def {folder}_doc_to_visual(doc):
    return [doc["image"].convert("RGB")]


def {folder}_doc_to_text(doc, lmms_eval_specific_kwargs=None):
    kwargs = lmms_eval_specific_kwargs or {{}}
    return f"{{kwargs.get('pre_prompt', '')}}{{doc['question']}}{{kwargs.get('post_prompt', '')}}"


def {folder}_process_results(doc, results):
    return {{"{folder}_score": float(results[0].strip().lower() == str(doc["answer"]).lower())}}


def {folder}_aggregate(results):
    return sum(results) / max(len(results), 1)
'''


def _task_yaml(rng: random.Random, folder: str, family: str, name: str, index: int) -> str:
    parts = [
        _docstring(rng, f"{name}: split {index} of {folder}", rng.randint(4, 14)),
        "include: _default_template_yaml\n",
        f"task: {name}\n",
        f'task_alias: "{folder} / {SPLITS[index % len(SPLITS)]}"\n',
    ]
    tags = [f"{family}_tasks"] + (["bench_even"] if index % 2 == 0 else [])
    parts.append(f"tag: {tags[0]}\n" if len(tags) == 1 else "tag:\n" + "".join(f"  - {t}\n" for t in tags))
    parts.append(f"test_split: {SPLITS[index % len(SPLITS)]}\n")
    if index % 3 == 0:
        parts.append(f"doc_to_text: !function utils.{folder}_doc_to_text\n")
    prompt = " ".join(LOREM for _ in range(rng.randint(1, 5)))
    parts.append(
        "lmms_eval_specific_kwargs:\n"
        "  default:\n"
        f'    pre_prompt: "{prompt.strip()}\\n"\n'
        '    post_prompt: "\\nAnswer with the option letter only."\n'
        "  gpt4v:\n"
        '    pre_prompt: ""\n'
        f"    post_prompt: >-\n      {LOREM.strip()}\n"
    )
    if index % 4 == 1:
        parts.append(
            "metric_list:\n"
            f"  - metric: {folder}_score\n"
            f"    aggregation: !function utils.{folder}_aggregate\n"
            "    higher_is_better: true\n"
            "  - metric: exact_match\n"
            "    aggregation: mean\n"
            "    higher_is_better: true\n"
            "    ignore_case: true\n"
        )
    return "".join(parts)


def _group_yaml(folder: str, tasks: list[str]) -> str:
    entries = "".join(
        f"  - task: {t}\n    num_fewshot: 0\n" if i == 0 else f"  - {t}\n" for i, t in enumerate(tasks)
    )
    return (
        f"# The {folder} benchmark: every split, averaged by size.\n"
        f"group: {folder}\n"
        f"group_alias: {folder.replace('_', ' ').title()}\n"
        f"task:\n{entries}"
        "aggregate_metric_list:\n"
        f"  - metric: {folder}_score\n"
        "    aggregation: mean\n"
        "    weight_by_size: true\n"
        "metadata:\n"
        "  version: 0.0\n"
    )


def generate_tree(root: Path, folders: int, tasks_per_folder: int, seed: int = 0) -> Tree:
    """Write the synthetic task tree under ``root``."""
    rng = random.Random(seed)
    tree = Tree(root)
    suites: dict[str, list[str]] = {}
    for f in range(folders):
        family = FAMILIES[f % len(FAMILIES)]
        folder = f"{family}_{f:03d}"
        base = root / family / folder
        suffix = ".yml" if f % 20 == 7 else ".yaml"
        output_type = "loglikelihood" if f % 10 == 3 else "generate_until"
        tree.write(base / "_default_template_yaml", _template(folder, output_type))
        tree.write(base / "utils.py", _utils(folder))
        names = [f"{folder}_{SPLITS[i % len(SPLITS)]}_{i}" for i in range(tasks_per_folder)]
        for i, name in enumerate(names):
            tree.write(base / f"{name}{suffix}", _task_yaml(rng, folder, family, name, i))
            tree.task_names.append(name)
            tree.tag_names.update([f"{family}_tasks"] + (["bench_even"] if i % 2 == 0 else []))
        tree.write(base / f"_{folder}{suffix}", _group_yaml(folder, names))
        tree.group_names.append(folder)
        suites.setdefault(family, []).append(folder)
    for family, members in suites.items():
        text = f"group: {family}_suite\ntask:\n" + "".join(f"  - {m}\n" for m in members)
        tree.write(root / family / f"_{family}_suite.yaml", text)
        tree.group_names.append(f"{family}_suite")
    return tree


_LISTED = re.compile(r"^Available tasks \((\d+)\):")


def listed_names(stdout: str) -> list[str]:
    lines = stdout.splitlines()
    start = next((i for i, line in enumerate(lines) if _LISTED.match(line)), None)
    if start is None:
        raise RuntimeError(f"unexpected 'tasks list' output:\n{stdout[:500]}")
    return [line.strip() for line in lines[start + 1 :] if line.startswith("  ")]


def check_listing(stdout: str, tree: Tree) -> int:
    names = set(listed_names(stdout))
    expected = set(tree.task_names) | set(tree.group_names) | tree.tag_names
    missing = expected - names
    if missing:
        raise RuntimeError(
            f"'tasks list' is missing {len(missing)} generated names, e.g. {sorted(missing)[:5]}"
        )
    return len(names)


def time_many(cmd: list[str], env: dict[str, str], cwd: Path, runs: int) -> Stat:
    return Stat.of([run_timed(cmd, env, cwd).seconds for _ in range(runs)])


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--folders", type=int, default=200)
    parser.add_argument("--tasks-per-folder", type=int, default=10)
    parser.add_argument("--cold-runs", type=int, default=3)
    parser.add_argument("--warm-runs", type=int, default=5)
    parser.add_argument(
        "--strict", action="store_true", help="exit 1 when a target is missed or a heavy module is imported"
    )
    args = parser.parse_args()

    cli = cli_command()
    with tempfile.TemporaryDirectory(prefix="lmms_bench_index_") as tmp:
        work = Path(tmp)
        tree = generate_tree(work / "tasks", args.folders, args.tasks_per_folder)
        print(
            f"{machine_line()}\ntree: {len(tree.task_names)} tasks, {len(tree.group_names)} groups, "
            f"{len(tree.tag_names)} tags in {tree.yaml_files} YAML files "
            f"(mean {tree.total_bytes / max(tree.yaml_files, 1):.0f} B), {args.folders} folders\n"
        )
        list_cmd = [*cli, "tasks", "list", "--include_path", str(tree.root)]

        cold: list[float] = []
        listed = 0
        for i in range(args.cold_runs):
            run = run_timed(list_cmd, isolated_env(work / f"home_cold_{i}"), work)
            listed = check_listing(run.stdout, tree)
            cold.append(run.seconds)
        warm_env = isolated_env(work / f"home_cold_{args.cold_runs - 1}")
        warm = time_many(list_cmd, warm_env, work, args.warm_runs)
        edited = next(tree.root.rglob("*_val_0.yaml"))
        edited.write_text(edited.read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")
        one_changed = run_timed(list_cmd, warm_env, work).seconds
        after_edit = time_many(list_cmd, warm_env, work, args.warm_runs)

        base_env = isolated_env(work / "home_builtin")
        run_timed([*cli, "tasks", "list"], base_env, work)  # build the built-in index once
        import_stat = time_many([sys.executable, "-c", "import lmms_eval"], base_env, work, args.warm_runs)
        help_stat = time_many([*cli, "--help"], base_env, work, args.warm_runs)
        builtin_stat = time_many([*cli, "tasks", "list"], base_env, work, args.warm_runs)

        cold_stat = Stat.of(cold)
        rows = [
            ["tasks list, tree, cold (no index cache)", cold_stat, None],
            ["tasks list, tree, warm", warm, WARM_TARGET_S],
            ["tasks list, tree, warm, 1 YAML edited", Stat.of([one_changed]), None],
            ["tasks list, tree, warm after the edit", after_edit, WARM_TARGET_S],
            ["tasks list, built-in tasks only, warm", builtin_stat, None],
            ["lmms-eval --help", help_stat, None],
            ['python -c "import lmms_eval"', import_stat, None],
        ]
        print_table(
            ["command", "median s", "min s", "max s", "runs", "target s", "verdict"],
            [
                [
                    label,
                    fmt_s(s.median),
                    fmt_s(s.low),
                    fmt_s(s.high),
                    str(s.n),
                    "-" if t is None else f"< {t}",
                    verdict(s.median, t),
                ]
                for label, s, t in rows
            ],
        )
        print(f"\nnames listed with the tree: {listed}")

        probes = [
            ("import lmms_eval", None),
            ("lmms-eval --help", ["--help"]),
            ("lmms-eval tasks list", ["tasks", "list"]),
            (
                "lmms-eval tasks list --include_path <tree>",
                ["tasks", "list", "--include_path", str(tree.root)],
            ),
        ]
        print(f"\nheavy modules imported ({', '.join(HEAVY_MODULES)}):")
        clean = True
        heavy_rows = []
        for label, argv in probes:
            found = heavy_imports(argv, warm_env, work)
            clean = clean and not found
            heavy_rows.append([label, ", ".join(found) or "none"])
        print_table(["entry point", "heavy modules in sys.modules"], heavy_rows)
    print(f"load average at the end: {load_average():.2f}")
    return 1 if args.strict and not (clean and warm.median < WARM_TARGET_S) else 0


if __name__ == "__main__":
    raise SystemExit(main())
