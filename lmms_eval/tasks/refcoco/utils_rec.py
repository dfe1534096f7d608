"""The published package's module of these task helpers: task YAMLs written for it reference them here."""

from lmms_eval.tasks.refcoco.utils import doc_to_visual as refcoco_bbox_rec_doc_to_visual
from lmms_eval.tasks.refcoco.utils import rec_doc_to_text as refcoco_bbox_rec_doc_to_text
from lmms_eval.tasks.refcoco.utils import rec_process_docs as refcoco_bbox_rec_preprocess_dataset
from lmms_eval.tasks.refcoco.utils import rec_process_results as refcoco_bbox_rec_process_result

__all__ = [
    "refcoco_bbox_rec_doc_to_text",
    "refcoco_bbox_rec_doc_to_visual",
    "refcoco_bbox_rec_preprocess_dataset",
    "refcoco_bbox_rec_process_result",
]
