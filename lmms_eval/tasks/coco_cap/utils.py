"""COCO Caption 2017: prompt wiring and corpus-level aggregations (rules in lmms_eval.scoring.caption).

Every metric of ``coco2017_cap_val`` receives the same per-image item ``{"image_id", "prediction",
"references"}`` and computes its score over the whole evaluated corpus, as the COCO evaluation does.
Each aggregation has a vectorised form for bootstrap error bars (per-image statistics are
computed once, then summed or averaged per resample).
"""

from __future__ import annotations

import re
from typing import Any

from lmms_eval.api.context import AggregationContext
from lmms_eval.api.prompts import rgb, user_message, with_prompts
from lmms_eval.scoring import caption
from lmms_eval.stats import vectorised

PROMPT = "Provide a one-sentence caption for the provided image."
METRICS = (
    "coco_Bleu_1",
    "coco_Bleu_2",
    "coco_Bleu_3",
    "coco_Bleu_4",
    "coco_METEOR",
    "coco_ROUGE_L",
    "coco_CIDEr",
)

Item = dict[str, Any]


def doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    return [rgb(doc["image"])]


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    kwargs = lmms_eval_specific_kwargs or {}
    return with_prompts(str(kwargs.get("prompt") or PROMPT), kwargs)


def doc_to_messages(
    doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    return user_message(doc_to_visual(doc), doc_to_text(doc, lmms_eval_specific_kwargs))


def image_id(doc: dict[str, Any]) -> int | str:
    """The COCO image id: the digits of ``question_id`` (a file name such as 000000179765.jpg)."""
    question_id = str(doc.get("question_id", ""))
    digits = re.findall(r"\d+", question_id)
    return int(digits[-1]) if digits else question_id


def _references(doc: dict[str, Any]) -> list[str]:
    answer = doc.get("answer")
    if isinstance(answer, str):
        return [answer]
    return [str(a) for a in answer or []]


def process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, Item]:
    item = {"image_id": image_id(doc), "prediction": str(results[0] or ""), "references": _references(doc)}
    return dict.fromkeys(METRICS, item)


def _corpus(items: list[Item]) -> tuple[list[str], list[list[str]]]:
    return [i["prediction"] for i in items], [i["references"] for i in items]


def _tokenized(items: list[Item]) -> tuple[list[list[str]], list[list[list[str]]]]:
    cands, refs = _corpus(items)
    caption.check_corpus(cands, refs)
    return [caption.tokenize(c) for c in cands], [[caption.tokenize(r) for r in rs] for rs in refs]


def _bleu_stats(items: list[Item]) -> list[caption.BleuStats]:
    cands, refs = _tokenized(items)
    return [caption.bleu_stats(c, r) for c, r in zip(cands, refs)]


def _meteor_stats(items: list[Item]) -> list[caption.MeteorStats]:
    cands, refs = _tokenized(items)
    stem = caption.porter_stemmer()
    return [caption.meteor_best(c, r, stem) for c, r in zip(cands, refs)]


def _rouge(items: list[Item]) -> list[float]:
    cands, refs = _tokenized(items)
    return [caption.rouge_l(c, r) for c, r in zip(cands, refs)]


def _cider(items: list[Item]) -> list[float]:
    return caption.cider_d_tokens(*_tokenized(items))


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


@vectorised(lambda items, idx: caption.resampled_bleu(_bleu_stats(list(items)), idx, 1))
def coco_bleu1(items: list[Item]) -> float:
    return caption.bleu_from_stats(_bleu_stats(items))[0]


@vectorised(lambda items, idx: caption.resampled_bleu(_bleu_stats(list(items)), idx, 2))
def coco_bleu2(items: list[Item]) -> float:
    return caption.bleu_from_stats(_bleu_stats(items))[1]


@vectorised(lambda items, idx: caption.resampled_bleu(_bleu_stats(list(items)), idx, 3))
def coco_bleu3(items: list[Item]) -> float:
    return caption.bleu_from_stats(_bleu_stats(items))[2]


@vectorised(lambda items, idx: caption.resampled_bleu(_bleu_stats(list(items)), idx, 4))
def coco_bleu4(items: list[Item]) -> float:
    return caption.bleu_from_stats(_bleu_stats(items))[3]


@vectorised(lambda items, idx: caption.resampled_meteor(_meteor_stats(list(items)), idx))
def coco_meteor(items: list[Item]) -> float:
    return caption.meteor_from_stats(_meteor_stats(items))


@vectorised(lambda items, idx: caption.resampled_mean(_rouge(list(items)), idx))
def coco_rouge_l(items: list[Item]) -> float:
    return _mean(_rouge(items))


@vectorised(lambda items, idx: caption.resampled_mean(_cider(list(items)), idx))
def coco_cider(items: list[Item]) -> float:
    return _mean(_cider(items))


def process_test_results(doc: dict[str, Any], results: list[Any]) -> dict[str, Item]:
    return {"coco_passthrough": {"image_id": image_id(doc), "caption": str(results[0] or "")}}


def coco_test_submission(items: list[Item], context: AggregationContext) -> None:
    """Write the test captions for the COCO evaluation server; no score (the references are hidden)."""
    context.write_json("captions_test2017_results.json", [dict(i) for i in items])
    return None


# The published package's names for these helpers: task YAMLs written for it reference them.
coco_doc_to_text = doc_to_text
coco_doc_to_visual = doc_to_visual
coco_process_result = process_results
coco_test_process_result = process_test_results
