"""MM-Vet: the GPT grader of the MM-Vet benchmark (a correctness score from 0.0 to 1.0 per answer).

The grader sees a few-shot table (question | ground truth | prediction | correctness) and completes the
last row. In a ground truth, ``<AND>`` means every element must be present and ``<OR>`` that one
suffices. The reply's first space-separated word is the score when it is a number from 0 to 1.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

JUDGE_MAX_TOKENS = 128
CAPABILITIES = ("rec", "ocr", "know", "gen", "spat", "math")

INSTRUCTION = (
    "Compare the ground truth and prediction from AI models, to give a correctness score for "
    "the prediction. <AND> in the ground truth means it is totally right only when all "
    "elements in the ground truth are present in the prediction, and <OR> means it is totally"
    " right when any one element in the ground truth is present in the prediction. The "
    "correctness score is 0.0 (totally wrong), 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, "
    "or 1.0 (totally right). Just complete the last space of the correctness score."
)
TABLE_HEADER = "gpt_query_prompt | Ground truth | Prediction | Correctness\n--- | --- | --- | ---"
EXAMPLES: tuple[tuple[str, str, str, str], ...] = (
    (
        "What is x in the equation?",
        "-1 <AND> -5",
        "x = 3",
        "0.0",
    ),
    (
        "What is x in the equation?",
        "-1 <AND> -5",
        "x = -1",
        "0.5",
    ),
    (
        "What is x in the equation?",
        "-1 <AND> -5",
        "x = -5",
        "0.5",
    ),
    (
        "What is x in the equation?",
        "-1 <AND> -5",
        "x = -5 or 5",
        "0.5",
    ),
    (
        "What is x in the equation?",
        "-1 <AND> -5",
        "x = -1 or x = -5",
        "1.0",
    ),
    (
        "Can you explain this meme?",
        (
            "This meme is poking fun at the fact that the names of the countries Iceland and "
            "Greenland are misleading. Despite its name, Iceland is known for its beautiful green "
            "landscapes, while Greenland is mostly covered in ice and snow. The meme is saying that "
            "the person has trust issues because the names of these countries do not accurately "
            "represent their landscapes."
        ),
        (
            "The meme talks about Iceland and Greenland. It's pointing out that despite their names, "
            "Iceland is not very icy and Greenland isn't very green."
        ),
        "0.4",
    ),
    (
        "Can you explain this meme?",
        (
            "This meme is poking fun at the fact that the names of the countries Iceland and "
            "Greenland are misleading. Despite its name, Iceland is known for its beautiful green "
            "landscapes, while Greenland is mostly covered in ice and snow. The meme is saying that "
            "the person has trust issues because the names of these countries do not accurately "
            "represent their landscapes."
        ),
        (
            "The meme is using humor to point out the misleading nature of Iceland's and Greenland's "
            "names. Iceland, despite its name, has lush green landscapes while Greenland is mostly "
            "covered in ice and snow. The text 'This is why I have trust issues' is a playful way to "
            "suggest that these contradictions can lead to distrust or confusion. The humor in this "
            "meme is derived from the unexpected contrast between the names of the countries and "
            "their actual physical characteristics."
        ),
        "1.0",
    ),
)


def _spaced(answer: str) -> str:
    """``a<AND>b`` is shown as ``a <AND> b`` (and ``<OR>`` likewise), as the grader's examples are."""
    return answer.replace("<AND>", " <AND> ").replace("<OR>", " <OR> ")


def judge_prompt(question: str, answer: str, prediction: str) -> str:
    """The grader prompt: instruction, table, the examples, then the row to complete."""
    rows = "\n".join(" | ".join(example) for example in EXAMPLES)
    query = f"{question} | {_spaced(answer)} | {prediction} |"
    return f"{INSTRUCTION}\n{TABLE_HEADER}\n{rows}\n\n{query}"


def parse_score(reply: str | None) -> float | None:
    """The reply's first space-separated word as a score in [0, 1], else ``None``."""
    word = (reply or "").split(" ")[0]
    try:
        score = float(word)
    except ValueError:
        return None
    return score if 0.0 <= score <= 1.0 else None


def capabilities(value: Any) -> list[str]:
    """``"rec,ocr"`` (or a list) as ``["rec", "ocr"]``."""
    items = value if isinstance(value, (list, tuple)) else str(value or "").split(",")
    return [str(item).strip() for item in items if str(item).strip()]


def percent(items: Iterable[Mapping[str, Any]]) -> float:
    """The mean score of ``items`` (``{"score": ...}``) times 100; 0.0 for none."""
    scores = [float(item["score"]) for item in items]
    return 100.0 * sum(scores) / len(scores) if scores else 0.0
