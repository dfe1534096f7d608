"""Output stage: results JSON, per-sample JSONL and the printed results table."""

from lmms_eval.loggers.results import RESULTS_SCHEMA_VERSION, OutputWriter
from lmms_eval.loggers.table import make_table

__all__ = ["RESULTS_SCHEMA_VERSION", "OutputWriter", "make_table"]
