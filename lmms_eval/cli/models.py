"""``lmms-eval models``: registered model ids, their type (chat / simple) and aliases."""

from __future__ import annotations

import argparse

from lmms_eval.cli._format import markdown_table


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("models", help="list models and aliases")
    parser.add_argument("--aliases", action="store_true", help="show the aliases of each model")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from lmms_eval.models import ensure_registry

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
