"""COCO caption metrics (lmms_eval.scoring.caption), with expected values worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lmms_eval.scoring import caption
from lmms_eval.scoring.caption import (
    MeteorParams,
    bleu_stats,
    cider_d_scores,
    coco_caption_scores,
    corpus_bleu,
    corpus_meteor,
    corpus_rouge_l,
    lcs_length,
    meteor_align,
    meteor_from_stats,
    meteor_stats,
    porter_stemmer,
    rouge_l,
    tokenize,
)


def test_tokenizer_lowercases_splits_clitics_and_drops_punctuation() -> None:
    text = "A dog's toy, isn't it? (Black-and-white) photo of 1,000 cats; 3.5 m... \"wow\" 50% cannot"
    # brackets become -lrb- / -rrb- and stay (pycocoevalcap's drop list spells them upper-case);
    # "m." is a single letter with its full stop, which the PTB tokenizer keeps as an abbreviation
    assert tokenize(text) == [
        "a", "dog", "'s", "toy", "is", "n't", "it", "-lrb-", "black-and-white", "-rrb-", "photo",
        "of", "1,000", "cats", "3.5", "m.", "wow", "50", "%", "can", "not",
    ]  # fmt: skip
    assert tokenize("A man riding a horse.") == ["a", "man", "riding", "a", "horse"]
    assert tokenize("Two dogs \u2019s  - -- ...") == ["two", "dogs", "'s"]
    assert tokenize("") == []


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        # abbreviations keep their full stop, a sentence's final full stop goes
        ("Mr. Smith lives on St. Louis Ave.", "mr. smith lives on st. louis ave."),
        ("Smith. then the U.S. flag at 8 p.m., e.g. today.", "smith then the u.s. flag at 8 p.m. e.g. today"),
        ("say no. no. 5", "say no no. 5"),  # "no." keeps its stop only before a number
        # times, fractions and signed or separated numbers stay whole; "5 1/2" is one token
        ("At 10:30 eat 1/2 of -5 and 1,000.50", "at 10:30 eat 1/2 of -5 and 1,000.50"),
        ("5 1/2 inches", "5\u00a01/2 inches"),
        # runs of ! and ? are one token (kept); a single one is dropped
        ("Wow!!! Really?!? Yes? No!", "wow !!! really ?!? yes no"),
        # every bracket kind has its PTB name, and the names are not dropped
        ("(a) [b] {c}", "-lrb- a -rrb- -lsb- b -rsb- -lcb- c -rcb-"),
        # quotes of every kind, dashes, colons, semicolons and ellipses are dropped
        ('He said "hi" -- then `left\' ; ok: \u201cgo\u201d\u2026', "he said hi then left ok go"),
        # clitics; words keep inner hyphens, apostrophes, ampersands and slashes
        (
            "They're gonna see o'clock and/or AT&T 5-year-old dogs' toys",
            "they 're gon na see o'clock and/or at&t 5-year-old dogs toys",
        ),
        ("I'd've can't won't 'tis", "i 'd 've ca n't wo n't 't is"),
        # symbols are tokens of their own; pounds and euros are written as PTB writes them
        ("$5 3*4 x=y \u00a35 \u20ac5", "$ 5 3 * 4 x = y # 5 $ 5"),
    ],
)
def test_tokenizer_follows_the_ptb_tokenizer(text: str, tokens: str) -> None:
    assert tokenize(text) == tokens.split(" ")


def test_ptb_tokens_keep_what_the_coco_scorer_drops_later() -> None:
    # the tokens before pycocoevalcap's drop list: marks are tokens; double quotes come out as ''
    assert caption.ptb_tokens('A "dog", -- wow!') == ["a", "''", "dog", "''", ",", "--", "wow", "!"]
    assert {".", ",", "!", "''", "--", "..."} <= caption.DROPPED_TOKENS
    assert "-lrb-" not in caption.DROPPED_TOKENS and "-LRB-" in caption.DROPPED_TOKENS


def test_bleu_two_image_corpus_with_brevity_penalty() -> None:
    # image 1: "the cat sat" vs refs of length 4 and 5 -> closest length 4.
    #   1-grams 3/3, 2-grams ("the cat", "cat sat") 2/2, 3-grams 1/1, 4-grams 0/0.
    # image 2: "dog dog dog" vs "a dog runs" (3) and "the dog" (2) -> closest length 3.
    #   1-grams: "dog" x3 clipped to 1 -> 1/3; 2-grams 0/2; 3-grams 0/1; 4-grams 0/0.
    # corpus: c = 6, r = 7, correct [4, 2, 1, 0], totals [6, 4, 2, 0]; BP = exp(1 - 7/6) = exp(-1/6).
    # BLEU-1 = 4/6 BP; BLEU-2 = (4/6 * 2/4)^(1/2) BP; BLEU-3 = (4/6 * 2/4 * 1/2)^(1/3) BP;
    # BLEU-4: the empty order is (0 + 1e-15) / (0 + 1e-9) = 1e-6 (COCO smoothing) -> (1/6 * 1e-6)^(1/4) BP.
    cands = ["the cat sat", "Dog dog dog."]
    refs = [["the cat sat down", "a cat sat here now"], ["a dog runs", "the dog"]]
    bp = math.exp(-1 / 6)
    expected = [4 / 6 * bp, (1 / 3) ** 0.5 * bp, (1 / 6) ** (1 / 3) * bp, (1e-6 / 6) ** 0.25 * bp]
    assert corpus_bleu(cands, refs) == pytest.approx(expected, rel=1e-8)
    stats = bleu_stats(tokenize(cands[1]), [tokenize(r) for r in refs[1]])
    assert (stats.test_len, stats.ref_len, stats.guess, stats.correct) == (3, 3, (3, 2, 1, 0), (1, 0, 0, 0))


def test_bleu_closest_reference_length_ties_take_the_shorter() -> None:
    # candidate of 3 tokens, references of 2 and 4 tokens: both 1 away -> r = 2, c = 3 >= r: no penalty.
    stats = bleu_stats(["a", "b", "c"], [["a", "b"], ["a", "b", "c", "d"]])
    assert stats.ref_len == 2
    assert corpus_bleu(["a b c"], [["a b", "a b c d"]])[0] == pytest.approx(1.0)


def test_lcs_and_rouge_l_take_best_precision_and_best_recall_separately() -> None:
    cand = tokenize("a man riding a horse")
    ref1, ref2 = tokenize("a man rides a brown horse"), tokenize("a man")
    assert lcs_length(cand, ref1) == 4  # "a man a horse"
    assert lcs_length(cand, ref2) == 2
    # P = max(4/5, 2/5) = 0.8 (ref1); R = max(4/6, 2/2) = 1.0 (ref2)
    # F = (1 + 1.2^2) * 0.8 * 1.0 / (1.0 + 1.2^2 * 0.8) = 1.952 / 2.152
    assert rouge_l(cand, [ref1, ref2]) == pytest.approx(1.952 / 2.152)
    # with ref1 only: P = 0.8, R = 4/6: F = 2.44 * 0.8 * (2/3) / (2/3 + 1.152)
    assert rouge_l(cand, [ref1]) == pytest.approx(2.44 * 0.8 * (2 / 3) / (2 / 3 + 1.152))
    assert rouge_l([], [ref1]) == 0.0
    assert rouge_l(["zebra"], [ref1]) == 0.0
    # corpus = mean over images
    assert corpus_rouge_l(
        ["a man riding a horse", "zebra"], [["a man rides a brown horse", "a man"], ["a cat"]]
    ) == (pytest.approx(1.952 / 2.152 / 2))


def test_cider_identical_captions_and_short_captions() -> None:
    # Two images, one reference each, no n-gram shared across images: every df = 1, idf = log 2.
    # A candidate equal to its reference has cosine 1 at every order it has n-grams for, and no length
    # penalty: 5 tokens have orders 1..4 -> 10 * 4/4 = 10; 3 tokens have no 4-gram -> 10 * 3/4 = 7.5.
    assert cider_d_scores(["a b c d e", "x y z"], [["a b c d e"], ["x y z"]]) == pytest.approx([10.0, 7.5])


def test_cider_disjoint_caption_scores_zero_and_single_image_corpus_has_zero_idf() -> None:
    assert cider_d_scores(["p q r", "x y z"], [["a b c"], ["x y z"]]) == pytest.approx([0.0, 7.5])
    # one image: idf = log(1) - log(1) = 0 for every n-gram, so every vector is zero
    assert cider_d_scores(["a b c"], [["a b c"]]) == [0.0]


def test_cider_length_penalty() -> None:
    # image 1: candidate "a b", reference "a b c d" (df = 1 everywhere, idf = L = log 2).
    #   order 1: c = {a: L, b: L}, r = {a, b, c, d: L}: (L^2 + L^2) / (sqrt(2) L * 2 L) = 1/sqrt(2)
    #   order 2: c = {ab}, r = {ab, bc, cd}: L^2 / (L * sqrt(3) L) = 1/sqrt(3); orders 3, 4: 0
    #   lengths in bigrams: 1 and 3 -> d = -2 -> penalty exp(-4 / 72) = exp(-1/18)
    expected = 10 * (2**-0.5 + 3**-0.5) / 4 * math.exp(-1 / 18)
    scores = cider_d_scores(["a b", "q r s t"], [["a b c d"], ["q r s t"]])
    assert scores == pytest.approx([expected, 10.0])
    assert caption.corpus_cider_d(["a b", "q r s t"], [["a b c d"], ["q r s t"]]) == pytest.approx(
        (expected + 10) / 2
    )


def test_cider_clips_candidate_weights_and_averages_over_references() -> None:
    # Image 1 refs "a a" and "b"; candidate "a a a a". Image 2 ref "z" keeps df(a) = df(b) = 1, idf = L.
    # order 1 vs "a a": c = {a: 4L}, r = {a: 2L}: min(4L, 2L) * 2L / (4L * 2L) = 0.5
    # order 2 vs "a a": c = {aa: 3L}, r = {aa: L}: min(3L, L) * L / (3L * L) = 1/3
    # lengths in bigrams: 3 vs 1 -> penalty exp(-4/72); vs "b": no overlap -> 0
    # score = 10 * ((0.5 + 1/3) * exp(-1/18) / 4) / 2 references
    scores = cider_d_scores(["a a a a", "z"], [["a a", "b"], ["z"]])
    assert scores[0] == pytest.approx(10 * (0.5 + 1 / 3) * math.exp(-1 / 18) / 4 / 2)


def test_meteor_exact_and_stem_matches_with_fragmentation_penalty() -> None:
    stem = porter_stemmer()
    hyp, ref = tokenize("two dogs running on grass"), tokenize("two dog runs on the grass")
    # exact: two, on, grass; stems: dogs~dog, running~runs ("run") -> 5 matches
    # alignment 0-0 1-1 2-2 3-3 | 4-5 -> 2 chunks
    assert meteor_align(hyp, ref, stem) == [(0, 0), (1, 1), (2, 2), (3, 3), (4, 5)]
    stats = meteor_stats(hyp, ref, stem)
    assert (stats.matches, stats.chunks, stats.hyp_len, stats.ref_len) == (5, 2, 5, 6)
    # METEOR 1.5 (alpha 0.85, beta 0.2, gamma 0.6, stem weight 0.6): weighted matches = 3 + 0.6 * 2 = 4.2
    # P = 4.2/5, R = 4.2/6; Fmean = P R / (0.85 P + 0.15 R); penalty = 0.6 (2/5)^0.2
    p, r = 4.2 / 5, 4.2 / 6
    penalty = 0.6 * (2 / 5) ** 0.2
    assert meteor_from_stats([stats]) == pytest.approx(p * r / (0.85 * p + 0.15 * r) * (1 - penalty))
    # the original 2005 formula: P = 1, R = 5/6; Fmean = P R / (0.9 P + 0.1 R); penalty = 0.5 (2/5)^3 = 0.032
    original = MeteorParams(alpha=0.9, beta=3.0, gamma=0.5, stem_weight=1.0)
    fmean = (5 / 6) / (0.9 + 1 / 12)
    assert meteor_from_stats([meteor_stats(hyp, ref, stem, original)], original) == pytest.approx(
        fmean * (1 - 0.032)
    )


def test_meteor_alignment_minimises_chunks_among_repeated_words() -> None:
    stem = porter_stemmer()
    # "a dog on a mat" vs "a mat with a dog on": pairing the first "a" with the second reference "a"
    # gives the chunks "a dog on" (-> 3..5) and "a mat" (-> 0..1): 2 chunks, not 4.
    pairs = meteor_align(tokenize("a dog on a mat"), tokenize("a mat with a dog on"), stem)
    assert pairs == [(0, 3), (1, 4), (2, 5), (3, 0), (4, 1)]
    # prefers exact matches over stem matches: "runs" pairs with "runs", "running" with "run"
    assert meteor_align(["running", "runs"], ["runs", "run"], stem) == [(0, 1), (1, 0)]


def test_corpus_meteor_sums_best_reference_statistics() -> None:
    # image 1: best reference gives m = 5, c = 5, r = 6, chunks = 2 (the worse "zebra" reference is ignored)
    # image 2: "a cat" vs "a cat sleeping": m = 2, c = 2, r = 3, chunks = 1
    # totals: m = 7, c = 7, r = 9, chunks = 3
    score = corpus_meteor(
        ["two dogs running on grass", "a cat"], [["zebra", "two dog runs on the grass"], ["a cat sleeping"]]
    )
    # with stem weight 0.6, image 1 weighs 3 + 0.6 * 2 = 4.2 and image 2 weighs 2: 6.2 in all
    # P = 6.2/7, R = 6.2/9; penalty = 0.6 (3/7)^0.2
    p, r = 6.2 / 7, 6.2 / 9
    expected = p * r / (0.85 * p + 0.15 * r) * (1 - 0.6 * (3 / 7) ** 0.2)
    assert score == pytest.approx(expected)
    assert corpus_meteor(["zebra"], [["a cat"]]) == 0.0


def test_all_metrics_at_once_match_the_single_functions_and_are_deterministic() -> None:
    cands = ["a man riding a horse", "two dogs running on grass", "a red car"]
    refs = [
        ["a man rides a horse", "a person on a horse"],
        ["two dog runs on the grass"],
        ["a red car parked"],
    ]
    scores = coco_caption_scores(cands, refs)
    assert list(scores) == list(caption.COCO_METRICS)
    assert [scores[f"Bleu_{n}"] for n in range(1, 5)] == pytest.approx(corpus_bleu(cands, refs))
    assert scores["METEOR"] == pytest.approx(corpus_meteor(cands, refs))
    assert scores["ROUGE_L"] == pytest.approx(corpus_rouge_l(cands, refs))
    assert scores["CIDEr"] == pytest.approx(caption.corpus_cider_d(cands, refs))
    assert coco_caption_scores(cands, refs) == scores


def test_resampled_scores_equal_the_corpus_scores_of_each_resample() -> None:
    cands = ["a man riding a horse", "two dogs running on grass", "a red car"]
    refs = [
        ["a man rides a horse", "a person on a horse"],
        ["two dog runs on the grass"],
        ["a red car parked"],
    ]
    toks = [tokenize(c) for c in cands]
    ref_toks = [[tokenize(r) for r in rs] for rs in refs]
    idx = np.array([[0, 0, 2], [1, 2, 1]])
    bleu = [bleu_stats(c, r) for c, r in zip(toks, ref_toks)]
    stem = porter_stemmer()
    meteor = [caption.meteor_best(c, r, stem) for c, r in zip(toks, ref_toks)]
    for row, (b3, m) in zip(
        idx, zip(caption.resampled_bleu(bleu, idx, 3), caption.resampled_meteor(meteor, idx))
    ):
        assert b3 == pytest.approx(corpus_bleu([cands[i] for i in row], [refs[i] for i in row])[2])
        assert m == pytest.approx(corpus_meteor([cands[i] for i in row], [refs[i] for i in row]))
    # rows [0, 0, 2] -> (1 + 1 + 4) / 3 = 2; [1, 2, 1] -> (2 + 4 + 2) / 3 = 8/3
    assert list(caption.resampled_mean([1.0, 2.0, 4.0], idx)) == pytest.approx([2.0, 8 / 3])


def test_corpus_shape_errors_name_the_problem() -> None:
    with pytest.raises(ValueError, match="2 candidates but 1 reference sets"):
        corpus_bleu(["a", "b"], [["a"]])
    with pytest.raises(ValueError, match="image 0 needs a non-empty list of references"):
        corpus_rouge_l(["a"], [[]])


def test_meteor_15_parameters_land_near_the_java_meteor() -> None:
    # "the cat was sat on the mat" vs "the cat sat on the mat": 6 exact matches in 2 chunks
    # P = 6/7, R = 1; Fmean = P R / (0.85 P + 0.15 R) = 0.97561; penalty = 0.6 (2/6)^0.2 = 0.48164
    # score = 0.97561 * (1 - 0.48164) = 0.50571. The Java METEOR 1.5 (through nlg-eval, as reported in
    # Maluuba/nlg-eval issue 105) gives 0.5120: its function-word weighting is the difference.
    score = corpus_meteor(["the cat was sat on the mat"], [["the cat sat on the mat"]])
    p = 6 / 7
    assert score == pytest.approx(p / (0.85 * p + 0.15) * (1 - 0.6 * (2 / 6) ** 0.2))
    assert abs(score - 0.5120) < 0.01
