"""The per-document fast paths give exactly what the doc-by-doc path gives.

* scoring: :func:`score_generation_docs` (all docs of a task at once) against
  ``task.process_results`` doc by doc, over exact_match options, several golds and label metrics;
* templates: the field-only fast path of ``render_template`` against Jinja itself;
* samples: the one reusable line encoder against ``json.dumps`` (NaN written as null).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from lmms_eval.api.doc_fields import _environment, render_template
from lmms_eval.api.scoring import score_generation_docs
from lmms_eval.api.task import ConfigurableTask
from lmms_eval.errors import ConfigError
from lmms_eval.results.encoding import dumps
from lmms_eval.tasks import TaskManager

DOCS = [
    {"q": "one", "answer": "Paris.", "answers": ["Paris", "paris france"]},
    {"q": "two", "answer": "  4 2 ", "answers": []},
    {"q": "three", "answer": "B", "answers": ["B", "c"]},
]
PREDICTIONS = [["paris"], ["42"], ["B"]]


def _task(tmp_path: Path, target: str, metrics: str) -> ConfigurableTask:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "d.jsonl").write_text("\n".join(json.dumps(d) for d in DOCS) + "\n", encoding="utf-8")
    (tmp_path / "t.yaml").write_text(
        "task: t\ndataset_path: json\ndataset_kwargs:\n  data_files:\n    test: d.jsonl\n"
        f"test_split: test\noutput_type: generate_until\ndoc_to_text: q\ndoc_to_target: {target}\n"
        f"metric_list:\n{metrics}",
        encoding="utf-8",
    )
    task = TaskManager(include_path=str(tmp_path), include_defaults=False).load_task_or_group(["t"])["t"]
    assert isinstance(task, ConfigurableTask)
    return task


EXACT = "  - metric: exact_match\n"
OPTIONS = EXACT + '    ignore_case: true\n    ignore_punctuation: true\n    regexes_to_ignore: ["\\\\s+"]\n'


@pytest.mark.parametrize(
    ("target", "metrics"),
    [("answer", EXACT), ("answer", OPTIONS), ("answers", OPTIONS), ("answers", EXACT + "  - metric: f1\n")],
)
def test_all_docs_at_once_score_as_doc_by_doc(tmp_path: Path, target: str, metrics: str) -> None:
    task = _task(tmp_path, target, metrics)
    docs = [task.scoring_docs[i] for i in range(len(DOCS))]
    at_once = score_generation_docs(task, docs, PREDICTIONS)
    assert at_once is not None
    assert at_once == [task.process_results(doc, r) for doc, r in zip(docs, PREDICTIONS)]
    assert any(row["exact_match"] == 1.0 for row in at_once)


def test_metrics_without_a_vectorised_form_are_scored_doc_by_doc(tmp_path: Path) -> None:
    task = _task(tmp_path, "answer", "  - metric: anls\n")
    assert score_generation_docs(task, [task.scoring_docs[0]], [["paris"]]) is None
    bad = _task(tmp_path / "bad", "answer", EXACT + "    no_such_option: 1\n")
    assert score_generation_docs(bad, [bad.scoring_docs[0]], [["paris"]]) is None  # the per-doc path names it


@pytest.mark.parametrize(
    "template",
    ["Q{{ id }}: {{ question }}\nA.", "{{n}}|{{ f }}|{{b}}|{{ none }}|{{ items }}", "{{ id|upper }}", "{{- id }}",
     "a\r\n{{ id }}", "{{ range }}", "no fields", ""],
)  # fmt: skip
def test_field_only_templates_render_as_jinja_renders_them(template: str) -> None:
    doc: dict[str, Any] = {
        "id": "q1",
        "question": "Why?",
        "n": 3,
        "f": 0.1,
        "b": True,
        "none": None,
        "items": [1],
    }
    assert render_template(template, doc, "t", "doc_to_text") == _environment().from_string(template).render(
        **doc
    )


def test_a_missing_field_is_still_named() -> None:
    with pytest.raises(ConfigError, match="'missing' is undefined"):
        render_template("{{ missing }}", {"id": 1}, "t", "doc_to_text")


def test_the_line_encoder_writes_what_json_dumps_writes() -> None:
    record = {"doc": {"text": "é ✓", "n": 1, "t": (1, 2)}, "metrics": {"exact_match": 1.0}, "resps": [["x"]]}
    assert dumps(record) == json.dumps(record, ensure_ascii=False)
    assert dumps({"v": math.nan, "w": [math.inf, 1.5]}) == '{"v": null, "w": [null, 1.5]}'


def test_a_run_collects_less_and_puts_the_collector_back() -> None:
    import gc

    from lmms_eval import inference

    before = gc.get_threshold()
    with inference.fewer_collections():
        assert gc.get_threshold()[0] == inference.RUN_GC_THRESHOLD
        assert gc.get_freeze_count() > 0  # what was alive at the start is left out of collections
        with inference.fewer_collections():  # a nested (or concurrent) run shares the setting
            pass
        assert gc.get_threshold()[0] == inference.RUN_GC_THRESHOLD
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
