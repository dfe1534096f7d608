"""Built-in metrics and aggregations against hand-worked values and direct sacrebleu calls."""

from __future__ import annotations

import math
import sys

import pytest

from lmms_eval.api import metrics
from lmms_eval.api.registry import get_aggregation, get_metric
from lmms_eval.errors import MissingDependencyError

# ------------------------------------------------------------------------------------------------
# registry: names, default aggregations, direction (reference section 1.8)
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "aggregation", "higher_is_better"),
    [
        ("acc", "mean", True),
        ("acc_norm", "mean", True),
        ("acc_mutual_info", "mean", True),
        ("exact_match", "mean", True),
        ("anls", "mean", True),
        ("perplexity", "perplexity", False),
        ("word_perplexity", "weighted_perplexity", False),
        ("byte_perplexity", "weighted_perplexity", False),
        ("bits_per_byte", "bits_per_byte", False),
        ("f1", "f1", True),
        ("mcc", "matthews_corrcoef", True),
        ("bleu", "bleu", True),
        ("chrf", "chrf", True),
        ("ter", "ter", False),
        ("brier_score", "brier_score", False),
        ("bypass", "bypass", None),
    ],
)
def test_registered_metric_defaults(name: str, aggregation: str, higher_is_better: bool | None) -> None:
    spec = get_metric(name)
    assert spec.aggregation == aggregation
    assert spec.higher_is_better is higher_is_better
    assert callable(get_aggregation(aggregation))


def test_every_documented_aggregation_is_registered() -> None:
    names = ["mean", "median", "perplexity", "weighted_perplexity", "bits_per_byte", "f1"]
    names += ["matthews_corrcoef", "bleu", "chrf", "ter", "brier_score", "bypass"]
    for name in names:
        assert callable(get_aggregation(name))


def test_unknown_aggregation_suggests_a_name() -> None:
    with pytest.raises(LookupError, match="Did you mean 'median'"):
        get_aggregation("medain")


# ------------------------------------------------------------------------------------------------
# mean / median
# ------------------------------------------------------------------------------------------------


def test_mean_skips_none_and_counts_bools() -> None:
    assert metrics.mean([1, 0, True, None]) == pytest.approx(2 / 3)
    assert metrics.mean([0.25, 0.75]) == 0.5


def test_mean_and_median_of_nothing_are_nan() -> None:
    assert math.isnan(metrics.mean([]))
    assert math.isnan(metrics.mean([None]))
    assert math.isnan(metrics.median([]))


def test_median_odd_and_even() -> None:
    assert metrics.median([3, 1, 2]) == 2
    assert metrics.median([4, 1, 3, 2]) == 2.5


# ------------------------------------------------------------------------------------------------
# perplexity family
# ------------------------------------------------------------------------------------------------


def test_perplexity_is_exp_of_negative_mean_loglikelihood() -> None:
    # mean ll = (-1 - 3) / 2 = -2
    assert metrics.perplexity([-1.0, -3.0]) == pytest.approx(math.e**2)


def test_perplexity_overflow_is_infinite_not_an_error() -> None:
    assert metrics.perplexity([-1000.0]) == math.inf


def test_weighted_perplexity_divides_total_ll_by_total_weight() -> None:
    # -(-2 - 4) / (1 + 3) = 1.5; a per-item mean would give exp((2 + 4/3) / 2) instead
    assert metrics.weighted_perplexity([(-2.0, 1), (-4.0, 3)]) == pytest.approx(math.exp(1.5))


def test_bits_per_byte_uses_log_base_two() -> None:
    # 8 nats over 8 bytes = 1 nat per byte = 1 / ln 2 bits per byte
    items = [(-2.0, 4), (-6.0, 4)]
    assert metrics.bits_per_byte(items) == pytest.approx(1 / math.log(2))
    # bits per byte is log2 of byte perplexity on the same items
    assert metrics.bits_per_byte(items) == pytest.approx(math.log2(metrics.weighted_perplexity(items)))


def test_weighted_aggregations_without_weight_are_nan() -> None:
    assert math.isnan(metrics.weighted_perplexity([]))
    assert math.isnan(metrics.bits_per_byte([(-1.0, 0)]))


# ------------------------------------------------------------------------------------------------
# f1 and mcc from hand-counted confusion matrices
# ------------------------------------------------------------------------------------------------


def test_binary_f1() -> None:
    golds = [1, 1, 0, 0, 1]
    preds = [1, 0, 1, 0, 1]
    # tp = 2 (items 0, 4), fp = 1 (item 2), fn = 1 (item 1): P = R = 2/3
    assert metrics.f1_score(list(zip(golds, preds))) == pytest.approx(2 / 3)


def test_binary_f1_counts_only_the_positive_label() -> None:
    # tp = 0, fp = 0, fn = 2: F1(1) = 0 even though every 0 is right
    assert metrics.f1_score([(1, 0), (1, 0), (0, 0), (0, 0)]) == 0.0


def test_f1_without_positives_is_zero_not_nan() -> None:
    assert metrics.f1_score([(0, 0), (0, 0)]) == 0.0


def test_macro_f1_over_string_labels() -> None:
    golds = ["a", "a", "b", "c"]
    preds = ["a", "b", "b", "a"]
    # a: tp 1 fp 1 fn 1 -> 1/2; b: tp 1 fp 1 fn 0 -> 2/3; c: tp 0 fn 1 -> 0
    assert metrics.f1_score(list(zip(golds, preds))) == pytest.approx((1 / 2 + 2 / 3 + 0) / 3)


def test_f1_accepts_unhashable_labels() -> None:
    assert metrics.f1_score([(["x", "y"], ["x", "y"]), (["z"], ["x", "y"])]) == pytest.approx((2 / 3 + 0) / 2)


def test_mcc_binary_matches_the_two_by_two_formula() -> None:
    golds = [1, 1, 1, 0, 0, 0, 1, 0]
    preds = [1, 1, 0, 0, 0, 1, 1, 0]
    tp, tn, fp, fn = 3, 3, 1, 1  # counted by hand
    expected = (tp * tn - fp * fn) / math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    assert expected == 0.5
    assert metrics.matthews_corrcoef(list(zip(golds, preds))) == pytest.approx(0.5)


def _mcc_by_covariance(golds: list[str], preds: list[str]) -> float:
    """Gorodkin's definition: covariance of the one-hot gold and prediction matrices."""
    labels = sorted(set(golds) | set(preds))
    n = len(golds)

    def cov(a: list[str], b: list[str]) -> float:
        total = 0.0
        for k in labels:
            xa = [1.0 if v == k else 0.0 for v in a]
            xb = [1.0 if v == k else 0.0 for v in b]
            ma, mb = sum(xa) / n, sum(xb) / n
            total += sum((u - ma) * (w - mb) for u, w in zip(xa, xb))
        return total

    return cov(golds, preds) / math.sqrt(cov(golds, golds) * cov(preds, preds))


def test_mcc_multiclass() -> None:
    golds = ["0", "0", "1", "1", "2", "2"]
    preds = ["0", "1", "1", "1", "2", "0"]
    # c = 4, s = 6, t = (2, 2, 2), p = (2, 3, 1): (24 - 12) / sqrt((36 - 14) * (36 - 12))
    hand = 12 / math.sqrt(22 * 24)
    assert _mcc_by_covariance(golds, preds) == pytest.approx(hand)
    assert metrics.matthews_corrcoef(list(zip(golds, preds))) == pytest.approx(hand)


def test_mcc_extremes_and_degenerate_input() -> None:
    assert metrics.matthews_corrcoef([(0, 0), (1, 1), (1, 1)]) == pytest.approx(1.0)
    assert metrics.matthews_corrcoef([(0, 1), (1, 0)]) == pytest.approx(-1.0)
    # constant predictions: the correlation is undefined and reported as 0, not NaN
    assert metrics.matthews_corrcoef([(0, 1), (1, 1), (1, 1)]) == 0.0


def test_mcc_does_not_mix_int_and_str_labels() -> None:
    # 1 and "1" are different labels: nothing matches (equal labels would give 1.0)
    assert metrics.matthews_corrcoef([(1, "1"), (0, "0")]) == 0.0


# ------------------------------------------------------------------------------------------------
# brier score
# ------------------------------------------------------------------------------------------------


def test_brier_score() -> None:
    items = [(0, [0.7, 0.2, 0.1]), (2, [0.5, 0.25, 0.25])]
    # (0.09 + 0.04 + 0.01) and (0.25 + 0.0625 + 0.5625)
    assert metrics.brier_score(items) == pytest.approx((0.14 + 0.875) / 2)


def test_brier_score_rejects_gold_out_of_range() -> None:
    with pytest.raises(ValueError, match="gold index 3"):
        metrics.brier_score([(3, [0.5, 0.5])])


# ------------------------------------------------------------------------------------------------
# sacrebleu corpus metrics
# ------------------------------------------------------------------------------------------------

PREDS = ["the cat sat on the mat", "hi", "a quick brown fox jumps"]
REFS = [["the cat sat on a mat", "a cat sat on the mat"], ["hi there you"], ["the quick brown fox jumps"]]


def test_bleu_chrf_ter_match_sacrebleu_with_one_reference() -> None:
    sacrebleu = pytest.importorskip("sacrebleu")
    items = [(refs[0], pred) for refs, pred in zip(REFS, PREDS)]
    streams = [[refs[0] for refs in REFS]]
    assert metrics.bleu(items) == pytest.approx(sacrebleu.corpus_bleu(PREDS, streams).score)
    assert metrics.chrf(items) == pytest.approx(sacrebleu.corpus_chrf(PREDS, streams).score)
    assert metrics.ter(items) == pytest.approx(sacrebleu.corpus_ter(PREDS, streams).score)


def test_corpus_metrics_with_a_varying_number_of_references() -> None:
    sacrebleu = pytest.importorskip("sacrebleu")
    items = list(zip(REFS, PREDS))
    # repeating a doc's only reference changes none of the three scores, so the expected value
    # is sacrebleu on a rectangular reference set
    rectangular = [refs if len(refs) == 2 else [refs[0], refs[0]] for refs in REFS]
    streams = [list(s) for s in zip(*rectangular)]
    assert metrics.bleu(items) == pytest.approx(sacrebleu.corpus_bleu(PREDS, streams).score)
    assert metrics.chrf(items) == pytest.approx(sacrebleu.corpus_chrf(PREDS, streams).score)
    assert metrics.ter(items) == pytest.approx(sacrebleu.corpus_ter(PREDS, streams).score)


def test_bleu_of_a_perfect_corpus_is_100() -> None:
    pytest.importorskip("sacrebleu")
    assert metrics.bleu([("a b c d e", "a b c d e"), ("f g h i", "f g h i")]) == pytest.approx(100.0)
    assert metrics.ter([("a b c d e", "a b c d e")]) == pytest.approx(0.0)


def test_missing_sacrebleu_error_names_the_package_and_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sacrebleu", None)  # makes `import sacrebleu` fail
    with pytest.raises(MissingDependencyError, match=r"sacrebleu.*pip install 'lmms_eval\[metrics\]'"):
        metrics.bleu([("a", "a")])


def test_bypass_aggregation_and_metric_give_no_score() -> None:
    assert metrics.bypass_agg([1, 2, 3]) is None
    assert get_metric("bypass").fn(references=["a"], predictions=["b"]) is None


# ------------------------------------------------------------------------------------------------
# exact_match
# ------------------------------------------------------------------------------------------------


def em(pred: str, ref: str, **kwargs: object) -> float:
    return metrics.exact_match(references=[ref], predictions=[pred], **kwargs)  # type: ignore[arg-type]


def test_exact_match_is_plain_string_equality_by_default() -> None:
    assert em("Paris", "Paris") == 1.0
    assert em("paris", "Paris") == 0.0
    assert em("Paris ", "Paris") == 0.0
    assert em("", "") == 1.0


def test_exact_match_is_the_mean_over_pairs() -> None:
    assert metrics.exact_match_hf(["a", "b", "c", "d"], ["a", "x", "c", "y"]) == 0.5


def test_exact_match_options() -> None:
    assert em("PARIS", "paris", ignore_case=True) == 1.0
    assert em("Hello, world!", "Hello world", ignore_punctuation=True) == 1.0
    assert em("Hello, world!", "Hello world") == 0.0
    assert em("route 66", "route ", ignore_numbers=True) == 1.0
    assert em("The answer is 42", "42", regexes_to_ignore=["The answer is "]) == 1.0


def test_exact_match_accepts_one_regex_as_a_string() -> None:
    # a plain string is one pattern, not a list of one-character patterns
    assert em("xx-yy", "xxyy", regexes_to_ignore="-") == 1.0
    assert em("ab", "", regexes_to_ignore="ab") == 1.0
    assert em("ba", "", regexes_to_ignore="ab") == 0.0


def test_exact_match_applies_regexes_before_lower_casing() -> None:
    # "the " is removed from the reference only (case-sensitive), then both are lower-cased
    assert em("THE cat", "the cat", regexes_to_ignore=["the "], ignore_case=True) == 0.0
    assert em("the cat", "THE cat", regexes_to_ignore=["(?i)the "], ignore_case=True) == 1.0


def test_exact_match_unicode() -> None:
    assert em("ÉCOLE", "école", ignore_case=True) == 1.0
    # punctuation is ASCII punctuation: guillemets stay
    assert em("«oui»", "oui", ignore_punctuation=True) == 0.0


def test_exact_match_length_mismatch_is_an_error() -> None:
    with pytest.raises(ValueError, match="as many predictions as references"):
        metrics.exact_match_hf(["a"], ["a", "b"])


# ------------------------------------------------------------------------------------------------
# Levenshtein and ANLS
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "distance"),
    [
        ("kitten", "sitting", 3),
        ("", "abc", 3),
        ("flaw", "lawn", 2),
        ("same", "same", 0),
        ("日本語", "日本", 1),
    ],
)
def test_levenshtein(a: str, b: str, distance: int) -> None:
    assert metrics.levenshtein(a, b) == distance
    assert metrics.levenshtein(b, a) == distance


def test_anls_normalises_case_and_whitespace() -> None:
    assert metrics.anls_score("  Hello   World ", ["hello world"]) == 1.0


def test_anls_similarity_and_threshold() -> None:
    assert metrics.anls_score("helo", ["hello"]) == pytest.approx(1 - 1 / 5)
    assert metrics.anls_score("ab", ["ax"]) == pytest.approx(0.5)  # exactly at the threshold: kept
    assert metrics.anls_score("abc", ["abx"], threshold=0.7) == 0.0  # 2/3 < 0.7
    assert metrics.anls_score("abc", ["xyz"]) == 0.0


def test_anls_takes_the_best_reference() -> None:
    assert metrics.anls_score("helo", ["xyz", "hello", "help me"]) == pytest.approx(0.8)


def test_anls_edge_cases() -> None:
    assert metrics.anls_score("", [""]) == 1.0
    assert metrics.anls_score("abc", []) == 0.0


def test_anls_metric_takes_a_nested_reference_list_and_threshold() -> None:
    assert metrics.anls(references=[["xyz", "Hello"]], predictions=["helo"]) == pytest.approx(0.8)
    assert metrics.anls(references=["hello"], predictions=["helo"], thresh_hold=0.9) == 0.0
    assert metrics.anls(references=["hello"], predictions=["helo"], threshold=0.9) == 0.0
