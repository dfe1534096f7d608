"""Bundled demo material: the ``demo_shapes`` benchmark generator and a tiny trained VLM.

* :mod:`lmms_eval.demo.shapes` draws the benchmark's images from small JSON specs;
* ``lmms_eval/demo/tiny_vlm/`` holds a ~2 MB Qwen2-VL-style checkpoint trained from scratch by
  ``scripts/train_demo_model.py`` on freshly generated (non-benchmark) specs.
"""

from __future__ import annotations

from pathlib import Path

TINY_VLM_DIR = Path(__file__).resolve().parent / "tiny_vlm"

__all__ = ["TINY_VLM_DIR"]
