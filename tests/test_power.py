"""Power analysis: the formulas against statsmodels / scipy, task sizes read without loading data, the CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import datasets
import pytest
from scipy.stats import norm
from statsmodels.stats.power import NormalIndPower, zt_ind_solve_power

from lmms_eval.cli import main
from lmms_eval.cli.power import run_power_analysis
from lmms_eval.data.load import load_dataset_splits
from lmms_eval.errors import ConfigError, LmmsEvalError, TaskNotFoundError
from lmms_eval.stats import achieved_power, minimum_detectable_effect, paired_sd, required_sample_size
from lmms_eval.tasks._sizes import SizeInfo, count_split, task_sizes

# -- formulas ---------------------------------------------------------------------------------------

# (effect, alpha, power, std_a, std_b, correlation)
DESIGNS = [
    (0.03, 0.05, 0.8, 0.5, 0.5, 0.5),  # the defaults
    (0.05, 0.05, 0.8, 0.5, 0.5, 0.5),
    (0.02, 0.01, 0.9, 0.45, 0.4, 0.7),
    (0.10, 0.10, 0.5, 0.3, 0.2, 0.0),  # independent scores
    (0.01, 0.05, 0.8, 0.5, 0.5, 0.99),  # near-perfect agreement
    (0.05, 0.05, 0.95, 0.4, 0.3, -0.4),  # negative correlation
    (0.04, 0.05, 0.8, 0.5, 0.3, 1.0),  # rho = 1 with unequal stds: var_diff = (a - b)^2
]


def _sd(a: float, b: float, rho: float) -> float:
    return math.sqrt(a * a + b * b - 2 * rho * a * b)


@pytest.mark.parametrize(("effect", "alpha", "power", "a", "b", "rho"), DESIGNS)
def test_required_sample_size_matches_statsmodels(
    effect: float, alpha: float, power: float, a: float, b: float, rho: float
) -> None:
    d = effect / _sd(a, b, rho)
    # the one-sided-in-the-right-direction z test at alpha/2 is exactly Φ(d·sqrt(n) − z_{1−α/2})
    exact = NormalIndPower().solve_power(
        effect_size=d, nobs1=None, alpha=alpha / 2, power=power, ratio=0, alternative="larger"
    )
    n = required_sample_size(effect, alpha, power, a, b, rho)
    assert n == max(1, math.ceil(exact - 1e-9))
    # and the full two-sided power (both tails) agrees to within one question
    two_sided = zt_ind_solve_power(effect_size=d, nobs1=None, alpha=alpha, power=power, ratio=0)
    assert abs(n - math.ceil(two_sided)) <= 1
    # hand formula with scipy
    assert n == math.ceil(((norm.ppf(1 - alpha / 2) + norm.ppf(power)) / d) ** 2 - 1e-9)


@pytest.mark.parametrize(("effect", "alpha", "power", "a", "b", "rho"), DESIGNS)
@pytest.mark.parametrize("n", [1, 30, 120, 1000, 12345])
def test_achieved_power_and_mde_match_statsmodels(
    effect: float, alpha: float, power: float, a: float, b: float, rho: float, n: int
) -> None:
    sd = _sd(a, b, rho)
    expected_power = NormalIndPower().power(
        effect_size=effect / sd, nobs1=n, alpha=alpha / 2, ratio=0, alternative="larger"
    )
    assert achieved_power(n, effect, alpha, a, b, rho) == pytest.approx(expected_power, rel=1e-9, abs=1e-12)
    assert achieved_power(n, effect, alpha, a, b, rho) == pytest.approx(
        norm.cdf(effect / sd * math.sqrt(n) - norm.ppf(1 - alpha / 2)), rel=1e-9, abs=1e-12
    )
    standardized = NormalIndPower().solve_power(
        effect_size=None, nobs1=n, alpha=alpha / 2, power=power, ratio=0, alternative="larger"
    )
    mde = minimum_detectable_effect(n, alpha, power, a, b, rho)
    assert mde == pytest.approx(standardized * sd, rel=1e-4)  # statsmodels solves numerically
    assert mde == pytest.approx((norm.ppf(1 - alpha / 2) + norm.ppf(power)) * sd / math.sqrt(n), rel=1e-12)
    # the MDE is the effect that n questions detect with exactly the wanted power
    assert achieved_power(n, mde, alpha, a, b, rho) == pytest.approx(power, rel=1e-9)


def test_hand_worked_defaults() -> None:
    # sd_diff = sqrt(0.25 + 0.25 - 2·0.5·0.25) = 0.5; d = 0.06; (2.8015852 / 0.06)² = 2180.24 -> 2181
    assert paired_sd() == pytest.approx(0.5)
    assert required_sample_size() == 2181
    assert required_sample_size(0.05) == 785  # (2.8015852 / 0.1)² = 784.89
    # demo_qa's 120 questions: Φ(0.06·sqrt(120) − 1.959964) = Φ(−1.30269) = 0.09634
    assert achieved_power(120, 0.03) == pytest.approx(0.0963391, abs=1e-6)
    # MDE = 2.8015852 · 0.5 / sqrt(120) = 0.127874 (12.79 points)
    assert minimum_detectable_effect(120) == pytest.approx(0.1278743, abs=1e-6)
    # 3-4-5: stds 0.4 and 0.3, independent -> sd_diff 0.5
    assert paired_sd(0.4, 0.3, 0.0) == pytest.approx(0.5)


def test_power_at_the_minimum_n_reaches_the_target_and_one_less_does_not() -> None:
    for effect, alpha, power, a, b, rho in DESIGNS:
        n = required_sample_size(effect, alpha, power, a, b, rho)
        assert achieved_power(n, effect, alpha, a, b, rho) >= power
        if n > 1:
            assert achieved_power(n - 1, effect, alpha, a, b, rho) < power


def test_std_defaults_and_correlation_extremes() -> None:
    assert paired_sd(0.3) == paired_sd(0.3, 0.3)  # std_b defaults to std_a
    assert paired_sd(None) == paired_sd(0.5, 0.5)  # std_a defaults to 0.5
    assert required_sample_size(0.03, std_a=0.3) == required_sample_size(0.03, std_a=0.3, std_b=0.3)
    assert paired_sd(0.5, 0.5, 0.0) == pytest.approx(math.sqrt(0.5))  # independent
    assert paired_sd(0.4, 0.3, -1.0) == pytest.approx(0.7)  # perfectly anti-correlated: a + b
    assert paired_sd(0.4, 0.3, 1.0) == pytest.approx(0.1)  # perfectly correlated: |a − b|
    # rho near 1: var_diff = 2a²(1 − ρ) = 5e-7, computed without cancellation
    assert paired_sd(0.5, 0.5, 0.999999) == pytest.approx(math.sqrt(5e-7), rel=1e-9)
    # a tiny variance needs very few questions, but never fewer than one
    assert required_sample_size(0.03, correlation=0.999999) == 1
    # higher correlation, fewer questions; independent designs need twice the rho = 0.5 size
    sizes = [required_sample_size(0.03, correlation=r) for r in (0.0, 0.5, 0.9)]
    assert sizes[0] > sizes[1] > sizes[2]
    assert sizes[0] == math.ceil(((norm.ppf(0.975) + norm.ppf(0.8)) / (0.03 / math.sqrt(0.5))) ** 2)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"effect_size": 0.0}, "effect_size must be positive.*got 0.0"),
        ({"effect_size": -0.03}, "effect_size must be positive.*got -0.03"),
        ({"effect_size": math.nan}, "effect_size must be a finite number, got nan"),
        ({"effect_size": math.inf}, "effect_size must be a finite number"),
        ({"alpha": 0.0}, r"alpha must be strictly between 0 and 1 .*got 0.0"),
        ({"alpha": 1.0}, r"alpha must be strictly between 0 and 1 .*got 1.0"),
        ({"power": 1.0}, r"power must be strictly between 0 and 1 .*got 1.0"),
        ({"power": -0.2}, r"power must be strictly between 0 and 1 .*got -0.2"),
        ({"correlation": 1.5}, "correlation must be between -1 and 1, got 1.5"),
        ({"correlation": -1.01}, "correlation must be between -1 and 1, got -1.01"),
        ({"std_a": 0.0}, "std_a must be positive.*got 0.0"),
        ({"std_a": -0.5}, "std_a must be positive.*got -0.5"),
        ({"std_b": 0.0}, "std_b must be positive.*got 0.0"),
        ({"std_a": "0.5"}, "std_a must be a number, got '0.5'"),
        ({"correlation": 1.0}, r"no variance \(std_a=0.5, std_b=0.5, correlation=1 .*var_diff"),
        ({"correlation": 1.0, "std_a": 0.3, "std_b": 0.3}, "no variance"),
    ],
)
def test_invalid_inputs_name_the_value(kwargs: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        required_sample_size(**kwargs)


@pytest.mark.parametrize("n", [0, -5, 1.5, True, None])
def test_invalid_sample_size(n: Any) -> None:
    with pytest.raises(ConfigError, match=r"n \(the number of questions\) must be a positive integer"):
        achieved_power(n, 0.03)
    with pytest.raises(ConfigError, match="must be a positive integer"):
        minimum_detectable_effect(n)


# -- task sizes without loading the data ---------------------------------------------------------------

TASK_TAIL = "doc_to_text: '{{question}}'\ndoc_to_target: answer\nmetric_list:\n  - metric: exact_match\n"


def _jsonl(n: int, blank_lines: bool = False) -> str:
    lines = [json.dumps({"question": f"q{i}", "answer": str(i)}) for i in range(n)]
    if blank_lines:
        lines.insert(3, "")
        lines.append("   ")
    return "\n".join(lines) + "\n"


def _yaml(name: str, data: str) -> str:
    return f"task: {name}\n{data}{TASK_TAIL}"


@pytest.fixture
def no_data_loading(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail any attempt to load rows or decode an image: sizes must come from metadata and counts."""
    import PIL.Image
    import pyarrow.parquet as pq

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("task_sizes must not load the data")

    monkeypatch.setattr(datasets, "load_dataset", refuse)
    monkeypatch.setattr(datasets, "load_from_disk", refuse)
    monkeypatch.setattr(PIL.Image, "open", refuse)
    monkeypatch.setattr(pq, "read_table", refuse)
    monkeypatch.setattr(pq.ParquetFile, "read", refuse)
    monkeypatch.setattr(pq.ParquetFile, "iter_batches", refuse)


def test_local_json_sizes_and_process_docs_flag(write_files, tmp_path: Path, no_data_loading: None) -> None:
    root = write_files(
        {
            "t/rows.jsonl": _jsonl(37, blank_lines=True),
            "t/doc.json": json.dumps([{"question": f"q{i}", "answer": "a"} for i in range(5)], indent=2),
            "t/pretty.jsonl": json.dumps([{"question": "q", "answer": "a"}] * 4, indent=2),
            "t/utils.py": "def keep_half(docs):\n    return docs.select(range(len(docs) // 2))\n",
            "t/jl.yaml": _yaml(
                "jl",
                "dataset_path: json\ndataset_kwargs:\n  data_files:\n    test: rows.jsonl\n"
                "test_split: test\n",
            ),
            "t/js.yaml": _yaml(
                "js",
                "dataset_path: jsonl\ndataset_kwargs:\n  data_files:\n"
                "    validation: doc.json\nvalidation_split: validation\n",
            ),
            "t/pretty.yaml": _yaml(
                "pretty",
                "dataset_path: json\ndataset_kwargs:\n  data_files: pretty.jsonl\ntest_split: train\n",
            ),
            "t/pd.yaml": _yaml(
                "pd",
                "dataset_path: json\ndataset_kwargs:\n  data_files:\n    test: rows.jsonl\n"
                "test_split: test\nprocess_docs: !function utils.keep_half\n",
            ),
        },
        tmp_path / "tasks",
    )
    sizes = task_sizes(["jl", "js", "pretty", "pd"], str(root))
    assert list(sizes) == ["jl", "js", "pretty", "pd"]
    assert sizes["jl"] == SizeInfo("jl", "test", 37, "json rows")
    assert sizes["js"].n == 5 and sizes["js"].split == "validation"
    assert sizes["pretty"].n == 4  # a pretty-printed document in a .jsonl file, as the loader reads it
    assert sizes["pd"].n == 37 and sizes["pd"].has_process_docs  # the raw split size, flagged
    assert "process_docs may change n" in sizes["pd"].notes()
    assert not sizes["jl"].has_process_docs and sizes["jl"].notes() == []


def test_counts_agree_with_the_task_loader(write_files, tmp_path: Path) -> None:
    """Row counts equal the number of docs the real loader gives (blank lines, quoted newlines)."""
    csv_text = 'question,answer\n"multi\nline, with comma",1\n\nq2,2\n"say ""hi""",3\n,\n'
    root = write_files({"rows.jsonl": _jsonl(12, blank_lines=True), "rows.csv": csv_text}, tmp_path)
    for builder, name in (("json", "rows.jsonl"), ("csv", "rows.csv")):
        kwargs = {"data_files": {"test": name}}
        loaded = load_dataset_splits(builder, None, kwargs, str(root), "t")
        n, _ = count_split(builder, None, kwargs, str(root), "test")
        assert n == len(loaded["test"])
    assert count_split("csv", None, {"data_files": {"test": "rows.csv"}}, str(root), "test")[0] == 4


def _image_dataset(n: int) -> datasets.Dataset:
    from PIL import Image

    images = [Image.new("RGB", (4, 4), (i, 0, 0)) for i in range(n)]
    features = datasets.Features(
        {"image": datasets.Image(), "question": datasets.Value("string"), "answer": datasets.Value("string")}
    )
    return datasets.Dataset.from_dict(
        {"image": images, "question": [f"q{i}" for i in range(n)], "answer": ["a"] * n}, features=features
    )


def test_parquet_with_images_is_sized_from_the_footer(
    write_files, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "tasks" / "p" / "data"
    data.mkdir(parents=True)
    _image_dataset(23).to_parquet(str(data / "test-00000.parquet"))
    _image_dataset(9).to_parquet(str(data / "test-00001.parquet"))
    _image_dataset(6).to_parquet(str(data / "val.parquet"))
    root = write_files(
        {
            "p/one.yaml": _yaml(
                "one",
                "dataset_path: parquet\ndataset_kwargs:\n  data_files:\n"
                "    test: data/test-00000.parquet\n    validation: data/val.parquet\n"
                "test_split: test\n",
            ),
            "p/glob.yaml": _yaml(
                "globbed",
                "dataset_path: parquet\ndataset_kwargs:\n  data_files:\n"
                "    test: data/test-*.parquet\ntest_split: test\n",
            ),
            "p/val.yaml": _yaml(
                "val_only",
                "dataset_path: parquet\ndataset_kwargs:\n  data_files:\n"
                "    test: data/test-00000.parquet\n    validation: data/val.parquet\n"
                "validation_split: validation\n",
            ),
            "p/file.yaml": _yaml("as_file", "dataset_path: data/val.parquet\ntest_split: train\n"),
        },
        tmp_path / "tasks",
    )
    import PIL.Image
    import pyarrow.parquet as pq

    footer_reads: list[str] = []
    real_read_metadata = pq.read_metadata

    def counting_read_metadata(where: Any, *args: Any, **kwargs: Any) -> Any:
        footer_reads.append(str(where))
        return real_read_metadata(where, *args, **kwargs)

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("no rows may be read and no image decoded")

    monkeypatch.setattr(pq, "read_metadata", counting_read_metadata)
    for name in ("read_table", "ParquetDataset"):
        monkeypatch.setattr(pq, name, refuse)
    for method in ("read", "read_row_group", "iter_batches"):
        monkeypatch.setattr(pq.ParquetFile, method, refuse)
    monkeypatch.setattr(PIL.Image, "open", refuse)
    monkeypatch.setattr(datasets, "load_dataset", refuse)

    sizes = task_sizes(["one", "globbed", "val_only", "as_file"], str(root))
    assert {k: v.n for k, v in sizes.items()} == {"one": 23, "globbed": 32, "val_only": 6, "as_file": 6}
    assert sizes["one"].source == "parquet rows"
    assert len(footer_reads) == 5 and all(p.endswith(".parquet") for p in footer_reads)


def test_split_selections_and_slices_match_datasets(tmp_path: Path) -> None:
    datasets.Dataset.from_dict({"x": list(range(57))}).to_parquet(str(tmp_path / "t.parquet"))
    datasets.Dataset.from_dict({"x": list(range(13))}).to_parquet(str(tmp_path / "v.parquet"))
    files = {"test": "t.parquet", "validation": "v.parquet"}
    for spec in ("test[:10]", "test[5:]", "test[-7:]", "test[10%:]", "test[:33%]", "test+validation[2:5]"):
        kwargs = {"data_files": files, "split": spec}
        loaded = load_dataset_splits("parquet", None, kwargs, str(tmp_path), "t")
        evaluated = spec if "+" in spec else "test"
        assert count_split("parquet", None, kwargs, str(tmp_path), evaluated)[0] == len(loaded[evaluated]), (
            spec
        )
    with pytest.raises(Exception, match="loads no split 'validation'"):
        count_split("parquet", None, {"data_files": files, "split": "test"}, str(tmp_path), "validation")


def test_save_to_disk_folders(write_files, tmp_path: Path) -> None:
    base = tmp_path / "tasks" / "s"
    full = _image_dataset(30)
    datasets.DatasetDict(
        {"test": full.select(range(3, 24)), "validation": full.select(range(4))}
    ).save_to_disk(str(base / "saved_dict"))
    full.select(range(11)).save_to_disk(str(base / "saved_one"))
    root = write_files(
        {
            "s/dict.yaml": _yaml("sv_dict", "dataset_path: saved_dict\ntest_split: test\n"),
            "s/dict_val.yaml": _yaml(
                "sv_val",
                "dataset_path: saved_dict\ndataset_kwargs:\n  load_from_disk: true\n"
                "validation_split: validation\n",
            ),
            "s/one.yaml": _yaml(
                "sv_one",
                "dataset_path: saved_one\ndataset_kwargs:\n  load_from_disk: true\ntest_split: train\n",
            ),
            "s/missing.yaml": _yaml("sv_missing", "dataset_path: saved_dict\ntest_split: dev\n"),
        },
        tmp_path / "tasks",
    )
    # the independent answer: what datasets itself loads
    assert len(datasets.load_from_disk(str(base / "saved_dict"))["test"]) == 21

    import PIL.Image

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("task_sizes must not load the data")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(datasets, "load_from_disk", refuse)
        mp.setattr(PIL.Image, "open", refuse)
        sizes = task_sizes(["sv_dict", "sv_val", "sv_one", "sv_missing"], str(root))
    assert sizes["sv_dict"].n == 21 and sizes["sv_dict"].source == "saved dataset (arrow metadata)"
    assert sizes["sv_val"].n == 4
    assert sizes["sv_one"].n == 11
    missing = sizes["sv_missing"]
    assert missing.n is None and missing.split == "dev"
    assert "split 'dev' is not in the saved dataset" in (missing.reason or "")
    assert "(splits: test, validation)" in (missing.reason or "")


def test_group_and_tag_expand_to_their_tasks(write_files, tmp_path: Path, no_data_loading: None) -> None:
    data = "dataset_path: json\ndataset_kwargs:\n  data_files:\n    test: {file}\ntest_split: test\n"
    root = write_files(
        {
            "g/a.jsonl": _jsonl(8),
            "g/b.jsonl": _jsonl(15),
            "g/c.jsonl": _jsonl(4),
            "g/a.yaml": _yaml("ta", data.format(file="a.jsonl")),
            "g/b.yaml": _yaml("tb", data.format(file="b.jsonl")) + "tag: my_tag\n",
            "g/c.yaml": _yaml("tc", data.format(file="c.jsonl")) + "tag: my_tag\n",
            "g/inner.yaml": "group: inner\ntask:\n  - tb\n",
            "g/grp.yaml": "group: grp\ntask:\n  - ta\n  - inner\n",
        },
        tmp_path / "tasks",
    )
    sizes = task_sizes(["grp", "my_tag"], str(root))
    assert {k: (v.n, v.via) for k, v in sizes.items()} == {
        "ta": (8, "grp"),
        "tb": (15, "grp"),  # listed once, through the first name that selected it
        "tc": (4, "my_tag"),
    }
    with pytest.raises(TaskNotFoundError, match="unknown task or group 'nope'"):
        task_sizes(["nope"], str(root))


def test_local_data_folder_file_path_and_unreadable_data(write_files, tmp_path: Path, capsys) -> None:
    folder = tmp_path / "tasks" / "f" / "folder" / "data"
    folder.mkdir(parents=True)
    datasets.Dataset.from_dict({"x": list(range(7))}).to_parquet(str(folder / "test-00000-of-00001.parquet"))
    datasets.Dataset.from_dict({"x": list(range(5))}).to_parquet(
        str(folder / "validation-00000-of-00001.parquet")
    )
    root = write_files(
        {
            "f/folder.yaml": _yaml("in_folder", "dataset_path: folder\ntest_split: test\n"),
            "f/rows.jsonl": _jsonl(9),
            "f/file.yaml": _yaml("one_file", "dataset_path: rows.jsonl\ntest_split: train\n"),
            "f/empty.jsonl": "\n",
            "f/empty.yaml": _yaml(
                "empty",
                "dataset_path: json\ndataset_kwargs:\n  data_files:\n"
                "    test: empty.jsonl\ntest_split: test\n",
            ),
            "f/bad.parquet": "not parquet",
            "f/bad.yaml": _yaml(
                "bad",
                "dataset_path: parquet\ndataset_kwargs:\n  data_files:\n"
                "    test: bad.parquet\ntest_split: test\n",
            ),
            "f/gone.yaml": _yaml(
                "gone",
                "dataset_path: json\ndataset_kwargs:\n  data_files:\n"
                "    test: gone.jsonl\ntest_split: test\n",
            ),
            "f/xml.yaml": _yaml(
                "xml",
                "dataset_path: xml\ndataset_kwargs:\n  data_files:\n    test: rows.jsonl\ntest_split: test\n",
            ),
        },
        tmp_path / "tasks",
    )
    names = ["in_folder", "one_file", "empty", "bad", "gone", "xml"]
    sizes = task_sizes(names, str(root))
    assert [sizes[n].n for n in names] == [7, 9, 0, None, None, None]
    assert sizes["in_folder"].source == "local folder"
    assert "could not read the data files (ArrowInvalid" in (sizes["bad"].reason or "")
    assert (sizes["gone"].reason or "").startswith("data file 'gone.jsonl' not found")
    assert "cannot count the rows of 'xml' data" in (sizes["xml"].reason or "")
    assert run_power_analysis(tasks=",".join(names), include_path=str(root)) == 0
    rows = {
        line.split("|")[1].strip(): [c.strip() for c in line.strip("|").split("|")]
        for line in capsys.readouterr().out.splitlines()
        if line.startswith("| ") and not line.startswith("| Task")
    }
    assert rows["empty"][1:6] == ["0", "-", "-", "Insufficient", "the split is empty"]
    assert rows["bad"][1:5] == ["?", "-", "-", "Unknown"]
    assert rows["one_file"][1] == "9"


class _FakeSplit:
    def __init__(self, n: int) -> None:
        self.num_examples = n


class _FakeBuilder:
    def __init__(self, splits: dict[str, int]) -> None:
        self.info = type("Info", (), {"splits": {k: _FakeSplit(v) for k, v in splits.items()}})()


def test_hub_sizes_from_builder_metadata_and_per_task_failures(
    write_files, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    calls: list[tuple[str, str | None, dict[str, Any]]] = []

    def fake_builder(path: str, name: str | None = None, **kwargs: Any) -> _FakeBuilder:
        calls.append((path, name, kwargs))
        if path == "org/gone":
            raise FileNotFoundError("Dataset org/gone is not cached")
        return _FakeBuilder({"test": 900, "validation": 100})

    monkeypatch.setattr(datasets, "load_dataset_builder", fake_builder)
    monkeypatch.setattr(datasets, "load_dataset", lambda *a, **k: pytest.fail("no dataset loading"))
    root = write_files(
        {
            "h/ok.yaml": _yaml(
                "hub_ok",
                "dataset_path: org/bench\ndataset_name: cfg\n"
                "dataset_kwargs:\n  token: true\n  video: true\ntest_split: test\n",
            ),
            "h/gone.yaml": _yaml("hub_gone", "dataset_path: org/gone\ntest_split: test\n"),
            "h/nosplit.yaml": _yaml("hub_nosplit", "dataset_path: org/bench\ntest_split: dev\n"),
        },
        tmp_path / "tasks",
    )
    sizes = task_sizes(["hub_ok", "hub_gone", "hub_nosplit"], str(root))
    assert sizes["hub_ok"].n == 900 and sizes["hub_ok"].source == "Hub metadata: org/bench (cfg)"
    assert calls[0] == ("org/bench", "cfg", {"token": True})  # lmms_eval's own keys (video) stay out
    assert sizes["hub_gone"].n is None
    assert "no metadata for Hub dataset 'org/gone'" in (sizes["hub_gone"].reason or "")
    assert "split 'dev' is not in the metadata" in (sizes["hub_nosplit"].reason or "")

    # the report still prints, with the unknown sizes marked
    assert run_power_analysis(tasks=["hub_ok", "hub_gone"], include_path=str(root)) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| hub_gone"))
    assert "| ?" in row and "Unknown" in row and "size unknown: no metadata" in row
    ok_row = next(line for line in out.splitlines() if line.startswith("| hub_ok"))
    assert "| 900 " in ok_row and "Insufficient" in ok_row


def test_published_size_when_the_hub_metadata_is_unavailable(
    write_files, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_metadata(path: str, name: str | None = None, **kwargs: Any) -> Any:
        raise FileNotFoundError(f"Dataset {path} is not cached")

    monkeypatch.setattr(datasets, "load_dataset_builder", no_metadata)
    bench = "dataset_path: org/gone\ntest_split: test\nmetadata:\n  benchmark:\n    size: 2374\n"
    root = write_files({"h/b.yaml": _yaml("hub_bench", bench)}, tmp_path / "tasks")
    size = task_sizes(["hub_bench"], str(root))["hub_bench"]
    assert (size.n, size.source, size.reason) == (2374, "metadata.benchmark.size", None)


def test_hub_sizes_from_the_offline_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Hub dataset prepared once earlier: its split sizes come from the cache's metadata, offline."""
    import glob
    import shutil

    cache = tmp_path / "cache"
    datasets.Dataset.from_dict({"x": list(range(17))}).to_parquet(str(tmp_path / "t.parquet"))
    datasets.load_dataset("parquet", data_files={"test": str(tmp_path / "t.parquet")}, cache_dir=str(cache))
    prepared = next(p for p in glob.glob(str(cache / "parquet" / "*" / "*" / "*")) if Path(p).is_dir())
    # lay it out as the cache of a Hub dataset 'someone/bench', config 'default'
    target = cache / "someone___bench" / "default" / "0.0.0" / Path(prepared).name
    shutil.copytree(prepared, target)
    monkeypatch.setenv("LMMS_EVAL_DATASETS_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert count_split("someone/bench", None, {}, str(tmp_path), "test") == (
        17,
        "Hub metadata: someone/bench",
    )


# -- the CLI ------------------------------------------------------------------------------------------


def test_power_subcommand_report(capsys) -> None:
    assert main(["power", "--effect-size", "0.05"]) == 0
    out = capsys.readouterr().out
    assert "effect size        0.05 (5.00 points)" in out
    assert "sd of difference   0.5000 (var_diff = 0.2500)" in out
    assert "standardized d     0.1000" in out
    assert "Minimum sample size: 785 questions" in out
    assert "Add --tasks" in out
    # both spellings; 3-4-5 stds with independent scores give sd_diff 0.5 as well
    assert (
        main(["power", "--effect_size", "0.05", "--std-a", "0.4", "--std_b", "0.3", "--correlation", "0"])
        == 0
    )
    out = capsys.readouterr().out
    assert "std A / std B      0.4 / 0.3" in out and "Minimum sample size: 785 questions" in out


def test_power_analysis_flag_of_eval_with_the_demo_task(capsys) -> None:
    assert main(["--power-analysis", "--tasks", "demo_qa"]) == 0
    out = capsys.readouterr().out
    assert "Minimum sample size: 2181 questions" in out
    row = next(line for line in out.splitlines() if line.startswith("| demo_qa"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    expected_power = norm.cdf(0.06 * math.sqrt(120) - norm.ppf(0.975))  # 0.0963
    expected_mde = (norm.ppf(0.975) + norm.ppf(0.8)) * 0.5 / math.sqrt(120)  # 0.1279
    assert cells == [
        "demo_qa",
        "120",
        f"{100 * expected_power:.1f}%",
        f"{100 * expected_mde:.2f}",
        "Insufficient",
        "",
    ]
    assert cells[2:4] == ["9.6%", "12.79"]
    # a large effect: n_min = ceil((2.8016 · 0.5 / 0.3)²) = 22 <= 120
    assert main(["eval", "--power_analysis", "--effect_size", "0.3", "--tasks", "demo_qa"]) == 0
    out = capsys.readouterr().out
    assert "Minimum sample size: 22 questions" in out
    row = next(line for line in out.splitlines() if line.startswith("| demo_qa"))
    assert [c.strip() for c in row.strip("|").split("|")][1:5] == ["120", "100.0%", "12.79", "Sufficient"]


def test_power_subcommand_with_a_group(write_files, tmp_path: Path, capsys) -> None:
    data = "dataset_path: json\ndataset_kwargs:\n  data_files:\n    test: {file}\ntest_split: test\n"
    root = write_files(
        {
            "g/a.jsonl": _jsonl(3000),
            "g/b.jsonl": _jsonl(40),
            "g/a.yaml": _yaml("big", data.format(file="a.jsonl")),
            "g/b.yaml": _yaml("small", data.format(file="b.jsonl")),
            "g/grp.yaml": "group: both\ntask: [big, small]\n",
        },
        tmp_path / "tasks",
    )
    assert main(["power", "--tasks", "both", "--include-path", str(root)]) == 0
    out = capsys.readouterr().out
    big = next(line for line in out.splitlines() if line.startswith("| big"))
    small = next(line for line in out.splitlines() if line.startswith("| small"))
    assert "| 3000 |" in big and "Sufficient" in big and "via both" in big
    assert "| 40 " in small and "Insufficient" in small
    assert f"{100 * minimum_detectable_effect(3000):.2f}" in big  # 5.11 points


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["power", "--alpha", "0"], "alpha must be strictly between 0 and 1"),
        (["power", "--effect-size", "-0.01"], "effect_size must be positive"),
        (["power", "--correlation", "2"], "correlation must be between -1 and 1, got 2.0"),
        (["power", "--std-a", "0"], "std_a must be positive"),
        (["--power-analysis", "--power", "1.2"], "power must be strictly between 0 and 1"),
        (["power", "--tasks", "no_such_task"], "unknown task or group 'no_such_task'"),
    ],
)
def test_bad_input_is_one_error_line_and_exit_1(argv: list[str], fragment: str, capsys) -> None:
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = [line for line in captured.err.splitlines() if line.startswith("lmms-eval: error:")]
    assert len(lines) == 1 and fragment in lines[0]


def test_run_power_analysis_raises_for_the_caller() -> None:
    with pytest.raises(LmmsEvalError, match="effect_size must be positive"):
        run_power_analysis(effect_size=0.0)


def test_power_measured_on_two_results_files(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """``--results A --results B``: sd, paired correlation, ICC and design effect from the samples."""
    import json

    import numpy as np

    from lmms_eval.cli import main
    from lmms_eval.stats.power import design_effect, intra_cluster_correlation

    rng = np.random.default_rng(0)
    clusters = [f"v{i // 4}" for i in range(80)]
    a = (rng.random(80) < 0.7).astype(int)
    b = np.where(rng.random(80) < 0.8, a, 1 - a)
    for name, scores in (("a", a), ("b", b)):
        folder = tmp_path / name
        folder.mkdir()
        config = {"task": "t", "cluster_key": "vid"}
        (folder / "20250101_000000_results.json").write_text(
            json.dumps({"results": {"t": {"alias": "t"}}, "configs": {"t": config}, "model_name": name})
        )
        rows = [
            {"doc_id": i, "filter": "none", "acc": {"score": int(s), "vid": clusters[i]}}
            for i, s in enumerate(scores)
        ]
        (folder / "20250101_000000_samples_t.jsonl").write_text("\n".join(map(json.dumps, rows)))
    assert main(["power", "--results", str(tmp_path / "a"), "--results", str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    rho = float(np.corrcoef(a, b)[0, 1])
    icc, g, m = intra_cluster_correlation((a - b).tolist(), clusters)
    row = next(line for line in out.splitlines() if line.startswith("| t "))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[2] == "80" and cells[5] == f"{rho:.3f}" and cells[6] == str(g) == "20"
    assert cells[7] == f"{icc:.3f}" and cells[8] == f"{design_effect(icc, m):.2f}"
    # the MDE is in points, as the --tasks mode prints it (0.1 would be a fraction)
    header = next(line for line in out.splitlines() if line.startswith("| Task"))
    assert [c.strip() for c in header.strip("|").split("|")][-1] == "MDE (points)"
    mde = float(cells[-1])
    assert 1.0 < mde < 100.0, cells


def test_power_on_a_metric_outside_0_1_names_its_units(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    import json

    from lmms_eval.cli import main

    folder = tmp_path / "a"
    folder.mkdir()
    (folder / "20250101_000000_results.json").write_text(
        json.dumps({"results": {"t": {"alias": "t"}}, "configs": {"t": {"task": "t"}}, "model_name": "a"})
    )
    rows = [{"doc_id": i, "filter": "none", "rating": float(1 + i % 10)} for i in range(60)]
    (folder / "20250101_000000_samples_t.jsonl").write_text("\n".join(map(json.dumps, rows)))
    assert main(["power", "--results", str(folder), "--effect-size", "1"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| t "))
    assert row.strip("| ").split("|")[-1].strip().endswith(" units")
