"""``lmms_eval.entrypoints.job_scheduler.JobScheduler``: the published module path and name of the
eval server's scheduler, which here is :class:`lmms_eval.entrypoints.scheduler.Scheduler`."""

from lmms_eval.entrypoints.scheduler import Scheduler

JobScheduler = Scheduler

__all__ = ["JobScheduler"]
