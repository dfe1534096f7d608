"""Built-in process_results: which values each metric gets, per output type."""

from __future__ import annotations

import math
from typing import Any

import pytest

from lmms_eval.api import metrics
from lmms_eval.api.scoring import builtin_process_results
from lmms_eval.api.task import ConfigurableTask
from lmms_eval.api.task_config import TaskConfig
from lmms_eval.errors import ConfigError


def make_task(output_type: str, metric_names: list[str], **config: Any) -> ConfigurableTask:
    data: dict[str, Any] = {
        "task": "t",
        "output_type": output_type,
        "doc_to_text": "question",
        "doc_to_target": "answer",
        "test_split": "test",
        "metric_list": [{"metric": m} for m in metric_names],
    }
    data.update(config)
    return ConfigurableTask(TaskConfig.model_validate(data))


# ------------------------------------------------------------------------------------------------
# multiple_choice
# ------------------------------------------------------------------------------------------------

MC_DOC = {"question": "q", "choices": ["a", "bbbb", "cc"], "answer": 1}


def mc_task(*names: str) -> ConfigurableTask:
    return make_task("multiple_choice", list(names), doc_to_choice="choices")


def test_highest_loglikelihood_wins_and_acc_norm_divides_by_characters() -> None:
    task = mc_task("acc", "acc_norm")
    # raw: choice 0 (-2) wins; per character: -2/1, -4/4 = -1, -3/2 = -1.5 -> choice 1 wins
    out = builtin_process_results(task, MC_DOC, [(-2.0, False), (-4.0, False), (-3.0, False)])
    assert out == {"acc": 0.0, "acc_norm": 1.0}


def test_acc_is_not_the_argmin() -> None:
    task = mc_task("acc")
    out = builtin_process_results(task, MC_DOC, [(-9.0, False), (-0.5, True), (-3.0, False)])
    assert out["acc"] == 1.0


def test_ties_go_to_the_first_choice() -> None:
    task = mc_task("acc")
    doc = {**MC_DOC, "answer": 0}
    assert builtin_process_results(task, doc, [(-1.0, False), (-1.0, False), (-5.0, False)])["acc"] == 1.0


def test_gold_given_as_choice_text_or_letter() -> None:
    task = mc_task("acc")
    results = [(-3.0, False), (-1.0, False), (-5.0, False)]
    assert builtin_process_results(task, {**MC_DOC, "answer": "bbbb"}, results)["acc"] == 1.0
    assert builtin_process_results(task, {**MC_DOC, "answer": "B"}, results)["acc"] == 1.0


def test_several_gold_choices_any_counts() -> None:
    task = mc_task("acc", "f1")
    doc = {**MC_DOC, "answer": [0, 2]}
    out = builtin_process_results(task, doc, [(-3.0, False), (-4.0, False), (-1.0, False)])
    assert out["acc"] == 1.0
    assert out["f1"] == (2, 2)


def test_mc_exact_match_f1_mcc_and_brier_items() -> None:
    task = mc_task("exact_match", "f1", "mcc", "brier_score")
    lls = [math.log(0.2), math.log(0.5), math.log(0.3)]
    out = builtin_process_results(task, MC_DOC, [(lls[0], False), (lls[1], True), (lls[2], False)])
    assert out["exact_match"] == 1.0  # the gold continuation is the greedy one
    assert out["f1"] == (1, 1)
    assert out["mcc"] == (1, 1)
    gold, probs = out["brier_score"]
    assert gold == 1
    assert probs == pytest.approx([0.2, 0.5, 0.3])  # softmax of log-probabilities
    assert metrics.brier_score([out["brier_score"]]) == pytest.approx(0.04 + 0.25 + 0.09)


def test_mc_errors_are_config_errors() -> None:
    results = [(-1.0, False)] * 3
    with pytest.raises(ConfigError, match="out of range"):
        builtin_process_results(mc_task("acc"), {**MC_DOC, "answer": 7}, results)
    with pytest.raises(ConfigError, match="acc_mutual_info is not supported"):
        builtin_process_results(mc_task("acc_mutual_info"), MC_DOC, results)
    with pytest.raises(ConfigError, match="'bleu' is not available for multiple_choice"):
        builtin_process_results(mc_task("bleu"), MC_DOC, results)
    with pytest.raises(ConfigError, match="2 log-likelihoods for 3 choices"):
        builtin_process_results(mc_task("acc"), MC_DOC, results[:2])


# ------------------------------------------------------------------------------------------------
# loglikelihood
# ------------------------------------------------------------------------------------------------


def test_loglikelihood_items() -> None:
    task = make_task(
        "loglikelihood", ["perplexity", "acc", "word_perplexity", "byte_perplexity", "bits_per_byte"]
    )
    doc = {"question": "q", "answer": "héllo wörld"}  # 2 words, 13 UTF-8 bytes
    out = builtin_process_results(task, doc, [(-6.5, True)])
    assert out == {
        "perplexity": -6.5,
        "acc": 1,
        "word_perplexity": (-6.5, 2),
        "byte_perplexity": (-6.5, 13),
        "bits_per_byte": (-6.5, 13),
    }
    assert metrics.bits_per_byte([out["bits_per_byte"]]) == pytest.approx(6.5 / 13 / math.log(2))


def test_loglikelihood_rejects_generation_metrics() -> None:
    task = make_task("loglikelihood", ["exact_match"])
    with pytest.raises(ConfigError, match="'exact_match' is not available for loglikelihood"):
        builtin_process_results(task, {"question": "q", "answer": "a"}, [(-1.0, False)])


# ------------------------------------------------------------------------------------------------
# generation
# ------------------------------------------------------------------------------------------------


def test_generation_exact_match_with_metric_kwargs_and_stripped_prediction() -> None:
    task = make_task(
        "generate_until",
        [],
        metric_list=[{"metric": "exact_match", "ignore_case": True, "ignore_punctuation": True}],
    )
    out = builtin_process_results(task, {"question": "q", "answer": "Paris"}, ["  paris.\n"])
    assert out == {"exact_match": 1.0}


def test_generation_with_several_golds_scores_any_match() -> None:
    task = make_task("generate_until", ["exact_match", "anls"])
    doc = {"question": "q", "answer": ["NYC", "New York"]}
    out = builtin_process_results(task, doc, ["new york"])
    assert out["exact_match"] == 0.0  # case-sensitive by default
    assert out["anls"] == 1.0  # ANLS sees every gold and lower-cases
    assert builtin_process_results(task, doc, ["New York"])["exact_match"] == 1.0


def test_generation_corpus_and_label_items() -> None:
    task = make_task("generate_until", ["bleu", "chrf", "ter", "f1", "mcc"])
    doc = {"question": "q", "answer": ["yes", "yeah"]}
    out = builtin_process_results(task, doc, ["yeah"])
    assert out["bleu"] == (["yes", "yeah"], "yeah")
    assert out["ter"] == (["yes", "yeah"], "yeah")
    # labels: the gold the prediction matched, else the first gold
    assert out["f1"] == ("yeah", "yeah")
    assert builtin_process_results(task, doc, ["no"])["mcc"] == ("yes", "no")


def test_generation_takes_the_first_of_a_list_prediction() -> None:
    task = make_task("generate_until", ["exact_match"])
    out = builtin_process_results(task, {"question": "q", "answer": "4"}, [["4", "5"]])
    assert out == {"exact_match": 1.0}
    assert builtin_process_results(task, {"question": "q", "answer": ""}, [None]) == {"exact_match": 1.0}


def test_generation_with_a_function_metric() -> None:
    def contains(references: list[str], predictions: list[str]) -> dict[str, float]:
        return {"contains": float(references[0] in predictions[0])}

    task = make_task("generate_until", [], metric_list=[{"metric": contains, "aggregation": "mean"}])
    out = builtin_process_results(task, {"question": "q", "answer": "cat"}, ["a black cat"])
    assert out == {"contains": 1.0}


def test_generation_rejects_choice_only_metrics() -> None:
    task = make_task("generate_until", ["acc"])
    with pytest.raises(ConfigError, match="'acc' is not available for generate_until"):
        builtin_process_results(task, {"question": "q", "answer": "a"}, ["a"])


def test_generation_f1_end_to_end_through_the_aggregation() -> None:
    task = make_task("generate_until", ["f1"])
    docs = [("yes", "yes"), ("yes", "no"), ("no", "no"), ("no", "yes")]
    items = [
        builtin_process_results(task, {"question": "q", "answer": gold}, [pred])["f1"] for gold, pred in docs
    ]
    # yes: tp 1 fp 1 fn 1 -> 1/2; no: the same -> macro 1/2
    assert metrics.f1_score(items) == pytest.approx(0.5)


def test_unknown_metric_option_is_a_config_error() -> None:
    task = make_task("generate_until", [], metric_list=[{"metric": "exact_match", "ignore_kase": True}])
    with pytest.raises(ConfigError, match="ignore_kase"):
        builtin_process_results(task, {"question": "q", "answer": "a"}, ["a"])
