"""Output stage: the printed results table (the files themselves are written by :mod:`lmms_eval.results`)."""

from lmms_eval.loggers.table import make_table

__all__ = ["make_table"]
