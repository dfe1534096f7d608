"""Small things a new user meets in the first hour (issue 27, item 10): the table's Stderr column agrees
with the interval beside it, p-values print alike everywhere, the dummy model says when ``accuracy``
cannot work, and results name our own task functions by their real module."""

from __future__ import annotations

import logging

import pytest

from lmms_eval.loggers.table import IMPLIED_NOTE, make_table
from lmms_eval.models.simple.dummy import DummySimple
from lmms_eval.stats.paired import format_p_value


def results(method: str, value: float, stderr: float, low: float, high: float) -> dict[str, object]:
    scores = {
        "alias": "t",
        "acc,none": value,
        "acc_stderr,none": stderr,
        "acc_ci_lower,none": low,
        "acc_ci_upper,none": high,
        "ci_methods": {"acc,none": method},
    }
    return {"results": {"t": scores}, "versions": {"t": 1.0}, "higher_is_better": {"t": {"acc": True}}}


def stderr_cell(table: str) -> str:
    header, _, row = table.splitlines()[:3]
    names = [c.strip() for c in header.strip("|").split("|")]
    return [c.strip() for c in row.strip("|").split("|")][names.index("Stderr")]


def test_a_wilson_row_shows_the_standard_error_its_interval_implies() -> None:
    table = make_table(results("wilson", 0.0, 0.0, 0.0, 0.4899))
    assert stderr_cell(table) == f"{0.4899 / (2 * 1.959963984540054):.4f}*"
    assert table.splitlines()[-1] == IMPLIED_NOTE


def test_a_t_interval_row_keeps_the_sample_standard_error_and_no_note() -> None:
    table = make_table(results("t", 0.5, 0.1, 0.3, 0.7))
    assert stderr_cell(table) == "0.1000"
    assert IMPLIED_NOTE not in table


@pytest.mark.parametrize(
    ("p", "shown"), [(3e-7, "<0.0001"), (0.01234, "0.0123"), (None, "N/A"), (float("nan"), "N/A")]
)
def test_p_values_print_alike(p: float | None, shown: str) -> None:
    assert format_p_value(p) == shown


def test_the_table_prints_p_with_the_shared_rule() -> None:
    data = results("t", 0.5, 0.1, 0.3, 0.7)
    scores = data["results"]["t"]  # type: ignore[index]
    scores.update({"acc_baseline,none": 0.4, "acc_diff,none": 0.1, "acc_diff_pvalue,none": 2e-9})
    assert "<0.0001" in make_table(data)


def test_the_dummy_model_warns_when_accuracy_has_no_answer_column(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="lmms_eval.models.simple.dummy"):
        DummySimple(accuracy=0.5)
    assert "accuracy=0.5 has no effect without answer_field" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="lmms_eval.models.simple.dummy"):
        DummySimple(accuracy=0.5, answer_field="answer")
        DummySimple()
    assert caplog.text == ""


def test_bundled_task_functions_are_named_by_their_real_module() -> None:
    from lmms_eval.api.task import ConfigurableTask
    from lmms_eval.tasks import TaskManager, get_task_dict

    task = get_task_dict(["demo_shapes"], TaskManager())["demo_shapes"]
    assert isinstance(task, ConfigurableTask)
    config = task.dump_config()
    named = [v for v in config.values() if isinstance(v, str) and v.endswith(".process_results")]
    assert named == ["lmms_eval.tasks.demo_shapes.utils.process_results"]
