"""The published package's module of these task helpers: task YAMLs written for it reference them here."""

from lmms_eval.tasks.mmbench.utils import doc_to_text as mmbench_doc_to_text
from lmms_eval.tasks.mmbench.utils import doc_to_visual as mmbench_doc_to_visual
from lmms_eval.tasks.mmbench.utils import process_results as mmbench_process_results

__all__ = ["mmbench_doc_to_text", "mmbench_doc_to_visual", "mmbench_process_results"]
