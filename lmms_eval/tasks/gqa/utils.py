"""GQA: joins questions to their images (another config of the dataset) and builds the prompt.

Scoring is the built-in ``exact_match`` (ignore_case, ignore_punctuation) against ``answer``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lmms_eval.api.prompts import doc_image, doc_question
from lmms_eval.errors import DatasetError

IMAGES_CONFIG = "testdev_balanced_images"
IMAGES_SPLIT = "testdev"


def process_docs(docs: Any, load_config: Callable[[str, str], Any]) -> Any:
    """The questions with an ``image`` column joined from the images config by ``imageId``.

    The join is lazy: each question gets ``image_row`` (its image's row in the images config) and
    an empty Image column ``image``; a transform fills ``image`` from that row when a document is
    read, so no image is decoded or copied up front. Scoring reads the documents without their
    media columns, and then the transform has nothing to fill.
    """
    import datasets

    images = load_config(IMAGES_CONFIG, IMAGES_SPLIT)
    row_of = {str(image_id): row for row, image_id in enumerate(images["id"])}
    rows: list[int] = []
    for image_id in docs["imageId"]:
        if str(image_id) not in row_of:
            raise DatasetError(
                f"gqa: imageId '{image_id}' of a question has no row in config '{IMAGES_CONFIG}' "
                f"(split '{IMAGES_SPLIT}', {len(row_of)} images)"
            )
        rows.append(row_of[str(image_id)])
    pixels = images.select_columns(["image"])

    def attach_images(batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        if "image" in batch and "image_row" in batch:
            batch["image"] = [pixels[int(row)]["image"] for row in batch["image_row"]]
        return batch

    docs = docs.add_column("image_row", rows)
    docs = docs.add_column("image", [None] * len(rows), feature=datasets.Image())
    return docs.with_transform(attach_images)


# The published package's names for these helpers: task YAMLs written for it reference them.
gqa_doc_to_text = doc_question
gqa_doc_to_visual = doc_image
gqa_process_docs = process_docs
