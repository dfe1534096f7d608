"""Shared pieces of the video benchmarks: where a video file is, option letters, breakdown keys.

Video files. A video task names its files relative to the folder that holds the dataset's videos;
:func:`find_video` looks for them, in order, in

1. the local copy of the dataset under the dataset root (``$LMMS_EVAL_DATASET_ROOT``; see
   :mod:`lmms_eval.data.dataset_root`): the config folder, then the dataset folder, so videos can lie
   beside the Parquet files;
2. ``video_cache_dir(cache_dir)`` (``$HF_HOME/<cache_dir>``), where the Hub archives are extracted.

In each folder the name is tried as given and under the task's sub-folders, with each of the
usual suffixes when the name has none. The first file that exists wins; when none does, the path
in the first folder is returned, so the failure names the file that was expected.

Scoring. :func:`choice_letter` reads the option letter of an answer over as many letters as the
question has options; :func:`breakdown_key` turns a category name into a result key
(``"Film & Television"`` -> ``film_and_television``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from typing import Any

from lmms_eval.scoring.choice import UPPERCASE, extract_mcq_answer
from lmms_eval.scoring.mmmu import parse_choice

VIDEO_SUFFIXES = (".mp4", ".MP4", ".mkv", ".webm", ".avi", ".mov")
_NON_WORD = re.compile(r"[^0-9a-z]+")


def video_folders(dataset_path: str, cache_dir: str | None, config: str | None = None) -> list[str]:
    """The folders that may hold a dataset's videos, most specific first (module doc)."""
    from lmms_eval.data.dataset_root import find_local_copy
    from lmms_eval.data.video_files import video_cache_dir

    folders: list[str] = []
    root = os.environ.get("LMMS_EVAL_DATASET_ROOT")
    if root and os.path.isdir(os.path.expanduser(root)):
        copy = find_local_copy(os.path.abspath(os.path.expanduser(root)), dataset_path)
        if copy is not None:
            if config and os.path.isdir(os.path.join(copy, config)):
                folders.append(os.path.join(copy, config))
            folders.append(copy)
    if cache_dir:
        folders.append(video_cache_dir(cache_dir))
    return folders


def _names(name: str) -> list[str]:
    if os.path.splitext(name)[1]:
        return [name]
    return [name + suffix for suffix in VIDEO_SUFFIXES]


def find_video(
    name: str, folders: Sequence[str], subdirs: Iterable[str] = ("",), suffixes_optional: bool = True
) -> str:
    """The path of video ``name`` in the first of ``folders`` (under each of ``subdirs``) that has it.

    A name without a suffix is tried with each of :data:`VIDEO_SUFFIXES`; with
    ``suffixes_optional`` a name with a suffix is also tried with the other suffixes of its stem
    (Video-MME keeps a few ``.MP4`` and ``.mkv`` files). An absolute ``name`` is returned as it is.
    """
    if os.path.isabs(name):
        return name
    stem, suffix = os.path.splitext(name)
    names = _names(name)
    if suffix and suffixes_optional:
        names += [n for n in _names(stem) if n != name]
    subdirs = list(subdirs)
    for folder in folders:
        for sub in subdirs:
            for candidate in names:
                path = os.path.join(folder, sub, candidate)
                if os.path.isfile(path):
                    return path
    if not folders:
        return os.path.join(subdirs[0] if subdirs else "", names[0])
    return os.path.join(folders[0], subdirs[0] if subdirs else "", names[0])


def choice_letter(answer: Any, n_options: int) -> str | None:
    """The option letter (among the first ``n_options``) that ``answer`` commits to, or None."""
    return extract_mcq_answer(answer, UPPERCASE[: max(1, min(n_options, len(UPPERCASE)))])


_FIRST_LETTER: dict[str, re.Pattern[str]] = {}  # letters -> compiled pattern


def first_standalone_letter(answer: Any, letters: str = "ABCDE") -> str | None:
    """MVBench's published rule: the first of ``letters`` standing alone as a word, in either case
    (``"b"``, ``"Answer: B"``, ``"the answer is b"``, ``"Best option:(B)"`` give B; ``"A cat sits"``
    gives A; ``"B or C"`` gives B; ``"xB"``, ``"B5"`` give None)."""
    if not isinstance(answer, str):
        return None
    pattern = _FIRST_LETTER.get(letters)
    if pattern is None:
        pattern = _FIRST_LETTER[letters] = re.compile(rf"\b([{letters}])\b", re.IGNORECASE)
    found = pattern.search(answer)
    return found.group(1).upper() if found else None


def mmmu_style_choice(response: Any, options: Sequence[Any]) -> str | None:
    """The option letter by the MMMU parser (:func:`lmms_eval.scoring.mmmu.parse_choice`: a
    bracketed or standalone letter, the latest one winning, then option texts in long answers),
    else the option whose text is the whole answer (``"run."`` picks the option ``run``), else None.
    Never a random letter: NExT-QA and EgoSchema use this where the published tasks guess one."""
    if not isinstance(response, str):
        return None
    texts = [str(option) for option in options]
    letter = parse_choice(response, texts)
    if letter is not None:
        return letter
    answer = " ".join(response.split()).strip(" .,!?;:'\"").lower()
    named = [i for i, text in enumerate(texts) if answer and text.strip().lower() == answer]
    return UPPERCASE[named[0]] if len(named) == 1 else None


def breakdown_key(name: Any) -> str:
    """A category as a result-key fragment: lower case, ``&`` as ``and``, other runs of
    non-alphanumerics as one ``_`` (``"Film & Television"`` -> ``film_and_television``)."""
    text = str(name).lower().replace("&", " and ")
    return _NON_WORD.sub("_", text).strip("_")
