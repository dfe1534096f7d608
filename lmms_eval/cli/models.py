"""``lmms-eval models``: registered model ids, their type (chat / simple) and aliases."""

from __future__ import annotations

import argparse


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
    width = max([len("Model"), *(len(r[0]) for r in rows)])
    type_width = max([len("Type"), *(len(r[1]) for r in rows)])
    header = f"{'Model'.ljust(width)}  {'Type'.ljust(type_width)}" + ("  Aliases" if args.aliases else "")
    print(header)
    print("-" * len(header.rstrip()) if not args.aliases else "-" * (len(header) + 10))
    for model_id, kind, aliases in rows:
        line = f"{model_id.ljust(width)}  {kind.ljust(type_width)}"
        print(line + (f"  {aliases}" if args.aliases else ""))
    chat = sum(1 for m in manifests if m.chat_class_path)
    simple = sum(1 for m in manifests if m.simple_class_path)
    print(f"\n{len(manifests)} models ({chat} chat, {simple} simple)")
    return 0
