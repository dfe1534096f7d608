"""The GPU kit (bench/gpu/run_kit.py) runs end to end on CPU with a tiny config: a dry run of
what it does on an H100, checked for what it writes (no timing is asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

KIT = Path(__file__).resolve().parent.parent / "bench" / "gpu" / "run_kit.py"


def test_the_gpu_kit_dry_run_on_cpu_writes_its_json_and_table(tmp_path: Path) -> None:
    out = tmp_path / "out"
    command = [sys.executable, str(KIT), "--device", "cpu", "--config", "tiny", "--batch-sizes", "1", "2"]
    command += [
        "--requests",
        "2",
        "--new-tokens",
        "3",
        "--image-size",
        "56",
        "--skip-install",
        "--out",
        str(out),
    ]
    proc = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads((out / "gpu_kit.json").read_text(encoding="utf-8"))
    assert report["device"] == "cpu" and report["config"] == "tiny" and report["installed"] == []
    assert [row["batch_size"] for row in report["rows"]] == [1, 2]
    for row in report["rows"]:
        # fixed output lengths: both sides generate exactly 2 images x 3 tokens
        assert row["plain_tokens"] == row["ours_tokens"] == 6
        assert row["plain_images_per_s"] > 0 and row["ours_images_per_s"] > 0 and row["our_share"] > 0
    assert {"processor", "transfer", "generate"} <= set(report["overheads_ms"])
    assert report["our_top_ops"] and all(op["calls"] >= 1 for op in report["our_top_ops"])
    table = (out / "gpu_kit.md").read_text(encoding="utf-8")
    assert "| batch | plain images/s |" in table and table.count("| >= 90% |") == 2


def test_the_gpu_kit_refuses_a_batch_larger_than_its_requests(tmp_path: Path) -> None:
    command = [sys.executable, str(KIT), "--device", "cpu", "--config", "tiny", "--batch-sizes", "4"]
    command += ["--requests", "2", "--skip-install", "--out", str(tmp_path)]
    proc = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2 and "--requests at least the largest batch size" in proc.stderr
    assert "Traceback" not in proc.stderr
