"""The published package's module of these task helpers: task YAMLs written for it reference them here."""

from lmms_eval.api.prompts import doc_image as infovqa_doc_to_visual
from lmms_eval.api.prompts import doc_question as infovqa_doc_to_text

__all__ = ["infovqa_doc_to_text", "infovqa_doc_to_visual"]
