"""Synthetic videos for the video benchmark tests, encoded with PyAV at test time.

``write_video(path, frames=8, fps=8, size=(32, 24), shade=0)`` writes a tiny MPEG-4 clip whose
frames are solid colours (frame ``i`` has red ``(shade + 16 * i) % 256``), so a decoded frame tells
which video and which frame it came from. ``write_srt`` writes a SubRip subtitle file.
:class:`ScriptedLoglikelihoods` answers the log-likelihood requests of the ``_mcppl`` tasks.

``nltk_wordnet_data(folder)`` makes an NLTK data folder from Debian's WordNet 3.0 (packages
``wordnet-base`` and ``wordnet-sense-index``, files in ``/usr/share/wordnet``; the test skips
without them) with a small English stop list, and ``scripted_toolkit()`` the WUPS toolkit
over it with a scripted Penn tagger (NLTK's tagger model is a download the tests do without).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from bench_helpers import ScriptedModel

from lmms_eval.api.instance import Instance


def write_video(
    path: Path, frames: int = 8, fps: int = 8, size: tuple[int, int] = (32, 24), shade: int = 0
) -> Path:
    """An ``frames``-frame ``size`` (width, height) clip at ``fps`` frames per second."""
    import av
    import numpy as np

    path.parent.mkdir(parents=True, exist_ok=True)
    width, height = size
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream("mpeg4", rate=fps)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for i in range(frames):
            pixels = np.zeros((height, width, 3), dtype=np.uint8)
            pixels[..., 0] = (shade + 16 * i) % 256
            frame = av.VideoFrame.from_ndarray(pixels, format="rgb24")
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path


def _timestamp(seconds: float) -> str:
    millis = round(seconds * 1000)
    hours, rest = divmod(millis, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    secs, millis = divmod(rest, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d},{millis:03d}"


def write_srt(path: Path, cues: Sequence[tuple[float, float, str]]) -> Path:
    """A SubRip file with one numbered cue per ``(start_s, end_s, text)``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    blocks = [
        f"{i}\n{_timestamp(start)} --> {_timestamp(end)}\n{text}\n"
        for i, (start, end, text) in enumerate(cues, 1)
    ]
    path.write_text("\n".join(blocks), encoding="utf-8")
    return path


def use_dataset_root(monkeypatch: Any, dataset_root: Path, cache_dir: str) -> None:
    """Keep video loading off the user's files: ``HF_HOME`` is an empty temporary folder, so the
    videos can only come from the local copy under ``dataset_root`` (``--dataset_root`` of the run,
    which the video tasks' ``doc_to_visual`` sees as ``$LMMS_EVAL_DATASET_ROOT`` while it runs)."""
    hf_home = dataset_root.parent / "hf_home"
    hf_home.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("HF_HOME", str(hf_home))
    monkeypatch.delenv("LMMS_EVAL_DATASET_ROOT", raising=False)
    assert not (hf_home / cache_dir).exists()


class ScriptedLoglikelihoods(ScriptedModel):
    """A simple model for the ``_mcppl`` tasks: the log-likelihood of choice ``i`` of a doc is
    ``scores(task, doc)[i]``; ``seen[task][doc_id]`` holds the ``(context, continuation)`` of each
    choice's request, in order."""

    def __init__(self, scores: Callable[[str, dict[str, Any]], Sequence[float]]) -> None:
        super().__init__(lambda task, doc: "", chat=False)
        self.scores = scores

    def loglikelihood(self, requests: list[Instance]) -> list[tuple[float, bool]]:
        out = []
        for request in requests:
            context, continuation, _visual, doc_id, task, split = request.args
            doc = self.task_dict[task][split][doc_id]
            self.seen.setdefault(task, {}).setdefault(doc_id, []).append((context, continuation))
            values = list(self.scores(task, doc))
            out.append((float(values[request.idx]), values[request.idx] == max(values)))
        return out


DEBIAN_WORDNET = Path("/usr/share/wordnet")
WORDNET_FILES = [f"{kind}.{pos}" for kind in ("data", "index") for pos in ("noun", "verb", "adj", "adv")]
WORDNET_FILES += [f"{pos}.exc" for pos in ("noun", "verb", "adj", "adv")] + ["index.sense"]
# The 45 lexicographer files of WordNet 3.0 in number order, as lexnames(5WN) lists them; the
# syntactic category (1 noun, 2 verb, 3 adjective, 4 adverb) follows from the name's prefix.
LEXNAMES = [
    "adj.all",
    "adj.pert",
    "adv.all",
    "noun.Tops",
    "noun.act",
    "noun.animal",
    "noun.artifact",
    "noun.attribute",
    "noun.body",
    "noun.cognition",
    "noun.communication",
    "noun.event",
    "noun.feeling",
    "noun.food",
    "noun.group",
    "noun.location",
    "noun.motive",
    "noun.object",
    "noun.person",
    "noun.phenomenon",
    "noun.plant",
    "noun.possession",
    "noun.process",
    "noun.quantity",
    "noun.relation",
    "noun.shape",
    "noun.state",
    "noun.substance",
    "noun.time",
    "verb.body",
    "verb.change",
    "verb.cognition",
    "verb.communication",
    "verb.competition",
    "verb.consumption",
    "verb.contact",
    "verb.creation",
    "verb.emotion",
    "verb.motion",
    "verb.perception",
    "verb.possession",
    "verb.social",
    "verb.stative",
    "verb.weather",
    "adj.ppl",
]
LEX_CATEGORY = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}
# a stop list for the tests' answers ("on" and "not" are kept by NExT-QA all the same)
TEST_STOPWORDS = ["the", "a", "an", "and", "be", "do", "it", "of", "us", "on", "not"]
# Penn tags of the tests' words; any other word is a noun (NN)
TEST_TAGS = {
    "the": "DT", "a": "DT", "an": "DT", "and": "CC", "is": "VBZ", "was": "VBD", "running": "VBG",
    "ran": "VBD", "walking": "VBG", "red": "JJ", "quickly": "RB", "on": "IN", ".": ".", "dogs": "NNS",
}  # fmt: skip


def nltk_wordnet_data(folder: Path) -> Path:
    """An NLTK data folder (``corpora/wordnet``, ``corpora/stopwords``) under ``folder``."""
    missing = [name for name in WORDNET_FILES if not (DEBIAN_WORDNET / name).is_file()]
    if missing:
        pytest.skip(
            f"WordNet 3.0 not installed (apt-get install wordnet-base wordnet-sense-index): {missing[0]}"
        )
    wordnet = folder / "corpora" / "wordnet"
    wordnet.mkdir(parents=True)
    for name in WORDNET_FILES:
        shutil.copyfile(DEBIAN_WORDNET / name, wordnet / name)  # NLTK refuses links out of its path
    lines = [f"{i:02d}\t{name}\t{LEX_CATEGORY[name.split('.')[0]]}\n" for i, name in enumerate(LEXNAMES)]
    (wordnet / "lexnames").write_text("".join(lines), encoding="utf-8")
    stopwords = folder / "corpora" / "stopwords"
    stopwords.mkdir(parents=True)
    (stopwords / "english").write_text("\n".join(TEST_STOPWORDS) + "\n", encoding="utf-8")
    return folder


def scripted_tag(words: list[str]) -> list[tuple[str, str]]:
    return [(word, TEST_TAGS.get(word.lower(), "NN")) for word in words]


def scripted_toolkit() -> Any:
    """The WUPS toolkit on the NLTK data path: Treebank words (one sentence) and :data:`TEST_TAGS`."""
    from nltk.tokenize import TreebankWordTokenizer

    from lmms_eval.scoring.wups import nltk_toolkit

    return nltk_toolkit(tokenize=TreebankWordTokenizer().tokenize, tag=scripted_tag)


@pytest.fixture(scope="session")
def wordnet_toolkit(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """:func:`scripted_toolkit` over :func:`nltk_wordnet_data`, first on NLTK's data path."""
    import nltk

    folder = nltk_wordnet_data(tmp_path_factory.mktemp("nltk_data"))
    nltk.data.path.insert(0, str(folder))
    try:
        yield scripted_toolkit()
    finally:
        nltk.data.path.remove(str(folder))
