"""The published package's module of these task helpers: task YAMLs written for it reference them here."""

from lmms_eval.api.prompts import doc_image as hb_doc_to_visual
from lmms_eval.api.prompts import doc_question as hb_doc_to_text
from lmms_eval.tasks.hallusion_bench.utils import process_results as hb_process_results

__all__ = ["hb_doc_to_text", "hb_doc_to_visual", "hb_process_results"]
