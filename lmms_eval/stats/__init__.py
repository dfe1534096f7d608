"""Statistics used by the evaluator, the comparer and the server: one tested place.

* :mod:`~lmms_eval.stats.estimates`: means with analytic and clustered errors, group scores,
  repeated-sampling metrics;
* :mod:`~lmms_eval.stats.bootstrap`: a vectorised bootstrap for any aggregation;
* :mod:`~lmms_eval.stats.pure`: which aggregations the bootstrap may call again
  (:func:`pure_aggregation`);
* :mod:`~lmms_eval.stats.distributions`: normal and Student-t functions;
* :mod:`~lmms_eval.stats.power`: sample size, power and minimum detectable effect of paired comparisons.
"""

from lmms_eval.stats.bootstrap import (
    bootstrap_estimate,
    cluster_bootstrap_estimate,
    register_batched,
    resolve_batch,
    vectorised,
)
from lmms_eval.stats.distributions import norm_cdf, norm_ppf, t_cdf, t_ppf, t_sf_two_sided
from lmms_eval.stats.estimates import (
    DEFAULT_ALPHA,
    Estimate,
    clean_numbers,
    clustered_mean_estimate,
    clustered_stderr,
    group_estimate,
    mean_estimate,
    stability_metrics,
    t_interval,
)
from lmms_eval.stats.intervals import BINARY_METHODS, CLOPPER_PEARSON, WILSON
from lmms_eval.stats.paired import PairedResult, paired_comparison
from lmms_eval.stats.power import (
    achieved_power,
    minimum_detectable_effect,
    paired_sd,
    required_sample_size,
)
from lmms_eval.stats.pure import pure_aggregation, purity, recognised_arithmetic

__all__ = [
    "BINARY_METHODS",
    "CLOPPER_PEARSON",
    "DEFAULT_ALPHA",
    "WILSON",
    "Estimate",
    "PairedResult",
    "achieved_power",
    "bootstrap_estimate",
    "clean_numbers",
    "cluster_bootstrap_estimate",
    "clustered_mean_estimate",
    "clustered_stderr",
    "group_estimate",
    "mean_estimate",
    "minimum_detectable_effect",
    "norm_cdf",
    "norm_ppf",
    "paired_comparison",
    "paired_sd",
    "pure_aggregation",
    "purity",
    "recognised_arithmetic",
    "register_batched",
    "required_sample_size",
    "resolve_batch",
    "stability_metrics",
    "t_cdf",
    "t_interval",
    "t_ppf",
    "t_sf_two_sided",
    "vectorised",
]
