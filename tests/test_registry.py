"""The generic ``Registry`` and its instances: metrics, aggregations, filters and judge providers."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from lmms_eval.api.registry import (
    AGGREGATION_REGISTRY,
    FILTER_REGISTRY,
    METRIC_REGISTRY,
    ReadOnlyViewError,
    RegistrationError,
    Registry,
    RegistryLookupError,
    get_filter,
    register_aggregation,
    register_metric,
    same_definition,
)
from lmms_eval.errors import ConfigError, LmmsEvalError


@pytest.fixture
def component_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """An importable package ``<name>`` whose ``parts`` module holds two functions and a counter."""
    name = f"regparts_{uuid.uuid4().hex[:12]}"
    (tmp_path / name).mkdir()
    (tmp_path / name / "__init__.py").write_text("")
    (tmp_path / name / "parts.py").write_text(
        "IMPORTS = []\nIMPORTS.append(1)\n\ndef first():\n    return 1\n\ndef second():\n    return 2\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[module]


def first() -> int:
    return 1


def second() -> int:
    return 2


# -- registering -----------------------------------------------------------------------------------


def test_a_collision_is_one_line_naming_both_entries() -> None:
    registry: Registry[object] = Registry("widget", "register_widget('name')")
    registry.register("w", first)
    with pytest.raises(RegistrationError) as info:
        registry.register("w", second)
    assert str(info.value) == (
        f"widget 'w' is already registered as {__name__}:first; cannot also register "
        f"{__name__}:second under that name (pass overwrite=True to replace it)"
    )
    assert isinstance(info.value, (LmmsEvalError, ValueError))
    assert registry.get("w") is first
    registry.register("w", second, overwrite=True)
    assert registry.get("w") is second


def test_the_same_definition_again_is_not_a_collision(component_package: str) -> None:
    registry: Registry[object] = Registry("widget")
    registry.register("w", first)
    registry.register("w", first)
    registry.register("lazy", f"{component_package}.parts:first")
    registry.register("lazy", f"{component_package}.parts.first")  # the same path, other spelling
    assert same_definition(f"{component_package}.parts:first", f"{component_package}.parts.first")
    assert f"{component_package}.parts" not in sys.modules
    parts = __import__(f"{component_package}.parts", fromlist=["first"])
    registry.register("lazy", parts.first)  # the object a lazy path names
    assert registry.get("lazy") is parts.first
    with pytest.raises(RegistrationError):
        registry.register("lazy", parts.second)


def test_lazy_paths_are_imported_on_first_get_only(component_package: str) -> None:
    registry: Registry[object] = Registry("widget")
    registry.register("one", f"{component_package}.parts:first")
    registry.register("two", f"{component_package}.parts.second")
    assert registry.names() == ["one", "two"] and "one" in registry
    assert registry.entry("one") == f"{component_package}.parts:first"
    assert f"{component_package}.parts" not in sys.modules
    assert registry.get("two")() == 2
    assert registry.get("one")() == 1
    assert sys.modules[f"{component_package}.parts"].IMPORTS == [1]


def test_unknown_names_suggest_and_list() -> None:
    registry: Registry[object] = Registry("widget")
    registry.register("regex", first, aliases=("pattern",))
    registry.register("lowercase", second)
    with pytest.raises(RegistryLookupError) as info:
        registry.get("regx")
    message = str(info.value)
    assert message == "unknown widget 'regx'. Did you mean 'regex'? Available: lowercase, regex"
    assert isinstance(info.value, LookupError) and isinstance(info.value, LmmsEvalError)
    judges: Registry[object] = Registry("judge", error_type=ConfigError)
    with pytest.raises(ConfigError, match="unknown judge 'x'"):
        judges.get("x")


def test_aliases() -> None:
    registry: Registry[object] = Registry("widget")
    registry.register("a", first, aliases=("a1", "a2"))
    registry.register("b", second)
    assert registry.get("a1") is first and registry.canonical("a2") == "a"
    assert registry.aliases_of("a") == ("a1", "a2")
    assert registry.names() == ["a", "b"] and registry.names(aliases=True) == ["a", "a1", "a2", "b"]
    with pytest.raises(RegistrationError, match="alias 'a1' of widget 'b' already points to widget 'a'"):
        registry.register_alias("a1", "b")
    with pytest.raises(RegistrationError, match="alias 'b' of widget 'a' is already a registered widget"):
        registry.register_alias("b", "a")
    with pytest.raises(RegistrationError, match="widget 'a1' is already an alias of widget 'a'"):
        registry.register("a1", second)
    registry.register_alias("a1", "b", overwrite=True)
    assert registry.get("a1") is second and registry.aliases_of("a") == ("a2",)


# -- views -----------------------------------------------------------------------------------------


def test_views_are_live_and_read_only() -> None:
    registry: Registry[object] = Registry("widget", "register_widget('name')")
    view = registry.view("WIDGETS")
    assert dict(view) == {}
    registry.register("w", first)
    assert dict(view) == {"w": first} and "w" in view and len(view) == 1
    assert view.get("missing") is None
    with pytest.raises(KeyError):
        view["missing"]
    with pytest.raises(ReadOnlyViewError) as info:
        view["x"] = second  # type: ignore[index]
    assert str(info.value) == (
        "WIDGETS is a read-only view of a registry; register entries with register_widget('name')"
    )
    with pytest.raises(TypeError):
        view.update(x=second)  # type: ignore[attr-defined]
    assert "WIDGETS" in repr(view)


# -- loaders, entry points, state --------------------------------------------------------------------


def test_loaders_run_once_before_the_first_read_or_write() -> None:
    registry: Registry[object] = Registry("widget")
    calls: list[str] = []

    def loader() -> None:
        calls.append("load")
        registry.register("builtin", first)
        assert "builtin" in registry  # a read inside a loader does not run it again

    registry.add_loader(loader)
    assert calls == [] and not registry.loaded
    assert registry.names() == ["builtin"]
    registry.get("builtin")
    assert calls == ["load"] and registry.loaded

    later: Registry[object] = Registry("widget")
    later.add_loader(lambda: later.register("builtin", first))
    with pytest.raises(RegistrationError, match="widget 'builtin' is already registered"):
        later.register("builtin", second)  # the loader ran first: a built-in name is not taken silently


def test_a_failing_loader_is_retried() -> None:
    registry: Registry[object] = Registry("widget")
    attempts: list[int] = []

    def flaky() -> None:
        attempts.append(1)
        if len(attempts) == 1:
            raise ImportError("not yet")
        registry.register("w", first)

    registry.add_loader(flaky)
    with pytest.raises(ImportError):
        registry.get("w")
    assert registry.get("w") is first and len(attempts) == 2


def test_entry_points_register_lazy_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    name = f"widgetplug_{uuid.uuid4().hex[:8]}"
    (tmp_path / name).mkdir()
    (tmp_path / name / "__init__.py").write_text("def made():\n    return 'made'\n")
    dist = tmp_path / f"{name}-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    group = f"lmms_eval_test_{name}"
    (dist / "entry_points.txt").write_text(f"[{group}]\nmade = {name}:made\ntaken = {name}:made\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(logging.getLogger("lmms_eval"), "propagate", True)  # for caplog
    caplog.set_level(logging.WARNING, logger="lmms_eval")
    registry: Registry[object] = Registry("widget", entry_point_group=group)
    assert not registry.loaded
    assert registry.entry("made") == f"{name}:made" and registry.entry("taken") == f"{name}:made"
    assert name not in sys.modules  # registered lazily
    assert registry.get("made")() == "made"

    other: Registry[object] = Registry("widget")
    other.register("taken", first)
    assert other.load_entry_points(group) == 1
    assert other.get("taken") is first  # a plugin cannot silently take a name
    assert any("widget plugin 'taken' is skipped" in r.getMessage() for r in caplog.records)
    del sys.modules[name]


def test_isolated_undoes_registrations_and_reruns_loaders() -> None:
    registry: Registry[object] = Registry("widget")
    calls: list[int] = []
    registry.add_loader(lambda: calls.append(1))
    registry.register("kept", first)
    registry.load()
    with registry.isolated():
        registry.register("temporary", second)
        registry.register("kept", second, overwrite=True)
        assert registry.names() == ["kept", "temporary"] and calls == [1, 1]
    assert registry.names() == ["kept"] and registry.get("kept") is first and registry.loaded


def test_concurrent_registration_and_lookup(component_package: str) -> None:
    registry: Registry[object] = Registry("widget")
    registry.register("lazy", f"{component_package}.parts:first")
    errors: list[BaseException] = []
    seen: list[object] = []

    def work(i: int) -> None:
        try:
            for j in range(50):
                registry.register(f"w{i}_{j}", first)
            seen.append(registry.get("lazy"))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(registry) == 8 * 50 + 1
    assert len({id(x) for x in seen}) == 1 and sys.modules[f"{component_package}.parts"].IMPORTS == [1]


def test_a_registration_does_not_wait_for_a_loader_of_another_thread() -> None:
    """A loader imports modules; one being imported by another thread may register meanwhile (if that
    waited for the loader, and the loader for the import, both threads would hang)."""
    registry: Registry[object] = Registry("widget")
    started, registered = threading.Event(), threading.Event()
    results: list[object] = []

    def loader() -> None:
        started.set()
        assert registered.wait(5)
        registry.register("builtin", first)

    registry.add_loader(loader)
    reader = threading.Thread(target=lambda: results.append(registry.get("builtin")))
    reader.start()
    assert started.wait(5)
    registry.register("other", second)  # runs while the loader of the reader thread is running
    registered.set()
    reader.join(5)
    assert results == [first] and registry.names() == ["builtin", "other"]


def test_a_lazy_path_that_does_not_import_is_a_lookup_error() -> None:
    registry: Registry[object] = Registry("widget")
    registry.register("gone", "lmms_eval_no_such_module_x:Thing")
    with pytest.raises(
        RegistryLookupError, match="widget 'gone' is registered as lmms_eval_no_such_module_x:Thing"
    ):
        registry.get("gone")


# -- the registries of the package ---------------------------------------------------------------------


def test_builtin_metric_and_aggregation_names_collide() -> None:
    with pytest.raises(RegistrationError, match="metric 'exact_match' is already registered as"):

        @register_metric("exact_match")
        def my_exact_match(references: list[str], predictions: list[str]) -> float:
            return 0.0

    with pytest.raises(RegistrationError, match="aggregation 'mean' is already registered as"):

        @register_aggregation("mean")
        def my_mean(items: list[float]) -> float:
            return 0.0

    with METRIC_REGISTRY.isolated(reload=False):

        @register_metric("exact_match", overwrite=True)
        def replacement(references: list[str], predictions: list[str]) -> float:
            return 1.0

        assert METRIC_REGISTRY.get("exact_match").fn is replacement
    assert METRIC_REGISTRY.get("exact_match").fn is not replacement
    assert AGGREGATION_REGISTRY.get("mean").__name__ == "mean"


def test_every_builtin_filter_path_names_its_class() -> None:
    from lmms_eval.api.filter import Filter
    from lmms_eval.filters import BUILTIN_FILTERS

    assert set(BUILTIN_FILTERS) <= set(FILTER_REGISTRY.names())
    for name, path in BUILTIN_FILTERS.items():
        cls = get_filter(name)
        assert issubclass(cls, Filter) and f"{cls.__module__}:{cls.__qualname__}" == path
    with pytest.raises(TypeError):
        BUILTIN_FILTERS["mine"] = "x"  # type: ignore[index]


def test_importing_the_package_registers_filters_without_importing_them() -> None:
    code = textwrap.dedent(
        """
        import sys
        import lmms_eval
        from lmms_eval.api.registry import FILTER_REGISTRY
        print(sorted(FILTER_REGISTRY.names()))
        print(sorted(m for m in sys.modules if m.startswith("lmms_eval.filters")))
        print(FILTER_REGISTRY.get("take_first").__name__)
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    names, loaded, take_first = proc.stdout.strip().splitlines()
    assert "'regex'" in names and "'take_first'" in names
    assert loaded == "['lmms_eval.filters']"
    assert take_first == "TakeFirstFilter"


def test_judge_providers_use_the_generic_registry() -> None:
    from lmms_eval.llm_judge import JUDGE_PROVIDERS, PROVIDERS, DummyJudge, register_provider

    assert isinstance(JUDGE_PROVIDERS, Registry)
    assert PROVIDERS["dummy"] is DummyJudge
    with pytest.raises(ReadOnlyViewError, match="register_provider"):
        PROVIDERS["mine"] = DummyJudge  # type: ignore[index]
    with pytest.raises(RegistrationError, match="judge provider 'dummy' is already registered"):
        register_provider("dummy", "some.module:Judge")
    with pytest.raises(ConfigError, match="not a JudgeServer subclass"):
        register_provider("not_a_judge", dict)  # type: ignore[arg-type]
    with JUDGE_PROVIDERS.isolated(reload=False):

        class Mine(DummyJudge):
            pass

        register_provider("mine", Mine)
        assert PROVIDERS["mine"] is Mine
        register_provider("broken", "lmms_eval.llm_judge.types:Request")
        with pytest.raises(ConfigError, match=r"judge provider 'broken' .* is not a JudgeServer subclass"):
            JUDGE_PROVIDERS.get("broken")
    assert "mine" not in PROVIDERS
