"""Corpus-level caption metrics as the COCO caption evaluation reports them: BLEU-1..4, METEOR,
ROUGE-L and CIDEr-D, in plain Python (no Java).

Every metric compares each image's candidate caption with that image's reference captions after
:func:`tokenize`. Scores are on the COCO scale: BLEU, METEOR and ROUGE-L in [0, 1], CIDEr-D in
[0, 10]. The corpus functions take ``candidates[i]`` (a string) and ``references[i]`` (a list of
strings) of image ``i``.

- **BLEU-n** (:func:`corpus_bleu`): clipped n-gram counts (a candidate n-gram counts at most as often
  as in the reference that has it most often) and candidate n-gram totals are summed over the
  corpus; BLEU-n is the geometric mean of the corpus precisions of orders 1..n times the brevity
  penalty ``exp(1 - r / c)`` when ``c < r``, where ``c`` is the total candidate length and ``r`` sums,
  per image, the reference length closest to the candidate's (ties: the shorter). As in the COCO
  scorer, every precision is ``(correct + 1e-15) / (total + 1e-9)``, so an order without any match
  gives a tiny positive value instead of zero.
- **METEOR** (:func:`corpus_meteor`): see :class:`MeteorParams`.
- **ROUGE-L** (:func:`rouge_l`): per image, precision ``LCS / len(candidate)`` and recall
  ``LCS / len(reference)`` against each reference; the largest precision and the largest recall
  (possibly from different references, as the COCO scorer does) give
  ``F = (1 + b^2) P R / (R + b^2 P)`` with ``b = 1.2``; the corpus score is the mean over images.
- **CIDEr-D** (:func:`cider_d_scores`): n-grams of orders 1..4 weighted by TF-IDF, where the
  document frequency of an n-gram is the number of images of the evaluated corpus whose reference
  set contains it and the IDF is ``log(#images) - log(max(1, df))``. Per order, the similarity of
  the candidate vector to a reference vector is ``sum_g min(c_g, r_g) * r_g / (|c| |r|)`` (candidate
  weights clipped to the reference's), times the length penalty ``exp(-d^2 / (2 * 6^2))``, where
  ``d`` is the difference of the candidate's and the reference's lengths counted in bigrams
  (tokens - 1), as the COCO scorer counts them. An image's score is the mean over the four orders of
  the mean over its references, times 10; the corpus score is the mean over images.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import permutations, product
from typing import Any

Tokens = list[str]

# -- tokenizer -----------------------------------------------------------------------------------

# pycocoevalcap drops exactly these tokens after the PTB tokenizer (its list, as written: the
# upper-case bracket names never match the lower-cased "-lrb-" the tokenizer emits, so brackets stay)
DROPPED_TOKENS = frozenset(
    {"''", "'", "``", "`", "-LRB-", "-RRB-", "-LCB-", "-RCB-", ".", "?", "!", ",", ":", "-", "--", "...", ";"}
)
BRACKETS = {"(": "-lrb-", ")": "-rrb-", "[": "-lsb-", "]": "-rsb-", "{": "-lcb-", "}": "-rcb-"}
# words that keep their full stop ("mr.", "st.", "etc."), as the PTB tokenizer (CoreNLP 3.4.1) keeps them
ABBREVIATIONS = frozenset(
    {
        "mr", "mrs", "ms", "messrs", "mme", "mlle", "dr", "prof", "rev", "hon", "pres", "gen", "gov",
        "sen", "sens", "rep", "reps", "capt", "cmdr", "col", "lt", "maj", "sgt", "adm", "pvt", "cpl",
        "det", "insp", "supt", "atty", "esq", "jr", "sr", "st", "mt", "ave", "blvd", "rd", "ct", "ste",
        "bldg", "inc", "co", "corp", "ltd", "bros", "mfg", "cie", "asst", "assoc", "dept", "est", "ext",
        "tel", "univ", "assn", "natl", "intl", "vs", "etc", "al", "cf", "ft", "sq", "jan", "feb", "mar",
        "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "mon", "tue", "tues", "wed",
        "thu", "thurs", "fri", "calif", "fla", "ariz", "mich", "conn", "colo", "ind", "kan", "minn",
        "mo", "neb", "nev", "okla", "tenn", "va", "vt", "wis", "wyo", "ala", "ga", "ky", "md", "mont"
    }
)  # fmt: skip
ABBREVIATIONS_BEFORE_NUMBER = frozenset({"no", "nos", "fig", "pp", "op", "ca"})  # "no. 5", but "say no."

_UNICODE = str.maketrans(
    {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2014": " -- ", "\u2013": " -- ",
     "\u2026": " ... ", "\u00a3": "#", "\u20ac": "$"}
)  # fmt: skip
_SPLITS = (
    (re.compile(r"\b(can)(not)\b|\b(gon|wan|got)(na|ta)\b"), lambda m: " ".join(g for g in m.groups() if g)),
    (re.compile(r"(?<![\w'])'t(is|was)\b"), lambda m: f"'t {m.group(1)}"),
    (re.compile(r"(?<=\w)n't\b"), lambda m: " n't"),
    (re.compile(r"(?<=\w)'(s|re|ve|ll|d|m)\b"), lambda m: f" '{m.group(1)}"),
)
_TOKEN = re.compile(
    r"(?P<tag></?[a-z][a-z0-9]*>)"
    r"|(?P<clitic>n't|'(?:s|re|ve|ll|d|m|em|cause|\d0s)(?!\w)|'t(?= ))"  # also 'cause '90s
    r"|(?P<fraction>\d+ \d+/\d+(?![\w/]))"  # "5 1/2" is one token (the space becomes U+00A0)
    r"|(?P<number>(?<![\w.])[+-]\d+(?:[.,:/]\d+)*|\d+(?:[.,:/]\d+)+)"  # 10:30 1/2 -5 1,000.5
    r"|(?P<acronym>[^\W\d_]{1,2}(?:\.[^\W\d_]{1,2})+\.(?!\w))"  # u.s. e.g. p.m. ph.d.
    r"|(?P<word>\w+(?:\.\w+)+|@?\w+(?:[-&/]\w+|'[^\W\d_]+)*)"  # a.b.c; black-and-white o'clock
    r"|(?P<marks>[!?]+|\.+|-+)"  # runs of ! and ? are one token; dots and dashes too
    r"|(?P<other>``|''|\S)"
)
_FOLLOWED_BY_NUMBER = re.compile(r"\.\s*[+-]?\d")


def _token(match: re.Match[str], text: str) -> tuple[str, int]:
    """One PTB token of ``text`` (lower-cased) from a :data:`_TOKEN` match, and where it ends
    (past the match when an abbreviation takes its full stop)."""
    kind, token, end = match.lastgroup, match.group(), match.end()
    if kind == "word" and text.startswith(".", end):
        number_follows = _FOLLOWED_BY_NUMBER.match(text, end) is not None
        if (
            token in ABBREVIATIONS
            or (len(token) == 1 and token.isalpha())
            or (token in ABBREVIATIONS_BEFORE_NUMBER and number_follows)
        ):
            return token + ".", end + 1
    if kind == "fraction":
        return token.replace(" ", "\u00a0"), end
    if kind == "marks" and token[0] in ".-" and len(token) > 1:
        return ("..." if token[0] == "." else "--"), end
    return ("''" if token == '"' else BRACKETS.get(token, token)), end


def ptb_tokens(text: str) -> Tokens:
    """``text`` as the PTB tokenizer (``-lowerCase``) splits it, before any token is dropped.

    Rules:

    - lower-case first; curly quotes become straight ones, long dashes ``--``, "…" ``...``, "£"
      ``#`` and "€" ``$``;
    - clitics are split off: "don't" -> "do n't", "dog's" -> "dog 's" (also 're 've 'll 'd 'm),
      "cannot" -> "can not", "gonna" -> "gon na", "'tis" -> "'t is"; "'em", "'cause" and "'90s"
      keep their apostrophe;
    - words keep inner hyphens, apostrophes, ampersands and slashes ("black-and-white",
      "o'clock", "at&t", "and/or"; not "6'2");
    - numbers keep ``.`` ``,`` ``:`` ``/`` and a sign ("3.5", "1,000", "10:30", "1/2", "-5"); a
      whole number and a fraction ("5 1/2") are one token joined by U+00A0;
    - acronyms ("u.s.", "e.g.", "p.m."), single letters and the words of :data:`ABBREVIATIONS`
      keep their full stop (those of :data:`ABBREVIATIONS_BEFORE_NUMBER` only before a number);
    - a run of ``!`` / ``?`` is one token ("!!!", "?!"); brackets become ``-lrb-`` ``-rrb-``
      ``-lsb-`` ``-rsb-`` ``-lcb-`` ``-rcb-``; a double quote is ``''``; every other mark is a
      token of its own.
    """
    text = " ".join(str(text).lower().translate(_UNICODE).split())
    for pattern, replace in _SPLITS:
        text = pattern.sub(replace, text)
    tokens = []
    position = 0
    while (match := _TOKEN.search(text, position)) is not None:
        token, position = _token(match, text)
        tokens.append(token)
    return tokens


def tokenize(text: str) -> Tokens:
    """The tokens the COCO caption evaluation scores: :func:`ptb_tokens` without the punctuation
    tokens pycocoevalcap drops (:data:`DROPPED_TOKENS`: quotes, ``. , : ; ? ! - -- ...``; a run such
    as "!!" and the bracket tokens "-lrb-" ... stay)."""
    return [token for token in ptb_tokens(text) if token not in DROPPED_TOKENS]


def _ngrams(tokens: Sequence[str], n: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def check_corpus(candidates: Sequence[str], references: Sequence[Sequence[str]]) -> None:
    if len(candidates) != len(references):
        raise ValueError(
            f"caption metrics: {len(candidates)} candidates but {len(references)} reference sets"
        )
    for i, refs in enumerate(references):
        if isinstance(refs, str) or len(refs) == 0:
            raise ValueError(f"caption metrics: image {i} needs a non-empty list of references, got {refs!r}")


# -- BLEU ----------------------------------------------------------------------------------------

BLEU_TINY = 1e-15  # added to every clipped count (COCO scorer)
BLEU_SMALL = 1e-9  # added to every candidate n-gram total (COCO scorer)


@dataclass(frozen=True)
class BleuStats:
    """One image's BLEU sufficient statistics (they add up over the corpus)."""

    test_len: int
    ref_len: int  # the reference length closest to test_len (ties: the shorter)
    guess: tuple[int, ...]  # candidate n-grams of orders 1..n
    correct: tuple[int, ...]  # clipped matches of orders 1..n

    def as_row(self) -> list[float]:
        return [float(self.test_len), float(self.ref_len), *map(float, self.guess), *map(float, self.correct)]


def bleu_stats(candidate: Sequence[str], references: Sequence[Sequence[str]], max_n: int = 4) -> BleuStats:
    """Clipped n-gram matches and lengths of one tokenized candidate against its references."""
    test_len = len(candidate)
    ref_len = min((abs(len(r) - test_len), len(r)) for r in references)[1]
    guess, correct = [], []
    for n in range(1, max_n + 1):
        counts = _ngrams(candidate, n)
        best: Counter[tuple[str, ...]] = Counter()
        for ref in references:
            best |= _ngrams(ref, n)  # element-wise max over the references
        guess.append(max(0, test_len - n + 1))
        correct.append(sum(min(c, best[g]) for g, c in counts.items()))
    return BleuStats(test_len, ref_len, tuple(guess), tuple(correct))


def bleu_from_totals(
    test_len: float, ref_len: float, guess: Sequence[float], correct: Sequence[float]
) -> list[float]:
    """BLEU-1..n from corpus totals (see the module docstring)."""
    scores, product_ = [], 1.0
    for k, (g, c) in enumerate(zip(guess, correct), start=1):
        product_ *= (c + BLEU_TINY) / (g + BLEU_SMALL)
        scores.append(product_ ** (1.0 / k))
    ratio = (test_len + BLEU_TINY) / (ref_len + BLEU_SMALL)
    penalty = math.exp(1.0 - 1.0 / ratio) if ratio < 1.0 else 1.0
    return [s * penalty for s in scores]


def bleu_from_stats(stats: Iterable[BleuStats], max_n: int = 4) -> list[float]:
    """Corpus BLEU-1..n from per-image statistics."""
    test_len = ref_len = 0
    guess, correct = [0] * max_n, [0] * max_n
    for s in stats:
        test_len += s.test_len
        ref_len += s.ref_len
        guess = [a + b for a, b in zip(guess, s.guess)]
        correct = [a + b for a, b in zip(correct, s.correct)]
    return bleu_from_totals(test_len, ref_len, guess, correct)


def corpus_bleu(
    candidates: Sequence[str], references: Sequence[Sequence[str]], max_n: int = 4
) -> list[float]:
    """Corpus BLEU-1..``max_n`` of raw (untokenized) captions."""
    check_corpus(candidates, references)
    return bleu_from_stats(
        (
            bleu_stats(tokenize(c), [tokenize(r) for r in refs], max_n)
            for c, refs in zip(candidates, references)
        ),
        max_n,
    )


# -- ROUGE-L -------------------------------------------------------------------------------------

ROUGE_BETA = 1.2


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two token lists."""
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b):
            current.append(previous[j] + 1 if x == y else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


def rouge_l(candidate: Sequence[str], references: Sequence[Sequence[str]], beta: float = ROUGE_BETA) -> float:
    """ROUGE-L of one tokenized candidate: F of the best precision and the best recall over references."""
    if not candidate:
        return 0.0
    best_p = best_r = 0.0
    for ref in references:
        lcs = lcs_length(candidate, ref)
        best_p = max(best_p, lcs / len(candidate))
        best_r = max(best_r, lcs / len(ref) if ref else 0.0)
    if best_p == 0.0 or best_r == 0.0:
        return 0.0
    return (1 + beta**2) * best_p * best_r / (best_r + beta**2 * best_p)


def corpus_rouge_l(candidates: Sequence[str], references: Sequence[Sequence[str]]) -> float:
    """Mean ROUGE-L over images, of raw captions."""
    check_corpus(candidates, references)
    scores = [rouge_l(tokenize(c), [tokenize(r) for r in refs]) for c, refs in zip(candidates, references)]
    return sum(scores) / len(scores) if scores else math.nan


# -- CIDEr-D -------------------------------------------------------------------------------------

CIDER_N = 4
CIDER_SIGMA = 6.0


def _all_ngrams(tokens: Sequence[str], max_n: int) -> Counter[tuple[str, ...]]:
    counts: Counter[tuple[str, ...]] = Counter()
    for n in range(1, max_n + 1):
        counts.update(_ngrams(tokens, n))
    return counts


def _tfidf(
    counts: Counter[tuple[str, ...]], idf: Callable[[tuple[str, ...]], float], max_n: int
) -> tuple[list[dict[tuple[str, ...], float]], list[float], int]:
    """Per-order TF-IDF vectors, their norms, and the length in bigrams."""
    vectors: list[dict[tuple[str, ...], float]] = [{} for _ in range(max_n)]
    norms = [0.0] * max_n
    for gram, tf in counts.items():
        weight = tf * idf(gram)
        vectors[len(gram) - 1][gram] = weight
        norms[len(gram) - 1] += weight * weight
    length = sum(tf for gram, tf in counts.items() if len(gram) == 2)
    return vectors, [math.sqrt(x) for x in norms], length


def _cider_similarity(
    cand: tuple[list[dict[tuple[str, ...], float]], list[float], int],
    ref: tuple[list[dict[tuple[str, ...], float]], list[float], int],
    sigma: float,
) -> list[float]:
    (c_vecs, c_norms, c_len), (r_vecs, r_norms, r_len) = cand, ref
    penalty = math.exp(-((c_len - r_len) ** 2) / (2 * sigma**2))
    values = []
    for c_vec, r_vec, c_norm, r_norm in zip(c_vecs, r_vecs, c_norms, r_norms):
        value = sum(min(w, r_vec.get(g, 0.0)) * r_vec.get(g, 0.0) for g, w in c_vec.items())
        if c_norm != 0.0 and r_norm != 0.0:
            value /= c_norm * r_norm
        values.append(value * penalty)
    return values


def cider_d_tokens(
    candidates: Sequence[Sequence[str]],
    references: Sequence[Sequence[Sequence[str]]],
    max_n: int = CIDER_N,
    sigma: float = CIDER_SIGMA,
) -> list[float]:
    """Per-image CIDEr-D of tokenized captions; document frequencies come from these references."""
    ref_counts = [[_all_ngrams(r, max_n) for r in refs] for refs in references]
    df: Counter[tuple[str, ...]] = Counter()
    for counts in ref_counts:
        df.update(set().union(*counts))
    log_images = math.log(len(candidates)) if candidates else 0.0

    def idf(gram: tuple[str, ...]) -> float:
        return log_images - math.log(max(1.0, df[gram]))

    scores = []
    for cand, refs in zip(candidates, ref_counts):
        c = _tfidf(_all_ngrams(cand, max_n), idf, max_n)
        totals = [0.0] * max_n
        for r_counts in refs:
            sims = _cider_similarity(c, _tfidf(r_counts, idf, max_n), sigma)
            totals = [t + s for t, s in zip(totals, sims)]
        scores.append(10.0 * sum(totals) / max_n / len(refs))
    return scores


def cider_d_scores(candidates: Sequence[str], references: Sequence[Sequence[str]]) -> list[float]:
    """Per-image CIDEr-D of raw captions (document frequencies over this corpus's references)."""
    check_corpus(candidates, references)
    return cider_d_tokens(
        [tokenize(c) for c in candidates], [[tokenize(r) for r in refs] for refs in references]
    )


def corpus_cider_d(candidates: Sequence[str], references: Sequence[Sequence[str]]) -> float:
    """Mean CIDEr-D over images."""
    scores = cider_d_scores(candidates, references)
    return sum(scores) / len(scores) if scores else math.nan


# -- METEOR --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MeteorParams:
    """METEOR's parameters; the defaults are METEOR 1.5's English ones (Denkowski and Lavie 2014).

    ``Fmean = P R / (alpha P + (1 - alpha) R)``, ``penalty = gamma (chunks / matches) ^ beta``,
    ``score = Fmean (1 - penalty)``. Matches are unigram alignments: exact word matches first,
    then Porter-stem matches among the words left; a stem match counts ``stem_weight`` in P and R
    (METEOR 1.5 weighs exact 1.0, stem 0.6, synonym 0.8, paraphrase 0.6). Not reproduced: the
    synonym and paraphrase modules, and the content/function word weighting (delta 0.75): every
    word counts as a content word, which makes delta drop out of P and R. The original 2005 formula
    is ``MeteorParams(alpha=0.9, beta=3.0, gamma=0.5, stem_weight=1.0)``.
    """

    alpha: float = 0.85
    beta: float = 0.2
    gamma: float = 0.6
    stem_weight: float = 0.6


@dataclass(frozen=True)
class MeteorStats:
    """One alignment's sufficient statistics (they add up over a corpus)."""

    hyp_len: int
    ref_len: int
    matches: int  # aligned word pairs
    weighted: float  # exact matches + stem_weight * stem matches
    chunks: int  # runs of adjacent hypothesis words aligned to adjacent reference words

    def as_row(self) -> list[float]:
        return [
            float(self.hyp_len),
            float(self.ref_len),
            float(self.matches),
            self.weighted,
            float(self.chunks),
        ]


def meteor_from_totals(
    hyp_len: float, ref_len: float, matches: float, weighted: float, chunks: float, params: MeteorParams
) -> float:
    """METEOR of (summed) statistics."""
    if matches <= 0 or hyp_len <= 0 or ref_len <= 0:
        return 0.0
    precision, recall = weighted / hyp_len, weighted / ref_len
    fmean = precision * recall / (params.alpha * precision + (1 - params.alpha) * recall)
    penalty = params.gamma * (chunks / matches) ** params.beta
    return fmean * (1.0 - penalty)


def meteor_from_stats(stats: Iterable[MeteorStats], params: MeteorParams | None = None) -> float:
    """Corpus METEOR: the formula applied to the statistics summed over images."""
    rows = [s.as_row() for s in stats]
    totals = [sum(column) for column in zip(*rows)] if rows else [0.0] * 5
    return meteor_from_totals(*totals, params=params or MeteorParams())


MAX_ALIGNMENTS = 5000  # alignments searched per pair; beyond that, occurrences are paired in order


def _count_chunks(pairs: Sequence[tuple[int, int]]) -> int:
    chunks, previous = 0, None
    for i, j in sorted(pairs):
        if previous is None or (i, j) != (previous[0] + 1, previous[1] + 1):
            chunks += 1
        previous = (i, j)
    return chunks


def _group_options(
    hyp_pos: list[int], ref_pos: list[int], hyp: Sequence[str], ref: Sequence[str]
) -> list[list[tuple[int, int]]]:
    """Pairings of one stem group's occurrences with the most matches and, among those, the most exact ones."""
    k = min(len(hyp_pos), len(ref_pos))
    options: list[list[tuple[int, int]]] = []
    best_exact = -1
    if len(hyp_pos) <= len(ref_pos):
        candidates = ([*zip(hyp_pos, perm)] for perm in permutations(ref_pos, k))
    else:
        candidates = ([*zip(perm, ref_pos)] for perm in permutations(hyp_pos, k))
    for pairs in candidates:
        exact = sum(hyp[i] == ref[j] for i, j in pairs)
        if exact > best_exact:
            options, best_exact = [], exact
        if exact == best_exact:
            options.append(sorted(pairs))
    return options


def _in_order(
    hyp_pos: list[int], ref_pos: list[int], hyp: Sequence[str], ref: Sequence[str]
) -> list[tuple[int, int]]:
    """Fallback pairing: exact matches by order of occurrence, then the remaining words in order."""
    pairs: list[tuple[int, int]] = []
    free_h, free_r = list(hyp_pos), list(ref_pos)
    for word in dict.fromkeys(hyp[i] for i in hyp_pos):
        hs = [i for i in free_h if hyp[i] == word]
        rs = [j for j in free_r if ref[j] == word]
        for i, j in zip(hs, rs):
            pairs.append((i, j))
            free_h.remove(i)
            free_r.remove(j)
    pairs.extend(zip(free_h, free_r))
    return pairs


def _permutation_count(a: int, b: int) -> int:
    big, k = max(a, b), min(a, b)
    return math.perm(big, k)


def meteor_align(hyp: Sequence[str], ref: Sequence[str], stem: Callable[[str], str]) -> list[tuple[int, int]]:
    """The alignment METEOR scores: (hypothesis index, reference index) pairs, sorted.

    Words align when their Porter stems are equal (equal words have equal stems). Among the
    alignments with the most matches, those with the most exact matches are kept, and among them
    the one with the fewest chunks, then the smallest total distance ``|i - j|``, then the first
    found. The search enumerates the pairings of repeated words; when they exceed
    :data:`MAX_ALIGNMENTS`, occurrences are paired in order of appearance instead.
    """
    hyp_stems, ref_stems = [stem(w) for w in hyp], [stem(w) for w in ref]
    groups = []
    for s in dict.fromkeys(hyp_stems):
        hyp_pos = [i for i, x in enumerate(hyp_stems) if x == s]
        ref_pos = [j for j, x in enumerate(ref_stems) if x == s]
        if ref_pos:
            groups.append((hyp_pos, ref_pos))
    total = 1
    for hyp_pos, ref_pos in groups:
        total *= _permutation_count(len(hyp_pos), len(ref_pos))
    if total > MAX_ALIGNMENTS:
        return sorted(p for hyp_pos, ref_pos in groups for p in _in_order(hyp_pos, ref_pos, hyp, ref))
    best: tuple[int, int] | None = None
    best_pairs: list[tuple[int, int]] = []
    for combo in product(*(_group_options(h, r, hyp, ref) for h, r in groups)):
        pairs = sorted(p for group in combo for p in group)
        key = (_count_chunks(pairs), sum(abs(i - j) for i, j in pairs))
        if best is None or key < best:
            best, best_pairs = key, pairs
    return best_pairs


def meteor_stats(
    hyp: Sequence[str], ref: Sequence[str], stem: Callable[[str], str], params: MeteorParams | None = None
) -> MeteorStats:
    """METEOR statistics of a tokenized hypothesis against one tokenized reference."""
    params = params or MeteorParams()
    pairs = meteor_align(hyp, ref, stem)
    exact = sum(hyp[i] == ref[j] for i, j in pairs)
    weighted = exact + params.stem_weight * (len(pairs) - exact)
    return MeteorStats(len(hyp), len(ref), len(pairs), weighted, _count_chunks(pairs))


def meteor_best(
    hyp: Sequence[str],
    references: Sequence[Sequence[str]],
    stem: Callable[[str], str],
    params: MeteorParams | None = None,
) -> MeteorStats:
    """Statistics against the reference that gives the highest METEOR (ties: the first)."""
    params = params or MeteorParams()
    best: MeteorStats | None = None
    best_score = -1.0
    for ref in references:
        stats = meteor_stats(hyp, ref, stem, params)
        score = meteor_from_stats([stats], params)
        if score > best_score:
            best, best_score = stats, score
    if best is None:
        raise ValueError("METEOR needs at least one reference")
    return best


def porter_stemmer() -> Callable[[str], str]:
    """NLTK's Porter stemmer (``pip install 'lmms_eval[metrics]'``), memoised per call site."""
    try:
        from nltk.stem.porter import PorterStemmer
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("METEOR needs nltk for Porter stemming: pip install 'lmms_eval[metrics]'") from exc
    stemmer = PorterStemmer()
    cache: dict[str, str] = {}

    def stem(word: str) -> str:
        if word not in cache:
            cache[word] = stemmer.stem(word)
        return cache[word]

    return stem


def meteor_corpus_stats(
    candidates: Sequence[str], references: Sequence[Sequence[str]], params: MeteorParams | None = None
) -> list[MeteorStats]:
    """Per-image METEOR statistics (best reference) of raw captions."""
    check_corpus(candidates, references)
    stem = porter_stemmer()
    return [
        meteor_best(tokenize(c), [tokenize(r) for r in refs], stem, params)
        for c, refs in zip(candidates, references)
    ]


def corpus_meteor(
    candidates: Sequence[str], references: Sequence[Sequence[str]], params: MeteorParams | None = None
) -> float:
    """Corpus METEOR of raw captions: statistics of each image's best reference, summed."""
    return meteor_from_stats(meteor_corpus_stats(candidates, references, params), params)


# -- everything at once --------------------------------------------------------------------------

COCO_METRICS = ("Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4", "METEOR", "ROUGE_L", "CIDEr")


def coco_caption_scores(candidates: Sequence[str], references: Sequence[Sequence[str]]) -> dict[str, float]:
    """All COCO caption metrics of a corpus, keyed as the COCO evaluation names them."""
    check_corpus(candidates, references)
    cands = [tokenize(c) for c in candidates]
    refs = [[tokenize(r) for r in rs] for rs in references]
    bleu = bleu_from_stats(bleu_stats(c, r) for c, r in zip(cands, refs))
    stem = porter_stemmer()
    rouge = [rouge_l(c, r) for c, r in zip(cands, refs)]
    cider = cider_d_tokens(cands, refs)
    return {
        **{f"Bleu_{n}": bleu[n - 1] for n in range(1, 5)},
        "METEOR": meteor_from_stats(meteor_best(c, r, stem) for c, r in zip(cands, refs)),
        "ROUGE_L": sum(rouge) / len(rouge) if rouge else math.nan,
        "CIDEr": sum(cider) / len(cider) if cider else math.nan,
    }


# -- resampled corpus scores (bootstrap error bars) ------------------------------------------------
# ``idx`` is an int array of shape (resamples, n) of image indices; each function gives one corpus
# score per resample, equal to the corpus function applied to those images.


def _resampled_sums(rows: Sequence[Sequence[float]], idx: Any) -> Any:
    import numpy as np

    table = np.asarray(rows, dtype=float).reshape(len(rows), -1)
    return np.stack([table[:, k][idx].sum(axis=1) for k in range(table.shape[1])], axis=1)


def resampled_bleu(stats: Sequence[BleuStats], idx: Any, n: int) -> Any:
    """Corpus BLEU-``n`` of each resample."""
    import numpy as np

    max_n = len(stats[0].guess) if stats else n
    sums = _resampled_sums([s.as_row() for s in stats], idx)
    return np.asarray(
        [bleu_from_totals(r[0], r[1], r[2 : 2 + max_n], r[2 + max_n :])[n - 1] for r in sums], dtype=float
    )


def resampled_meteor(stats: Sequence[MeteorStats], idx: Any, params: MeteorParams | None = None) -> Any:
    """Corpus METEOR of each resample."""
    import numpy as np

    sums = _resampled_sums([s.as_row() for s in stats], idx)
    return np.asarray([meteor_from_totals(*r, params=params or MeteorParams()) for r in sums], dtype=float)


def resampled_mean(values: Sequence[float], idx: Any) -> Any:
    """Mean of per-image values for each resample (ROUGE-L; CIDEr-D with the document
    frequencies of the full corpus kept fixed)."""
    import numpy as np

    return np.asarray(values, dtype=float)[idx].mean(axis=1)


__all__ = [
    "COCO_METRICS",
    "BleuStats",
    "MeteorParams",
    "MeteorStats",
    "bleu_from_stats",
    "bleu_from_totals",
    "bleu_stats",
    "check_corpus",
    "cider_d_scores",
    "cider_d_tokens",
    "coco_caption_scores",
    "corpus_bleu",
    "corpus_cider_d",
    "corpus_meteor",
    "corpus_rouge_l",
    "lcs_length",
    "meteor_align",
    "meteor_best",
    "meteor_corpus_stats",
    "meteor_from_stats",
    "meteor_from_totals",
    "meteor_stats",
    "porter_stemmer",
    "resampled_bleu",
    "resampled_mean",
    "resampled_meteor",
    "rouge_l",
    "tokenize",
]
