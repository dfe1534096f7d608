"""``lmms-eval models``: registered model ids, their type (chat / simple) and aliases; with ``--all``
every model id of the published package and its status here (runs, or one line saying what to use)."""

from __future__ import annotations

import argparse

from lmms_eval.cli._format import markdown_table


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("models", help="list models and aliases")
    parser.add_argument("--aliases", action="store_true", help="show the aliases of each model")
    parser.add_argument(
        "--all",
        action="store_true",
        help="every published model id and its status here (runs, or what to use)",
    )
    parser.set_defaults(handler=run)


def run_all() -> int:
    from lmms_eval.models.catalog import PUBLISHED_MODEL_IDS, published_status

    statuses = [published_status(model_id) for model_id in PUBLISHED_MODEL_IDS]
    print(markdown_table(["Published id", "Here"], [[s.published_id, s.note] for s in statuses]))
    running = sum(1 for s in statuses if s.runs)
    print(
        f"\n{len(statuses)} published ids: {running} run here, {len(statuses) - running} do not (see the line for each)"
    )
    return 0


def run(args: argparse.Namespace) -> int:
    from lmms_eval.models import ensure_registry

    if getattr(args, "all", False):
        return run_all()

    registry = ensure_registry()
    manifests = registry.manifests()
    rows = []
    for manifest in manifests:
        kind = "+".join(
            k for k, p in (("chat", manifest.chat_class_path), ("simple", manifest.simple_class_path)) if p
        )
        rows.append((manifest.model_id, kind, ", ".join(manifest.aliases)))
    header = ["Model", "Type"] + (["Aliases"] if args.aliases else [])
    print(markdown_table(header, [list(r) if args.aliases else list(r[:2]) for r in rows]))
    chat = sum(1 for m in manifests if m.chat_class_path)
    simple = sum(1 for m in manifests if m.simple_class_path)
    print(f"\n{len(manifests)} models ({chat} chat, {simple} simple)")
    return 0
