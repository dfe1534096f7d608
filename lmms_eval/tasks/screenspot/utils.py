"""ScreenSpot, ScreenSpot-v2 and ScreenSpot-Pro: GUI grounding (rules in ``lmms_eval.scoring.geometry``).

- ``screenspot_rec_test``: the model writes the box of the element an instruction names, as
  fractions ``[x1, y1, x2, y2]``; scored by IoU, ``ACC@t`` and ``Center_ACC`` against the gold box
  (fractions). ``screenspot_Center_ACC_<platform>_<type>`` break ``Center_ACC`` down by platform
  (mobile, desktop, web) and element type (text, icon), the published log's breakdown.
- ``screenspot_reg_test``: the model describes the element a red box marks; CIDEr against the
  instruction (the caption metrics of ``coco_cap``).
- ``screenspot_v2`` / ``screenspot_pro``: the model writes one click point ``[x, y]``; correct when
  it lies in the gold box. v2 compares the point with the box as written (the gold boxes are
  fractions); Pro boxes are pixels, and a point of fractions is scaled by the image size the
  document states (``img_size`` or ``image_width`` / ``image_height``).
"""

from __future__ import annotations

from typing import Any

from lmms_eval.api.prompts import rgb, user_message
from lmms_eval.scoring import geometry

REC_PROMPT = (
    "Bounding box coordinates are specified in the format (top-left x, top-left y, bottom-right x, "
    "bottom-right y). All values are floating point numbers bounded between 0 and 1 with two decimal "
    "places of precision (e.g., 0.15). Please provide the bounding box coordinates of the region that "
    "corresponds to the command: "
)
REG_PROMPT = "Direct a user to interact with the highlighted region [{:.2f}, {:.2f}, {:.2f}, {:.2f}]."
CLICK_PROMPT = (
    "Identify the UI element for the instruction and output exactly one click point as [x, y] in "
    "normalized coordinates within [0, 1]. Do not output a bounding box.\nInstruction: "
)
REC_METRICS = ("IoU", *(f"ACC@{t}" for t in geometry.IOU_THRESHOLDS), "Center_ACC")
PLATFORMS = {
    "ios": "mobile",
    "android": "mobile",
    "windows": "desktop",
    "macos": "desktop",
}  # any other source is a web site (gitlab, shop, forum, tool)
MARK_COLOUR = "red"
MARK_WIDTH = 3


def doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    return [rgb(doc["image"])]


def rec_doc_to_text(doc: dict[str, Any]) -> str:
    return REC_PROMPT + str(doc["instruction"])


def rec_doc_to_messages(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return user_message(doc_to_visual(doc), rec_doc_to_text(doc))


def platform_of(doc: dict[str, Any]) -> str:
    return PLATFORMS.get(str(doc["data_source"]).lower(), "web")


def rec_process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, float]:
    """``screenspot_<IoU|ACC@t|Center_ACC>`` of the first box in the answer (none: the box 0,0,0,0)."""
    breakdown = f"screenspot_Center_ACC_{platform_of(doc)}_{doc['data_type']}"
    scores = geometry.box_scores(geometry.parse_box(str(results[0])), geometry.as_box(doc["bbox"]))
    out = {f"screenspot_{name}": scores[name] for name in REC_METRICS}
    out[breakdown] = scores["Center_ACC"]
    return out


def reg_doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    """The screenshot with the gold box (fractions) drawn in red, 3 pixels wide."""
    from PIL import ImageDraw

    image = rgb(doc["image"]).copy()
    width, height = image.size
    x1, y1, x2, y2 = geometry.as_box(doc["bbox"])
    ImageDraw.Draw(image).rectangle(
        (x1 * width, y1 * height, x2 * width, y2 * height), outline=MARK_COLOUR, width=MARK_WIDTH
    )
    return [image]


def reg_doc_to_text(doc: dict[str, Any]) -> str:
    return REG_PROMPT.format(*geometry.as_box(doc["bbox"]))


def reg_doc_to_messages(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return user_message(reg_doc_to_visual(doc), reg_doc_to_text(doc))


def reg_process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, dict[str, Any]]:
    """One caption item (the instruction is the single reference) for the corpus CIDEr."""
    item = {
        "image_id": str(doc["file_name"]),
        "prediction": str(results[0] or ""),
        "references": [str(doc["instruction"])],
    }
    return {"screenspot_CIDEr": item}


def click_doc_to_text(doc: dict[str, Any]) -> str:
    return CLICK_PROMPT + str(doc["instruction"])


def click_doc_to_messages(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return user_message(doc_to_visual(doc), click_doc_to_text(doc))


def _image_size(doc: dict[str, Any]) -> tuple[float | None, float | None]:
    """The image size the document states: ``img_size`` (width, height), else ``image_width`` and
    ``image_height``; ``(None, None)`` when it states none."""
    size, width, height = doc.get("img_size"), doc.get("image_width"), doc.get("image_height")
    if isinstance(size, (list, tuple)) and len(size) >= 2:
        return float(size[0]), float(size[1])
    return (float(width), float(height)) if width and height else (None, None)


def _click_scores(prefix: str, element_type: str, correct: bool) -> dict[str, float]:
    score = float(correct)
    out = {f"{prefix}_action_acc": score}
    if element_type in ("text", "icon"):
        out[f"{prefix}_{element_type}_acc"] = score
    return out


def v2_process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, float]:
    """``screenspot_v2_action_acc`` and ``_text_acc`` / ``_icon_acc``: the point in the gold box,
    both as written (no scaling)."""
    element_type, gold = str(doc["data_type"]), doc["bbox"]
    point = geometry.parse_point(str(results[0]))
    correct = point is not None and geometry.point_in_box(point, geometry.as_box(gold))
    return _click_scores("screenspot_v2", element_type, correct)


def pro_process_results(doc: dict[str, Any], results: list[Any]) -> dict[str, float]:
    """``screenspot_pro_action_acc``, ``_text_acc`` / ``_icon_acc`` and ``_<group>_acc`` (Dev,
    Creative, CAD, Scientific, Office, OS): the point (fractions scaled to pixels) in the pixel box."""
    gold, element_type, group = doc["bbox"], str(doc["ui_type"]), doc.get("group")
    size = _image_size(doc)
    point = geometry.parse_point(str(results[0]))
    correct = point is not None and geometry.point_in_box(
        geometry.scale_point(point, *size), geometry.as_box(gold)
    )
    out = _click_scores("screenspot_pro", element_type, correct)
    if group:
        out[f"screenspot_pro_{str(group).lower()}_acc"] = float(correct)
    return out


# The published package's names for these helpers: task YAMLs written for it reference them.
screenspot_bbox_doc_to_visual = reg_doc_to_visual
screenspot_doc_to_text = reg_doc_to_text
screenspot_process_result = reg_process_results
