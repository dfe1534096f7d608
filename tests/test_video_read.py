"""``read_video``: which frames, at what size, from which sources and backends, and broken videos.

Every clip is encoded here with PyAV; frame ``i`` shows ``i`` as a grid of black and white cells
(:mod:`lmms_eval.media.synthetic`), so each test reads back exactly which frames it got.
"""

from __future__ import annotations

import base64
import importlib.util
import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

av = pytest.importorskip("av")
np = pytest.importorskip("numpy")

from PIL import Image  # noqa: E402

from lmms_eval.errors import MissingDependencyError  # noqa: E402
from lmms_eval.media import (  # noqa: E402
    FrameSelection,
    MediaError,
    decode_video,
    frames_to_sample,
    read_video,
    read_video_pyav,
    sample_frame_indices,
    video_backend,
)
from lmms_eval.media.synthetic import frame_index, index_frame, write_index_video  # noqa: E402


def indices(frames: Any) -> list[int]:
    return [frame_index(frame) for frame in frames]


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("clips")
    return {
        "c100": write_index_video(root / "c100.mp4", 100, fps=10),  # 10 s
        "c37": write_index_video(root / "c37.mp4", 37, fps=7),  # 5.29 s
        "c5": write_index_video(root / "c5.mp4", 5, fps=10),  # 0.5 s
        "mkv": write_index_video(root / "c60.mkv", 60, fps=10),  # no frame count in the header
        "bframes": _bframes(root / "b300.mp4", 300, 30),  # B-frames, a keyframe every 24 frames
    }


def _bframes(path: Path, frames: int, fps: int) -> str:
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=Fraction(fps))
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        stream.options = {"preset": "medium", "g": "24", "bf": "3"}
        for i in range(frames):
            for packet in stream.encode(av.VideoFrame.from_ndarray(index_frame(i, 64, 48), format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return str(path)


# -- the sampling rule, worked out by hand -------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        # nframes: int(i * 99 / 7) for i < 7, then the last frame: 14.14 -> 14, 56.57 -> 56 (truncated)
        ({"nframes": 8}, [0, 14, 28, 42, 56, 70, 84, 99]),
        ({"nframes": 1}, [0]),  # one frame: the first
        ({"nframes": 2}, [0, 99]),
        ({"nframes": 0}, list(range(100))),  # 0: every frame
        ({"nframes": 200}, list(range(100))),  # more than the video has: every frame
        # fps: floor(10 s * 1 fps) = 10 frames over 100: int(i * 11.0)
        ({"fps": 1.0, "max_num_frames": 32}, [0, 11, 22, 33, 44, 55, 66, 77, 88, 99]),
        # fps 0.5 -> 5 frames, capped at 4: int(i * 33.0)
        ({"fps": 0.5, "max_num_frames": 4}, [0, 33, 66, 99]),
        ({"fps": 1.0}, [0, 14, 28, 42, 56, 70, 84, 99]),  # the cap defaults to 8
        # the published argument: num_frm is nframes without fps, the cap with it
        ({"num_frm": 16}, [0, 6, 13, 19, 26, 33, 39, 46, 52, 59, 66, 72, 79, 85, 92, 99]),
        ({"num_frm": 4, "fps": 0.5}, [0, 33, 66, 99]),
        ({}, [0, 14, 28, 42, 56, 70, 84, 99]),  # nothing given: 8 frames
        # a window: frames 20..50 (2.0 s .. 5.0 s, both ends in), 31 frames, 4 of them: int(i * 10.0)
        ({"nframes": 4, "start_time": 2.0, "end_time": 5.0}, [20, 30, 40, 50]),
        ({"nframes": 3, "start_time": 9.5}, [95, 97, 99]),
    ],
)
def test_frame_indices_follow_the_documented_rule(
    clips: dict[str, str], kwargs: dict[str, Any], expected: list[int]
) -> None:
    assert indices(read_video(clips["c100"], **kwargs)) == expected
    if "num_frm" not in kwargs:
        assert decode_video(clips["c100"], _selection(kwargs)).indices == expected


def _selection(kwargs: dict[str, Any]) -> FrameSelection:
    return FrameSelection(**{k: v for k, v in kwargs.items() if k != "num_frm"})


def test_the_published_reader_chose_these_frames(clips: dict[str, str]) -> None:
    """Frames the published ``read_video`` (lmms-eval 0.7.3) returned for clips of these frame
    counts and rates and these arguments, recorded by running it on clips generated the same way
    (see docs/media.md, "Parity with the published reader")."""
    published = {
        ("c37", 8, None): [0, 5, 10, 15, 20, 25, 30, 36],
        ("c37", 16, None): [0, 2, 4, 7, 9, 12, 14, 16, 19, 21, 24, 26, 28, 31, 33, 36],
        ("c37", 32, 1.0): [0, 9, 18, 27, 36],  # floor(5.29 s * 1) = 5
        ("c37", 100, 3.0): [0, 2, 5, 7, 10, 12, 15, 18, 20, 23, 25, 28, 30, 33, 36],
        ("c37", 4, 0.5): [0, 36],
        ("c5", 8, None): [0, 1, 2, 3, 4],
        ("bframes", 8, None): [0, 42, 85, 128, 170, 213, 256, 299],
        ("bframes", 32, 1.0): [0, 33, 66, 99, 132, 166, 199, 232, 265, 299],
    }
    for (clip, num_frm, fps), expected in published.items():
        assert indices(read_video(clips[clip], num_frm=num_frm, fps=fps)) == expected, (clip, num_frm, fps)


def test_where_we_differ_from_the_published_reader(clips: dict[str, str]) -> None:
    # fps sampling of a clip shorter than 1/fps: one frame (the published reader returns all of them)
    assert indices(read_video(clips["c5"], fps=1.0, max_num_frames=8)) == [0]
    # a container without a frame count: sampled like the others (the published reader returns all)
    assert indices(read_video(clips["mkv"], nframes=4)) == [0, 19, 39, 59]


def test_sampler_matches_numpy_linspace() -> None:
    for total in range(1, 200):
        for count in range(2, min(total, 70)):
            expected = np.linspace(0, total - 1, count).astype(int).tolist()
            assert sample_frame_indices(total, count) == expected, (total, count)


def test_frames_to_sample_rules() -> None:
    assert frames_to_sample(100, 10.0, nframes=8) == 8
    assert frames_to_sample(100, 10.0, fps=2.0, max_num_frames=64) == 20
    assert frames_to_sample(100, 10.0, fps=2.0, max_num_frames=0) == 20  # 0: no cap
    assert frames_to_sample(3, 30.0, fps=1.0) == 1  # shorter than one interval: one frame
    assert frames_to_sample(100, 10.0, nframes=50, max_num_frames=16) == 16
    with pytest.raises(ValueError, match="nframes or fps"):
        frames_to_sample(100, 10.0, nframes=4, fps=1.0)
    with pytest.raises(ValueError, match="frame rate"):
        frames_to_sample(100, None, fps=1.0)


def test_seeking_over_b_frames_returns_the_asked_frames(clips: dict[str, str]) -> None:
    for count in (3, 8, 64, 300):
        got = indices(read_video(clips["bframes"], nframes=count))
        assert got == sample_frame_indices(300, count)
    clip = decode_video(clips["bframes"], FrameSelection(nframes=5, start_time=4.0, end_time=6.0))
    assert indices(clip.frames) == clip.indices == [120, 135, 150, 165, 180]


# -- size, timestamps, sources -------------------------------------------------------------------


def test_frames_are_resized_as_decoded_and_timestamps_returned(clips: dict[str, str]) -> None:
    frames, stamps = read_video(clips["c100"], 4, max_pixels=32 * 24, return_timestamps=True)
    assert frames.shape == (4, 24, 32, 3) and frames.dtype == np.uint8
    assert indices(frames) == [0, 33, 66, 99]
    assert stamps == pytest.approx([0.0, 3.3, 6.6, 9.9])
    big = read_video(clips["c100"], 2, min_pixels=128 * 96)
    assert big.shape == (2, 96, 128, 3) and indices(big) == [0, 99]
    assert read_video(clips["c100"], 2).shape == (2, 48, 64, 3)  # neither: the video's own size
    video = decode_video(clips["c100"], FrameSelection(nframes=3))
    assert (video.total_frames, video.video_fps, video.duration) == (100, 10.0, 10.0)
    assert video.backend == "pyav" and read_video_pyav is read_video


def test_sources_paths_urls_bytes_dicts_and_frame_lists(clips: dict[str, str], tmp_path: Path) -> None:
    path = clips["c37"]
    data = Path(path).read_bytes()
    expected = [0, 18, 36]
    sources: list[Any] = [
        path,
        Path(path),
        "file://" + os.path.abspath(path),
        data,
        "data:video/mp4;base64," + base64.b64encode(data).decode(),
        {"path": path},
        {"bytes": data, "path": None},
    ]
    for source in sources:
        assert indices(read_video(source, 3)) == expected, type(source)
    frames = [Image.fromarray(index_frame(i, 64, 48)) for i in range(37)]
    assert indices(read_video(frames, 3)) == expected
    folder = tmp_path / "frames"
    folder.mkdir()
    for i, frame in enumerate(frames[:12]):
        frame.save(folder / f"f_{i}.png")
    assert indices(read_video(str(folder), 4)) == [0, 3, 7, 11]
    # a frame list's frame rate is its dict's fps (else 1): 12 frames at 4 fps = 3 s, 1 fps -> 3
    assert indices(read_video({"frames": frames[:12], "fps": 4}, fps=1.0)) == [0, 5, 11]


# -- broken videos -------------------------------------------------------------------------------


def _faststart_copy(source: str, target: Path) -> Path:
    with av.open(source) as src, av.open(str(target), "w", options={"movflags": "faststart"}) as out:
        stream = out.add_stream_from_template(src.streams.video[0])
        for packet in src.demux(src.streams.video[0]):
            if packet.dts is not None:
                packet.stream = stream
                out.mux(packet)
    return target


def test_broken_videos_are_media_errors_that_say_what_is_wrong(clips: dict[str, str], tmp_path: Path) -> None:
    data = Path(clips["c100"]).read_bytes()
    (tmp_path / "half.mp4").write_bytes(data[: len(data) // 2])  # the index (moov) is at the end: lost
    (tmp_path / "noise.mp4").write_bytes(os.urandom(4000))
    (tmp_path / "empty.mp4").write_bytes(b"")
    faststart = _faststart_copy(clips["c100"], tmp_path / "fs.mp4").read_bytes()
    (tmp_path / "cut.mp4").write_bytes(faststart[: int(len(faststart) * 0.6)])  # the index survives
    mkv = Path(clips["mkv"]).read_bytes()
    (tmp_path / "cut.mkv").write_bytes(mkv[: len(mkv) // 2])
    zero = av.open(str(tmp_path / "zero.mp4"), "w")
    stream = zero.add_stream("libx264", rate=10)
    stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
    zero.start_encoding()
    zero.close()
    expected = {
        "missing.mp4": ("missing", "not found"),
        "half.mp4": ("corrupt", "does not open as a video"),
        "noise.mp4": ("corrupt", "does not open"),
        "empty.mp4": ("corrupt", "does not open"),
        "cut.mp4": ("truncated", "announces 100 frames"),
        "cut.mkv": ("truncated", "before its announced length"),
        "zero.mp4": ("empty", "no video stream"),
    }
    for name, (problem, words) in expected.items():
        with pytest.raises(MediaError, match=words) as info:
            read_video(tmp_path / name, 4)
        assert info.value.problem == problem, name
    assert indices(read_video(tmp_path / "fs.mp4", 2)) == [0, 99]  # the intact copy reads fine
    with pytest.raises(MediaError, match="time range"):
        read_video(clips["c100"], 4, start_time=20.0)
    with pytest.raises(MediaError, match="frame list is empty"):
        read_video([], 4)
    with pytest.raises(MediaError, match="cannot read a int"):
        read_video(7, 4)


# -- backends ------------------------------------------------------------------------------------


def test_backend_selection_and_install_hints(monkeypatch: pytest.MonkeyPatch, clips: dict[str, str]) -> None:
    monkeypatch.delenv("LMMS_VIDEO_DECODE_BACKEND", raising=False)
    assert video_backend() == "pyav"
    monkeypatch.setenv("LMMS_VIDEO_DECODE_BACKEND", " TorchCodec ")
    assert video_backend() == "torchcodec" and video_backend("dali") == "dali"
    monkeypatch.setenv("LMMS_VIDEO_DECODE_BACKEND", "decord")
    with pytest.raises(ValueError, match=r"unknown video decode backend 'decord'.*pyav, torchcodec, dali"):
        read_video(clips["c37"], 2)
    monkeypatch.delenv("LMMS_VIDEO_DECODE_BACKEND")
    for name, package in (("torchcodec", "torchcodec"), ("dali", "nvidia-dali-cuda120")):
        if importlib.util.find_spec(name if name != "dali" else "nvidia") is not None:
            continue
        with pytest.raises(MissingDependencyError, match=f"pip install {package}"):
            read_video(clips["c37"], 2, backend=name)


@pytest.mark.parametrize("backend", ["torchcodec", "dali"])
def test_optional_backends_choose_the_same_frames(backend: str, clips: dict[str, str]) -> None:
    module = {"torchcodec": "torchcodec", "dali": "nvidia.dali"}[backend]
    if importlib.util.find_spec(module.split(".")[0]) is None:
        pytest.skip(f"{module} is not installed")
    for clip in ("c100", "c37", "bframes"):
        for kwargs in ({"nframes": 8}, {"fps": 1.0, "max_num_frames": 32}, {"nframes": 3, "start_time": 1.0}):
            ours = decode_video(clips[clip], FrameSelection(**kwargs), backend=backend)
            pyav = decode_video(clips[clip], FrameSelection(**kwargs))
            assert ours.indices == pyav.indices and indices(ours.frames) == pyav.indices


def test_importing_the_media_layer_stays_light() -> None:
    code = "import sys, lmms_eval, lmms_eval.media; print(sorted({'av', 'numpy', 'PIL', 'torch'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
