"""RefCOCO, RefCOCO+ and RefCOCOg: referring expressions (rules in ``lmms_eval.scoring.geometry``
and, for the caption variants, the COCO caption metrics of ``coco_cap``).

- ``*_bbox_rec_*`` (comprehension): one document per referring expression (``process_docs``
  splits each region's list of expressions); the model writes the region's box as fractions
  ``[x1, y1, x2, y2]`` (square brackets, numbers as written), scored by IoU, ``ACC@t`` (IoU at least t) and ``Center_ACC`` against the
  COCO box (pixels ``x, y, w, h``) turned into fractions of the image size.
- ``*_bbox_*`` and ``*_seg_*`` (captioning): the image with the region outlined (its box in red, or
  its segmentation polygon in white, one pixel wide); the model describes the region; the corpus
  COCO caption metrics against the region's expressions.
"""

from __future__ import annotations

from typing import Any

from lmms_eval.api.prompts import rgb, user_message
from lmms_eval.scoring import geometry

CAPTION_PROMPT = "Provide a short description for this region."
REC_PROMPT = (
    "Bounding box coordinates are specified in the format (top-left x, top-left y, bottom-right x, "
    "bottom-right y). All values are floating point numbers bounded between 0 and 1. Please provide "
    "the bounding box coordinate of the region this sentence describes: "
)
CAPTION_METRICS = (
    "refcoco_Bleu_4",
    "refcoco_Bleu_3",
    "refcoco_Bleu_2",
    "refcoco_Bleu_1",
    "refcoco_METEOR",
    "refcoco_ROUGE_L",
    "refcoco_CIDEr",
)
REC_METRICS = ("IoU", *(f"ACC@{t}" for t in geometry.IOU_THRESHOLDS), "Center_ACC")


def doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    return [rgb(doc["image"])]


def bbox_doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    """The image with the region's COCO box outlined in red (1 pixel)."""
    from PIL import ImageDraw

    image = rgb(doc["image"]).copy()
    ImageDraw.Draw(image).rectangle(geometry.xywh_to_xyxy(doc["bbox"]), outline="red")
    return [image]


def seg_doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    """The image with the region's segmentation polygon (flat ``x, y, x, y, ...``) outlined in white."""
    from PIL import ImageDraw

    image = rgb(doc["image"]).copy()
    ImageDraw.Draw(image).polygon([float(v) for v in doc["segmentation"]], outline="white")
    return [image]


def caption_doc_to_text(doc: dict[str, Any]) -> str:
    return CAPTION_PROMPT


def bbox_doc_to_messages(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return user_message(bbox_doc_to_visual(doc), CAPTION_PROMPT)


def seg_doc_to_messages(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return user_message(seg_doc_to_visual(doc), CAPTION_PROMPT)


def caption_process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, dict[str, Any]]:
    answer = doc["answer"]
    references = [answer] if isinstance(answer, str) else [str(a) for a in answer]
    item = {
        "image_id": str(doc["question_id"]),
        "prediction": str(results[0] or ""),
        "references": references,
    }
    return dict.fromkeys(CAPTION_METRICS, item)


def _expression_rows(batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """One row per referring expression, with the box as fractions and the image size."""
    out: dict[str, list[Any]] = {key: [] for key in (*batch, "image_width", "image_height")}
    for i, answers in enumerate(batch["answer"]):
        width, height = rgb(batch["image"][i]).size
        box = geometry.normalise_box(geometry.xywh_to_xyxy(batch["bbox"][i]), width, height)
        for expression in [answers] if isinstance(answers, str) else answers:
            for key in batch:
                out[key].append(batch[key][i])
            out["answer"][-1] = str(expression)
            out["bbox"][-1] = list(box)
            out["image_width"].append(width)
            out["image_height"].append(height)
    return out


def rec_process_docs(dataset: Any) -> Any:
    """Split every region into one document per referring expression (box in fractions)."""
    return dataset.map(_expression_rows, batched=True, batch_size=32)


def rec_doc_to_text(doc: dict[str, Any]) -> str:
    return REC_PROMPT + str(doc["answer"])


def rec_doc_to_messages(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return user_message(doc_to_visual(doc), rec_doc_to_text(doc))


def rec_process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, float]:
    """``refcoco_<IoU|ACC@t|Center_ACC>`` of the first box in the answer (none: the box 0,0,0,0)."""
    box = geometry.parse_box(str(results[0]), parentheses=False, grid=False)
    scores = geometry.box_scores(box, geometry.as_box(doc["bbox"]))
    return {f"refcoco_{name}": scores[name] for name in REC_METRICS}


# The published package's names for these helpers: task YAMLs written for it reference them.
refcoco_bbox_doc_to_visual = bbox_doc_to_visual
refcoco_doc_to_text = caption_doc_to_text
refcoco_process_result = caption_process_results
refcoco_seg_doc_to_visual = seg_doc_to_visual
