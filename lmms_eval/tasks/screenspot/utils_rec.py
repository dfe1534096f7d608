"""The published package's module of these task helpers: task YAMLs written for it reference them here."""

from lmms_eval.tasks.screenspot.utils import doc_to_visual as screenspot_rec_doc_to_visual
from lmms_eval.tasks.screenspot.utils import rec_doc_to_text as screenspot_rec_doc_to_text
from lmms_eval.tasks.screenspot.utils import rec_process_results as screenspot_rec_process_result

__all__ = ["screenspot_rec_doc_to_text", "screenspot_rec_doc_to_visual", "screenspot_rec_process_result"]
