"""Yes/no benchmarks: the answer rules and aggregations of MME, POPE and HallusionBench.

Three rules read a model's yes/no answer, one per benchmark, each as published:

* :func:`parse_mme_answer` (MME): lower case, "." removed; "yes"/"no" as they are, "y"/"n" mapped,
  otherwise "yes" (checked first) or "no" found in the first four characters, else "other".
* :func:`pope_prediction` (POPE): ``output.lower().strip()`` and nothing else. The published
  package does no parsing, so "Yes." or "Yes, there is" is not "yes" and counts as wrong; we keep
  that so POPE numbers stay comparable with published ones.
* :func:`parse_yes_no` (HallusionBench, our rule-based default): a leading yes/no word, else the
  only one of the words yes/no in the answer, else unresolved (``None``).

Everything here is pure and deterministic; the task folders ``mme``, ``pope`` and
``hallusion_bench`` wire it into their per-doc scoring and aggregations.
"""

from __future__ import annotations

import logging
import math
import re
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lmms_eval.errors import DatasetError

if TYPE_CHECKING:
    from lmms_eval.llm_judge import JudgeServer

logger = logging.getLogger(__name__)

# ---------------------------------------------------------------------------------------------
# MME
# ---------------------------------------------------------------------------------------------

MME_PERCEPTION: tuple[str, ...] = (
    "existence",
    "count",
    "position",
    "color",
    "posters",
    "celebrity",
    "scene",
    "landmark",
    "artwork",
    "OCR",
)
MME_COGNITION: tuple[str, ...] = (
    "commonsense_reasoning",
    "numerical_calculation",
    "text_translation",
    "code_reasoning",
)
MME_SPLITS: dict[str, tuple[str, ...]] = {"perception": MME_PERCEPTION, "cognition": MME_COGNITION}
MME_YES_NO_SUFFIX = " Please answer yes or no."


def parse_mme_answer(prediction: str) -> str:
    """MME's answer rule: ``"yes"``, ``"no"`` or ``"other"``.

    The text is lower-cased, stripped and every "." removed. "yes"/"no" are taken as they are,
    "y"/"n" mean yes/no; otherwise "yes" anywhere in the first four characters means yes, else
    "no" there means no ("nope", "not sure" and "none" read as no, as published), else "other".
    """
    text = prediction.lower().strip().replace(".", "")
    if text in ("yes", "no"):
        return text
    if text == "y":
        return "yes"
    if text == "n":
        return "no"
    head = text[:4]
    if "yes" in head:
        return "yes"
    if "no" in head:
        return "no"
    return "other"


def mme_split(category: str) -> str:
    """``"perception"`` or ``"cognition"`` for an MME category; an error names unknown ones."""
    for split, categories in MME_SPLITS.items():
        if category in categories:
            return split
    known = ", ".join(MME_PERCEPTION + MME_COGNITION)
    raise DatasetError(f"MME: unknown category {category!r}; the 14 MME categories are: {known}")


def mme_item(question_id: str, category: str, answer: str, prediction: str) -> dict[str, Any]:
    """One question's record: ``score`` is 1.0 when the parsed prediction equals the gold yes/no."""
    correct = parse_mme_answer(prediction) == answer.lower().strip()
    return {"question_id": question_id, "category": category, "score": 1.0 if correct else 0.0}


def _by_image(items: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], list[Mapping[str, Any]]]:
    images: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for item in items:
        images[(str(item["category"]), str(item["question_id"]))].append(item)
    return images


def mme_items(rows: Iterable[tuple[str, str, str, str]]) -> list[dict[str, Any]]:
    """Records of a whole run from ``(question_id, category, answer, prediction)`` rows, in order.

    Each record also carries ``image_score``, its image's ``acc + acc+`` (0, 50 or 200 for a pair
    of questions), so that a bootstrap resample of questions can score images as whole pairs.
    """
    items = [mme_item(*row) for row in rows]
    image_scores: dict[tuple[str, str], float] = {}
    for key, group in _by_image(items).items():
        marks = [float(item["score"]) for item in group]
        image_scores[key] = 100.0 * sum(marks) / len(marks) + (100.0 if all(m == 1.0 for m in marks) else 0.0)
    for item in items:
        item["image_score"] = image_scores[(item["category"], item["question_id"])]
    return items


def mme_category_scores(items: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """Per-category MME score, ``acc + acc+`` (0 to 200), for the categories present.

    ``acc`` is the share of correct questions ×100; ``acc+`` is the share of images (questions
    sharing a ``question_id``) whose two questions are both correct ×100. An image without exactly
    two questions is an error that names it.
    """
    per_category: dict[str, list[list[float]]] = defaultdict(list)
    for (category, question_id), group in _by_image(items).items():
        if len(group) != 2:
            raise DatasetError(
                f"MME: image {question_id!r} (category {category!r}) has {len(group)} scored "
                "question(s); every MME image must have exactly 2 (a --limit or failed requests "
                "that split an image's pair of questions cause this)"
            )
        per_category[category].append([float(item["score"]) for item in group])
    scores: dict[str, float] = {}
    for category, images in per_category.items():
        acc = 100.0 * sum(sum(marks) for marks in images) / (2 * len(images))
        acc_plus = 100.0 * sum(all(m == 1.0 for m in marks) for marks in images) / len(images)
        scores[category] = acc + acc_plus
    return scores


def mme_resample_scores(items: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """Category scores of a bootstrap resample: the mean ``image_score`` of its questions.

    Every question drawn stands for a draw of its whole image (each image has two questions, so
    images are drawn uniformly): an image-level bootstrap. On the full, unresampled records this
    equals :func:`mme_category_scores`.
    """
    per_category: dict[str, list[float]] = defaultdict(list)
    for item in items:
        per_category[str(item["category"])].append(float(item["image_score"]))
    return {category: sum(values) / len(values) for category, values in per_category.items()}


def mme_report(items: Iterable[Mapping[str, Any]], split: str, resample: bool = False) -> dict[str, float]:
    """``mme_<split>_score`` (sum of the category scores) plus ``mme_<category>_score`` for each one.

    ``split`` is "perception" (10 categories, 0 to 2000) or "cognition" (4, 0 to 800). Category keys
    are lower-cased (``mme_ocr_score``) and follow the published category order; categories without
    items are left out. ``resample=True`` scores a bootstrap resample (:func:`mme_resample_scores`,
    no two-questions check; a category the resample misses is NaN and left out of the sum).
    """
    if split not in MME_SPLITS:
        raise ValueError(f"MME split must be one of {', '.join(MME_SPLITS)}, got {split!r}")
    by_category = mme_resample_scores(items) if resample else mme_category_scores(items)
    report = {f"mme_{split}_score": sum(by_category.values())}
    for category in MME_SPLITS[split]:
        if category in by_category or resample:
            report[f"mme_{category.lower()}_score"] = by_category.get(category, math.nan)
    return report


# ---------------------------------------------------------------------------------------------
# POPE
# ---------------------------------------------------------------------------------------------

POPE_METRICS: tuple[str, ...] = ("accuracy", "precision", "recall", "f1_score", "yes_ratio")


def pope_prediction(output: str) -> str:
    """POPE's published answer rule: ``output.lower().strip()``, deliberately without parsing."""
    return output.lower().strip()


@dataclass(frozen=True)
class PopeCounts:
    """POPE's confusion counts, as published.

    ``tp``: gold yes, prediction "yes"; ``fp``: gold no, prediction "yes"; ``fn``: gold yes,
    prediction "no" (a prediction that is neither does not count as a false negative);
    ``correct``: prediction equals gold; ``gold_yes``: gold answers that are yes.
    """

    n: int
    correct: int
    tp: int
    fp: int
    fn: int
    gold_yes: int


def pope_counts(items: Iterable[Mapping[str, Any]]) -> PopeCounts:
    """Counts over records ``{"prediction": pope_prediction(output), "answer": gold}``."""
    n = correct = tp = fp = fn = gold_yes = 0
    for item in items:
        pred, gold = item["prediction"], str(item["answer"]).lower().strip()
        n += 1
        correct += pred == gold
        gold_yes += gold == "yes"
        tp += pred == "yes" and gold == "yes"
        fp += pred == "yes" and gold == "no"
        fn += pred == "no" and gold == "yes"
    return PopeCounts(n, correct, tp, fp, fn, gold_yes)


def _ratio(num: float, den: float) -> float:
    return num / den if den else 0.0


def pope_scores(counts: PopeCounts) -> dict[str, float]:
    """POPE's five numbers (fractions) from the counts; an empty denominator gives 0.

    accuracy = correct/n; precision = tp/(tp+fp); recall = tp/(tp+fn); F1 = 2PR/(P+R);
    yes_ratio = gold_yes/n (the share of *gold* answers that are yes, as published).
    """
    precision = _ratio(counts.tp, counts.tp + counts.fp)
    recall = _ratio(counts.tp, counts.tp + counts.fn)
    return {
        "accuracy": _ratio(counts.correct, counts.n),
        "precision": precision,
        "recall": recall,
        "f1_score": _ratio(2 * precision * recall, precision + recall),
        "yes_ratio": _ratio(counts.gold_yes, counts.n),
    }


def pope_metric(items: Sequence[Mapping[str, Any]], name: str) -> float:
    """One POPE number (``name`` from :data:`POPE_METRICS`) over the records."""
    if name not in POPE_METRICS:
        raise ValueError(f"unknown POPE metric {name!r}; known: {', '.join(POPE_METRICS)}")
    return pope_scores(pope_counts(items))[name]


def pope_metric_batch(items: Sequence[Mapping[str, Any]], idx: Any, name: str) -> Any:
    """:func:`pope_metric` for every row of the resample-index matrix ``idx`` (numpy, vectorised)."""
    import numpy as np

    pred = np.asarray([item["prediction"] for item in items], dtype=object)
    gold = np.asarray([str(item["answer"]).lower().strip() for item in items], dtype=object)
    pred_yes, pred_no, gold_yes = pred == "yes", pred == "no", gold == "yes"
    columns = {
        "correct": pred == gold,
        "tp": pred_yes & gold_yes,
        "fp": pred_yes & (gold == "no"),
        "fn": pred_no & gold_yes,
        "gold_yes": gold_yes,
    }
    sums = {key: col.astype(float)[idx].sum(axis=1) for key, col in columns.items()}
    n = float(idx.shape[1])

    def ratio(num: Any, den: Any) -> Any:
        return np.divide(num, den, out=np.zeros_like(num, dtype=float), where=den != 0)

    precision = ratio(sums["tp"], sums["tp"] + sums["fp"])
    recall = ratio(sums["tp"], sums["tp"] + sums["fn"])
    values = {
        "accuracy": sums["correct"] / n,
        "precision": precision,
        "recall": recall,
        "f1_score": ratio(2 * precision * recall, precision + recall),
        "yes_ratio": sums["gold_yes"] / n,
    }
    return values[name]


# ---------------------------------------------------------------------------------------------
# HallusionBench
# ---------------------------------------------------------------------------------------------

HB_GOLD = {"1": "yes", "0": "no"}
HB_CATEGORIES: tuple[str, ...] = ("VD", "VS")  # visual dependent, visual supplement
HB_QUESTION_KEYS: tuple[str, ...] = ("category", "subcategory", "set_id", "question_id")
HB_FIGURE_KEYS: tuple[str, ...] = ("category", "subcategory", "set_id", "figure_id")
_WORD = re.compile(r"[a-z]+")


def parse_yes_no(text: str) -> str | None:
    """Our rule for free-form yes/no answers: ``"yes"``, ``"no"`` or ``None`` (unresolved).

    The answer's first word decides when it is yes/no (or the whole answer is "y"/"n");
    otherwise the answer is read as yes (no) when "yes" ("no") occurs in it as a word and the
    other does not. Anything else, including answers that use both words, is unresolved.
    """
    words = _WORD.findall(text.lower())
    if not words:
        return None
    if words[0] in ("yes", "no"):
        return words[0]
    if words in (["y"], ["n"]):
        return "yes" if words == ["y"] else "no"
    found = {w for w in words if w in ("yes", "no")}
    return found.pop() if len(found) == 1 else None


def hb_gold(gt_answer: str, question_id: Any = None) -> str:
    """``"yes"`` for gt_answer "1", ``"no"`` for "0"; other values are an error naming the question."""
    gold = HB_GOLD.get(str(gt_answer).strip())
    if gold is None:
        raise DatasetError(
            f"HallusionBench: question {question_id!r} has gt_answer {gt_answer!r}; expected '0' or '1'"
        )
    return gold


def hb_item(doc: Mapping[str, Any], correct: bool, **extra: Any) -> dict[str, Any]:
    """The per-question record the HallusionBench aggregations read (plus any ``extra`` fields)."""
    record = {key: doc[key] for key in ("category", "subcategory", "set_id", "figure_id", "question_id")}
    return {**record, "correct": bool(correct), "judged": False, **extra}


def _share(values: Sequence[bool]) -> float:
    return 100.0 * sum(values) / len(values) if values else 0.0


def _group_all_correct(items: Iterable[Mapping[str, Any]], keys: Sequence[str]) -> list[bool]:
    groups: dict[Hashable, bool] = {}
    for item in items:
        group = tuple(str(item[k]) for k in keys)
        groups[group] = groups.get(group, True) and bool(item["correct"])
    return list(groups.values())


def hb_scores(items: Sequence[Mapping[str, Any]], metric: str) -> dict[str, float]:
    """One HallusionBench metric (×100) overall and per category: ``{metric, metric_VD, metric_VS}``.

    ``aAcc``: share of correct questions. ``qAcc``: share of question groups (same category,
    subcategory, set_id and question_id, i.e. one question asked of a set's figures) answered
    correctly throughout. ``fAcc``: share of figure groups (same category, subcategory, set_id and
    figure_id, i.e. every question about one figure) answered correctly throughout. Categories
    without items are left out (a bootstrap resample that misses one gets no value for it).
    """
    keys = {"aAcc": None, "qAcc": HB_QUESTION_KEYS, "fAcc": HB_FIGURE_KEYS}
    if metric not in keys:
        raise ValueError(f"unknown HallusionBench metric {metric!r}; known: {', '.join(keys)}")
    group_keys = keys[metric]

    def score(subset: Sequence[Mapping[str, Any]]) -> float:
        if group_keys is None:
            return _share([bool(item["correct"]) for item in subset])
        return _share(_group_all_correct(subset, group_keys))

    report = {metric: score(items)}
    for category in HB_CATEGORIES:
        subset = [item for item in items if item["category"] == category]
        if subset:
            report[f"{metric}_{category}"] = score(subset)
    return report


def hb_rule_items(docs: Sequence[Mapping[str, Any]], outputs: Sequence[str]) -> list[dict[str, Any]]:
    """Records scored by :func:`parse_yes_no` alone; an unresolved answer counts as wrong."""
    items = []
    for doc, output in zip(docs, outputs, strict=True):
        read = parse_yes_no(output)
        correct = read is not None and read == hb_gold(doc["gt_answer"], doc["question_id"])
        items.append(hb_item(doc, correct, parsed=read))
    return items


def hb_judged_items(
    docs: Sequence[Mapping[str, Any]], outputs: Sequence[str], server: JudgeServer
) -> list[dict[str, Any]]:
    """Records scored by :func:`parse_yes_no`, with the judge deciding the answers it cannot read.

    Unresolved answers go to ``server`` in one concurrent batch as binary questions (is the answer
    correct given the gold "Yes"/"No"?). A failed or unreadable verdict counts as wrong and is
    recorded in the item's ``judge_error``. Items carry ``judged`` (whether the judge was asked).
    """
    items = hb_rule_items(docs, outputs)
    pending = [i for i, item in enumerate(items) if item["parsed"] is None]
    if not pending:
        return items
    verdicts = server.evaluate_binary_batch(
        [
            {
                "question": str(docs[i]["question"]),
                "answer": hb_gold(docs[i]["gt_answer"], docs[i]["question_id"]).capitalize(),
                "prediction": outputs[i],
                "output_format": "0/1",
            }
            for i in pending
        ]
    )
    failures = 0
    for i, verdict in zip(pending, verdicts, strict=True):
        items[i]["judged"] = True
        items[i]["correct"] = bool(verdict["success"]) and verdict["result"] == "1"
        if not verdict["success"]:
            failures += 1
            items[i]["judge_error"] = verdict["error"]
    if failures:
        logger.warning(
            "HallusionBench: %d of %d judge verdict(s) failed; counted as wrong", failures, len(pending)
        )
    return items


__all__ = [
    "HB_CATEGORIES",
    "MME_COGNITION",
    "MME_PERCEPTION",
    "MME_YES_NO_SUFFIX",
    "POPE_METRICS",
    "PopeCounts",
    "hb_gold",
    "hb_item",
    "hb_judged_items",
    "hb_rule_items",
    "hb_scores",
    "mme_category_scores",
    "mme_item",
    "mme_items",
    "mme_report",
    "mme_resample_scores",
    "mme_split",
    "parse_mme_answer",
    "parse_yes_no",
    "pope_counts",
    "pope_metric",
    "pope_metric_batch",
    "pope_prediction",
    "pope_scores",
]
