"""Boxes and points in model answers: reading them, IoU, and point-in-box (the grounding tasks).

Conventions (see docs/task_guide.md, "Grounding tasks: boxes and points"):

- A box is ``(x1, y1, x2, y2)``: top-left and bottom-right corners, in the coordinates the task
  states (fractions of the image size for RefCOCO and ScreenSpot, pixels for ScreenSpot-Pro).
- A COCO box ``(x, y, w, h)`` in pixels becomes a box with :func:`xywh_to_xyxy`.
- A point is ``(x, y)``; it is inside a box when ``x1 <= x <= x2`` and ``y1 <= y <= y2`` (edges
  count as inside).

Reading a box (:func:`parse_box`): the first ``[a, b, c, d]`` or ``(a, b, c, d)`` in the answer, with
numbers written with a leading digit (``0.25``, not ``.25``) and no space before a comma. When any of
the four numbers is above 1, the box is taken to be on the 0-1000 grid of pointing models and all
four are divided by 1000 (ScreenSpot). RefCOCO reads square brackets only and never rescales. An
answer without a box gives ``None``; the published rules then score the box ``(0, 0, 0, 0)``
(:data:`EMPTY_BOX`), whose centre is inside any gold box that touches the origin.

Reading a point (:func:`parse_point`): the first two numbers anywhere in the answer (``[x, y]``,
``(x, y)``, ``x=.., y=..`` and a box's first corner alike).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

Box = tuple[float, float, float, float]
Point = tuple[float, float]

EMPTY_BOX: Box = (0.0, 0.0, 0.0, 0.0)
IOU_THRESHOLDS = (0.1, 0.3, 0.5, 0.7, 0.9)

_NUMBER = r"-?\d+(?:\.\d+)?"
_BOX = re.compile(r"[\[(]\s*" + r",\s*".join([f"({_NUMBER})"] * 4) + r"\s*[\])]")
_SQUARE_BOX = re.compile(r"\[\s*" + r",\s*".join([f"({_NUMBER})"] * 4) + r"\s*\]")
_ANY_NUMBER = re.compile(_NUMBER)
GRID = 1000.0  # the coordinate grid of boxes written in integers (0-1000)


def parse_box(text: str | None, *, parentheses: bool = True, grid: bool = True) -> Box | None:
    """The first box written in ``text``, or ``None``.

    The ScreenSpot rule (the defaults) reads ``[..]`` and ``(..)`` and divides a box with a number
    above 1 by 1000 (the 0-1000 grid). The RefCOCO rule (``parentheses=False, grid=False``) reads
    ``[..]`` only and keeps the numbers as written.
    """
    match = (_BOX if parentheses else _SQUARE_BOX).search(text or "")
    if match is None:
        return None
    x1, y1, x2, y2 = (float(v) for v in match.groups())
    if grid and max(x1, y1, x2, y2) > 1:
        return (x1 / GRID, y1 / GRID, x2 / GRID, y2 / GRID)
    return (x1, y1, x2, y2)


def parse_point(text: str | None) -> Point | None:
    """The first two numbers in ``text`` as a point, or ``None`` when it has fewer than two."""
    numbers = _ANY_NUMBER.findall(text or "")
    if len(numbers) < 2:
        return None
    return (float(numbers[0]), float(numbers[1]))


def xywh_to_xyxy(box: Sequence[float]) -> Box:
    """A COCO ``(x, y, width, height)`` box as ``(x1, y1, x2, y2)``."""
    x, y, w, h = (float(v) for v in box[:4])
    return (x, y, x + w, y + h)


def normalise_box(box: Sequence[float], width: float, height: float) -> Box:
    """A pixel box ``(x1, y1, x2, y2)`` as fractions of the image size."""
    x1, y1, x2, y2 = (float(v) for v in box[:4])
    return (x1 / width, y1 / height, x2 / width, y2 / height)


def as_box(values: Sequence[float]) -> Box:
    x1, y1, x2, y2 = (float(v) for v in values[:4])
    return (x1, y1, x2, y2)


def box_area(box: Box) -> float:
    return (box[2] - box[0]) * (box[3] - box[1])


def box_iou(a: Box, b: Box) -> float:
    """Intersection over union; 0.0 when the union is empty. A box with x2 < x1 (or y2 < y1) has
    no intersection with anything, and its (negative) area enters the union as written."""
    width = min(a[2], b[2]) - max(a[0], b[0])
    height = min(a[3], b[3]) - max(a[1], b[1])
    intersection = max(0.0, width) * max(0.0, height)
    union = box_area(a) + box_area(b) - intersection
    return intersection / union if union > 0 else 0.0


def box_center(box: Box) -> Point:
    return ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2)


def point_in_box(point: Point, box: Box) -> bool:
    """Whether ``point`` lies in ``box``, edges included."""
    return box[0] <= point[0] <= box[2] and box[1] <= point[1] <= box[3]


def scale_point(point: Point, width: float | None, height: float | None) -> Point:
    """A point whose two coordinates are both at most 1 is taken as fractions of the image size and
    turned into pixels; any other point (or no known size) is returned as it is."""
    if width and height and point[0] <= 1 and point[1] <= 1:
        return (point[0] * width, point[1] * height)
    return point


def box_scores(prediction: Box | None, gold: Box) -> dict[str, float]:
    """``IoU``, ``ACC@t`` (IoU at least t, for each of :data:`IOU_THRESHOLDS`) and ``Center_ACC``
    (the centre of the predicted box inside the gold box) of one predicted box."""
    box = prediction or EMPTY_BOX
    iou = box_iou(box, gold)
    scores = {"IoU": iou}
    scores.update({f"ACC@{t}": float(iou >= t) for t in IOU_THRESHOLDS})
    scores["Center_ACC"] = float(point_in_box(box_center(box), gold))
    return scores
