"""The dependency directions of shared/DESIGN.md, checked on every import of the package: module-level,
inside functions (lazy) and by name (``importlib.import_module("lmms_eval.x")``)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "lmms_eval"

# modules below everything else: they import only each other
BASE = ("lmms_eval.errors", "lmms_eval.secrets", "lmms_eval.utils")
# the lower layers import nothing above them
LOW = (
    "lmms_eval.api",
    "lmms_eval.protocol",
    "lmms_eval.results",
    "lmms_eval.settings",
    "lmms_eval.data",
    "lmms_eval.media",
    "lmms_eval.stats",
)
HIGH = (
    "lmms_eval.models",
    "lmms_eval.tasks",
    "lmms_eval.filters",
    "lmms_eval.evaluator",
    "lmms_eval.cli",
    "lmms_eval.entrypoints",
    "lmms_eval.ui",
    "lmms_eval.integrations",
)
# training-loop glue: over the eval server's client and the results schema only, imported by nothing
INTEGRATIONS = ("lmms_eval.integrations",)
INTEGRATIONS_USE = (*BASE, "lmms_eval.entrypoints.client", "lmms_eval.results", *INTEGRATIONS)
# (importer, imported) pairs that still break a rule, each with the reason; the list only shrinks
KNOWN: dict[tuple[str, str], str] = {}
_MODULE_NAME = re.compile(r"lmms_eval(\.[A-Za-z_]\w*)+")


def module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_names(path: Path, root: Path = PACKAGE) -> Iterator[tuple[str, int]]:
    """``(module, line)`` of every lmms_eval module ``path`` imports, however it imports it."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from ((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([node.module] if node.module else [])])
            yield base, node.lineno
            yield from ((f"{base}.{alias.name}", node.lineno) for alias in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value.split(":")[0]
            if _MODULE_NAME.fullmatch(text):
                yield text, node.lineno


def _under(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _benchmark(name: str) -> str | None:
    parts = name.split(".")
    return parts[2] if len(parts) > 3 and parts[1] == "tasks" and not parts[2].startswith("_") else None


def rule_broken(importer: str, imported: str) -> str | None:
    """Which DESIGN.md direction ``importer -> imported`` breaks, or ``None``."""
    if not imported.startswith("lmms_eval.") or _under(imported, (importer,)):
        return None
    if _under(importer, BASE) and not _under(imported, BASE):
        return "errors, secrets and utils import only each other"
    if _under(importer, LOW) and _under(imported, HIGH):
        return "api/, protocol, results/, settings, data/, media/ and stats/ import nothing above them"
    if _under(importer, ("lmms_eval.models",)) and _under(
        imported, ("lmms_eval.tasks", "lmms_eval.evaluator", "lmms_eval.cli")
    ):
        return "model backends never import tasks/, evaluator or cli/"
    if _under(imported, INTEGRATIONS) and not _under(importer, INTEGRATIONS):
        return "nothing imports integrations/"
    if _under(importer, INTEGRATIONS) and not _under(imported, INTEGRATIONS_USE):
        return "integrations/ use only the eval server's client (entrypoints.client) and results/"
    if _under(imported, ("lmms_eval.cli",)) and not _under(importer, ("lmms_eval.cli", "lmms_eval.__main__")):
        return "nothing imports cli/ but __main__"
    bench = _benchmark(importer)
    if bench is not None:
        if _under(imported, ("lmms_eval.evaluator", "lmms_eval.cli", "lmms_eval.entrypoints")):
            return "a benchmark folder never imports evaluator, cli/ or entrypoints/"
        other = _benchmark(imported + ".x")
        if other is not None and other != bench:
            return "a benchmark folder never imports another benchmark's folder"
    return None


def violations(root: Path = PACKAGE) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        importer = module_name(path, root)
        for imported, line in imported_names(path, root):
            rule = rule_broken(importer, imported)
            top = next((k for k in KNOWN if k[0] == importer and _under(imported, (k[1],))), None)
            if rule and top is None:
                found.append(f"{path.relative_to(root.parent)}:{line}: {importer} -> {imported}: {rule}")
    return found


def test_the_package_keeps_the_dependency_directions() -> None:
    assert violations() == []


def test_the_integrations_rules_catch_what_they_forbid() -> None:
    assert rule_broken("lmms_eval.integrations.evaluator", "lmms_eval.evaluator") is not None
    assert rule_broken("lmms_eval.integrations.evaluator", "lmms_eval.entrypoints.server") is not None
    assert rule_broken("lmms_eval.ui.app", "lmms_eval.integrations.evaluator") is not None
    assert rule_broken("lmms_eval.integrations.evaluator", "lmms_eval.entrypoints.client") is None
    assert rule_broken("lmms_eval.integrations.lightning", "lmms_eval.results.schema") is None


def test_known_exceptions_still_exist() -> None:
    """An exception that was fixed leaves the list (so the list only shrinks)."""
    for importer, imported in KNOWN:
        path = PACKAGE.parent / (importer.replace(".", "/") + ".py")
        names = [n for n, _ in imported_names(path)]
        assert any(_under(n, (imported,)) for n in names), f"{importer} no longer imports {imported}"


def test_the_checker_sees_lazy_and_by_name_imports(tmp_path: Path) -> None:
    root = tmp_path / "lmms_eval"
    (root / "api").mkdir(parents=True)
    (root / "tasks" / "mme").mkdir(parents=True)
    (root / "api" / "bad.py").write_text(
        "import importlib\n\ndef later():\n    from ..models import registry_v2\n"
        "    return importlib.import_module('lmms_eval.tasks._index')\n",
        encoding="utf-8",
    )
    (root / "tasks" / "mme" / "utils.py").write_text(
        "from lmms_eval.tasks.pope.utils import score\nfrom lmms_eval.scoring import vqa\n", encoding="utf-8"
    )
    (root / "utils.py").write_text("from lmms_eval.api import task\n", encoding="utf-8")
    found = violations(root)
    assert any("lmms_eval.api.bad -> lmms_eval.models" in v for v in found)  # relative, in a function
    assert any("lmms_eval.api.bad -> lmms_eval.tasks._index" in v for v in found)  # by name
    assert any("another benchmark's folder" in v for v in found)
    assert any("import only each other" in v for v in found)
    assert not any("lmms_eval.scoring" in v for v in found)
