"""MIA-Bench: an LLM judge grades how well an answer follows each component of a layered instruction.

The grader prompt names the instruction, its components (one to five) with their weights, and the
answer, and asks for ``score of component k: x/y`` for each component and ``total score: z/10``.
A component scores ``x / y`` (integers; a component the reply does not grade scores 0). The total
is ``z / 10`` capped at 1; a reply without a total gets the plain mean of the components it grades
(weights ignored; none graded: 0), as published.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

JUDGE_MAX_TOKENS = 1024
MAX_COMPONENTS = 5
ORDINALS = ("first", "second", "third", "fourth", "fifth")
_COMPONENT = re.compile(r"score of component (\d+)\s*:\s*(\d+)\s*/\s*(\d+)", re.IGNORECASE)
_TOTAL = re.compile(r"total score\s*:\s*(\d+)\s*/\s*(\d+)", re.IGNORECASE)
_FORMAT = (
    "List scores of each component, and the total score in one sentence in this EXACT format: "
    "score of component 1: x/2, score of component 2: y/8, total score: z/10. Use only numbers for x, "
    "y, z. Do not use markdown formatting or asterisks. Then explain your reasons."
)


def _weights_sentence(weights: Sequence[Any]) -> str:
    n = len(weights)
    if n == 1:
        return f"The first component is worth {weights[0]} scores."
    if n == 2:
        names = "first and second"
    else:  # "first second, third, and fourth" (n = 3, 4) / "first second, third, fourth and fifth"
        middle = ", ".join(ORDINALS[1 : n - 1])
        names = f"first {middle}{',' if n < 5 else ''} and {ORDINALS[n - 1]}"
    values = ", ".join(str(w) for w in weights[:-1]) + f" and {weights[-1]}"
    return f"The {names} component is each worth {values} scores."


def judge_prompt(instruction: str, components: Sequence[str], weights: Sequence[Any], response: str) -> str:
    """The grader prompt for one to :data:`MAX_COMPONENTS` components."""
    if not 1 <= len(components) <= MAX_COMPONENTS:
        raise ValueError(f"MIA-Bench grades 1 to {MAX_COMPONENTS} components, got {len(components)}")
    named = ", and ".join(
        f"the {ORDINALS[i]} component is:' {component}'" for i, component in enumerate(components)
    )
    return (
        f"Here is an instruction for a multimodal LLM: ' {instruction} You need to grade if the response "
        f"from the model follows each component of the instruction. {named[0].upper()}{named[1:]} "
        f"The response is:' {response}' You need to score the response and be strict. The total score "
        "ranges from 0 to 10, depending on if the response follows the instruction. "
        f"{_weights_sentence(weights)} {_FORMAT}"
    )


def parse_scores(reply: str | None, components: Sequence[str]) -> dict[str, float]:
    """``{component: score, ..., "total_score": total}`` read from the grader's reply."""
    text = reply or ""
    found = {int(k): int(x) / int(y) for k, x, y in _COMPONENT.findall(text) if int(y)}
    scores = {name: found.get(i + 1, 0.0) for i, name in enumerate(components)}
    total = _TOTAL.search(text)
    if total and int(total.group(2)):
        scores["total_score"] = min(1.0, int(total.group(1)) / int(total.group(2)))
    else:  # the plain mean of the components the reply grades, whatever their weights
        graded = [found[i + 1] for i in range(len(components)) if i + 1 in found]
        scores["total_score"] = sum(graded) / len(graded) if graded else 0.0
    return scores


def mean_total(items: Iterable[Mapping[str, Any]]) -> float:
    """The mean ``total_score`` (a fraction, as published)."""
    totals = [float(item["total_score"]) for item in items]
    return sum(totals) / len(totals) if totals else 0.0
