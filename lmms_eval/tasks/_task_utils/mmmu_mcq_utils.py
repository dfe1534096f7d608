"""MMMU-style multiple-choice helpers: option maps and the letter a response picks.

Built on :func:`lmms_eval.scoring.mmmu.parse_choice`. Where the published helpers pick a *random*
letter for a response that names none, these return ``""`` (scored as wrong), so a run's score never
depends on a random draw.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lmms_eval.scoring.mmmu import parse_choice


def get_multi_choice_info(options: Sequence[str], start_chr: str = "A") -> tuple[dict[str, str], list[str]]:
    """``({letter: option}, [letters])`` for ``options`` lettered from ``start_chr``."""
    letters = [chr(ord(start_chr) + i) for i in range(len(options))]
    return dict(zip(letters, options)), letters


def parse_mmmu_multi_choice_response(
    response: str, all_choices: Sequence[str], index2ans: Mapping[str, str]
) -> str:
    """The letter of ``all_choices`` that ``response`` picks (by letter, or by quoting an option in
    a longer answer); ``""`` when it picks none."""
    options = [str(index2ans.get(letter, "")) for letter in all_choices]
    found = parse_choice(str(response), options)
    if found is None:
        return ""
    position = ord(found) - ord("A")
    return all_choices[position] if 0 <= position < len(all_choices) else ""


def parse_jmmmu_multi_choice_response(
    response: str, all_choices: Sequence[str], index2ans: Mapping[str, str]
) -> str:
    """JMMMU's rule: full-width brackets and colons are read as ASCII, then as MMMU."""
    return parse_mmmu_multi_choice_response(_ascii(response), all_choices, index2ans)


def parse_jmmmu_pro_multi_choice_response(response: str, all_choices: Sequence[str]) -> str:
    """JMMMU-Pro: only option letters count (no option texts are given)."""
    return parse_mmmu_multi_choice_response(_ascii(response), all_choices, dict.fromkeys(all_choices, ""))


def parse_videommmu_multi_choice_response(
    response: str, all_choices: Sequence[str], index2ans: Mapping[str, str]
) -> str:
    """Video-MMMU uses the MMMU rule."""
    return parse_mmmu_multi_choice_response(response, all_choices, index2ans)


def _ascii(text: str) -> str:
    import unicodedata

    return unicodedata.normalize("NFKC", str(text))
