"""The ``doc`` of sample records: JSON-safe copies with media replaced by references, one of each kind,
and the per-document cache that computes each doc once for all filter chains."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from lmms_eval.results import docs as docs_module
from lmms_eval.results.docs import DocRecorder, doc_for_record, doc_hash
from lmms_eval.utils import canonical_json, hash_string


def _png(colour: tuple[int, int, int], size: tuple[int, int] = (30, 20)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, colour).save(buffer, format="PNG")
    return buffer.getvalue()


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_text_numbers_and_nesting_stay_and_the_copy_is_json() -> None:
    doc = {"q": "x" * 50_000, "n": 3, "f": 0.5, "ok": True, "none": None, "nested": {"a": [1, (2, 3)]}}
    recorded = doc_for_record(doc)
    assert recorded == {**doc, "nested": {"a": [1, [2, 3]]}}
    json.dumps(recorded)


def test_pil_image_in_memory_is_its_png_encoding() -> None:
    image = Image.new("RGB", (40, 24), (200, 10, 10))
    ref = doc_for_record({"image": image})["image"]
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=1)
    assert ref == {
        "_media": "image",
        "sha256": _sha(buffer.getvalue()),
        "bytes": len(buffer.getvalue()),
        "width": 40,
        "height": 24,
        "format": "PNG",
    }


def test_pil_image_read_from_a_file_is_the_file(tmp_path: Path) -> None:
    path = tmp_path / "pic.jpg"
    Image.new("RGB", (16, 8), (0, 90, 0)).save(path, format="JPEG")
    with Image.open(path) as image:
        ref = doc_for_record([image])[0]
    data = path.read_bytes()
    assert ref["_media"] == "image" and ref["path"] == str(path)
    assert ref["sha256"] == _sha(data) and ref["bytes"] == len(data)
    assert (ref["width"], ref["height"], ref["format"]) == (16, 8, "JPEG")


def test_cmyk_image_is_hashed_as_rgb_png() -> None:
    ref = doc_for_record(Image.new("CMYK", (4, 4)))
    assert ref["_media"] == "image" and ref["format"] == "PNG" and ref["bytes"] > 0


def test_raw_bytes_and_the_datasets_storage_layout() -> None:
    png = _png((1, 2, 3))
    ref = doc_for_record({"image": {"bytes": png, "path": "images/a.png"}, "blob": b"\x00\x01"})
    assert ref["image"] == {
        "_media": "image",
        "sha256": _sha(png),
        "bytes": len(png),
        "width": 30,
        "height": 20,
        "format": "PNG",
        "path": "images/a.png",
    }
    assert ref["blob"] == {"_media": "bytes", "sha256": _sha(b"\x00\x01"), "bytes": 2}
    wav = b"RIFF\x24\x00\x00\x00WAVEfmt "
    assert doc_for_record(wav)["_media"] == "audio"
    assert doc_for_record(b"\x00\x00\x00\x18ftypmp42")["_media"] == "video"


def test_storage_layout_without_bytes_points_at_the_file(tmp_path: Path) -> None:
    clip = tmp_path / "clip.mp4"
    clip.write_bytes(b"\x00\x00\x00\x18ftypmp42" + b"\x00" * 100)
    assert doc_for_record({"bytes": None, "path": str(clip)}) == {
        "_media": "video",
        "path": str(clip),
        "bytes": clip.stat().st_size,
        "sha256": _sha(clip.read_bytes()),
    }
    assert doc_for_record({"bytes": None, "path": "gone.wav"}) == {"_media": "audio", "path": "gone.wav"}


def test_decoded_audio_is_hash_seconds_and_rate() -> None:
    array = np.linspace(-1, 1, 8000, dtype=np.float32)
    ref = doc_for_record({"audio": {"array": array, "sampling_rate": 16000, "path": "a.flac"}})["audio"]
    assert ref == {
        "_media": "audio",
        "sha256": _sha(array.tobytes()),
        "seconds": 0.5,
        "sampling_rate": 16000,
        "path": "a.flac",
    }


def test_numpy_arrays_and_scalars() -> None:
    array = np.arange(6, dtype=np.int16).reshape(2, 3)
    recorded = doc_for_record({"a": array, "s": np.float32(0.25), "i": np.int64(7)})
    assert recorded["a"] == {
        "_media": "array",
        "shape": [2, 3],
        "dtype": "int16",
        "sha256": _sha(array.tobytes()),
    }
    assert recorded["s"] == 0.25 and recorded["i"] == 7
    assert array.T.flags["C_CONTIGUOUS"] is False
    assert doc_for_record(array.T)["sha256"] == _sha(np.ascontiguousarray(array.T).tobytes())


@pytest.mark.parametrize(
    ("name", "kind"),
    [("v.mp4", "video"), ("v.WEBM", "video"), ("v.mkv", "video"), ("v.avi", "video"), ("v.mov", "video"),
     ("s.wav", "audio"), ("s.mp3", "audio"), ("s.flac", "audio"), ("p.png", "image")],
)  # fmt: skip
def test_strings_naming_media_files(tmp_path: Path, name: str, kind: str) -> None:
    path = tmp_path / name
    path.write_bytes(_png((9, 9, 9)) if kind == "image" else b"media bytes")
    ref = doc_for_record({"file": str(path)})["file"]
    assert ref["_media"] == kind and ref["path"] == str(path)
    assert ref["bytes"] == path.stat().st_size and ref["sha256"] == _sha(path.read_bytes())
    assert doc_for_record(str(tmp_path / "missing.mp4")) == str(tmp_path / "missing.mp4")
    assert doc_for_record("see video.mp4 for details\n") == "see video.mp4 for details\n"


def test_large_files_hash_only_their_first_mib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(docs_module, "FULL_HASH_LIMIT", 1000)
    monkeypatch.setattr(docs_module, "HEAD_BYTES", 100)
    docs_module._file_digest.cache_clear()
    path = tmp_path / "long.mp4"
    data = bytes(range(256)) * 10
    path.write_bytes(data)
    ref = doc_for_record(str(path))
    assert ref == {"_media": "video", "path": str(path), "bytes": 2560, "sha256_head": _sha(data[:100])}
    docs_module._file_digest.cache_clear()


def test_doc_hash_is_unchanged_from_earlier_versions() -> None:
    doc = {"question": "Qué?", "answer": "B", "n": [1, 2]}
    assert doc_hash(doc) == hash_string(canonical_json(doc))
    assert doc_hash(doc) == _sha(
        json.dumps(doc, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()
    )


def test_recorder_builds_each_doc_once_for_all_filters(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []
    real = docs_module.doc_for_record

    def counting(doc: Any) -> Any:
        calls.append(doc)
        return real(doc)

    monkeypatch.setattr(docs_module, "doc_for_record", counting)
    docs = [{"q": f"q{i}"} for i in range(3)]
    recorder = DocRecorder(docs, uses=2)
    for _ in range(2):  # filter-major order, as the scorer writes them
        for i, doc in enumerate(docs):
            assert recorder.get(i, doc) == (doc_hash(doc), doc)
    assert len(calls) == 3
    assert recorder._cache == {}  # nothing kept after a doc's last filter


def test_recorder_reads_stored_bytes_of_a_datasets_image_column() -> None:
    datasets = pytest.importorskip("datasets")
    pngs = [_png((i * 50, 0, 0), (12 + i, 10)) for i in range(3)]
    features = datasets.Features({"q": datasets.Value("string"), "image": datasets.Image()})
    table = datasets.Dataset.from_list(
        [{"q": f"q{i}", "image": {"bytes": png, "path": None}} for i, png in enumerate(pngs)],
        features=features,
    )
    shuffled = table.select([2, 0, 1])
    scoring = shuffled.remove_columns(["image"])
    recorder = DocRecorder(shuffled)
    hashed, recorded = recorder.get(0, scoring[0])
    assert hashed == doc_hash({"q": "q2"})
    assert list(recorded) == ["q", "image"]
    assert recorded["q"] == "q2"
    assert recorded["image"]["sha256"] == _sha(pngs[2]) and recorded["image"]["bytes"] == len(pngs[2])
    assert recorded["image"]["width"] == 14
