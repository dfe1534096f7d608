"""The published task-helper modules (``lmms_eval.tasks._task_utils.*``), written on our own scoring code.

Task folders written for the published package import these names; they behave as the published
helpers do (facts observed by running them), except where ``docs/migration.md`` lists a difference.
"""
