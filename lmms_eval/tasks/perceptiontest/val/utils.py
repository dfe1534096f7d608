"""The published package's module of these task helpers: task YAMLs written for it reference them here."""

from lmms_eval.tasks.perceptiontest.utils import doc_to_choice as perceptiontest_val_doc_to_choice
from lmms_eval.tasks.perceptiontest.utils import doc_to_text as perceptiontest_val_doc_to_text
from lmms_eval.tasks.perceptiontest.utils import doc_to_visual as perceptiontest_val_doc_to_visual
from lmms_eval.tasks.perceptiontest.utils import process_results as perceptiontest_val_process_results_mc
from lmms_eval.tasks.perceptiontest.utils import (
    process_results_mcppl as perceptiontest_val_process_results_mc_ppl,
)

__all__ = [
    "perceptiontest_val_doc_to_choice",
    "perceptiontest_val_doc_to_text",
    "perceptiontest_val_doc_to_visual",
    "perceptiontest_val_process_results_mc",
    "perceptiontest_val_process_results_mc_ppl",
]
