"""Statistics for sealed evaluations: small pure functions, one estimator each.

Conventions shared by every function:

* The item (question) is the unit of analysis: replicates are averaged within item first.
* Undefined results are ``nan`` (e.g. an SE from one item, pass@k from fewer than k trials,
  kappa when chance agreement is 1), never a spurious 0.0 or 1.0.
* Malformed input (``c > n``, mismatched lengths, NaN scores, p-values outside [0, 1]) raises
  ``ValueError``; a non-integer count raises ``TypeError``.
* Judged metrics: ``ppi_mean`` corrects a judge's rate with a human-labelled subset
  (prediction-powered inference, PPI++).
* No SciPy: exact integer arithmetic for binomial tails, ``statistics.NormalDist`` for normal
  quantiles, seeded ``numpy.random.Generator(PCG64(seed))`` for the bootstrap.
"""

from ._abstention import abstention_score
from ._agreement import agreement, cohen_kappa
from ._bayes import beta_interval, prob_a_better
from ._bootstrap import bootstrap_by_group, paired_bootstrap, stratified_bootstrap
from ._contamination import mean_nll, min_k_prob, perplexity
from ._exactsum import ExactSum
from ._mcnemar import mcnemar_midp
from ._mde import (
    VarianceComponents,
    discordant_split,
    mde_paired,
    sign_test_power,
    variance_components,
    z_total,
)
from ._multiple import benjamini_hochberg, holm
from ._paired import paired_difference, paired_se, sign_test, sign_test_items, unpaired_se
from ._passk import (
    mean_pass_at_k,
    mean_pass_hat_k,
    mean_pass_k_curves,
    pass_at_k,
    pass_hat_k,
    pass_k_curves,
)
from ._permutation import PermutationTest, paired_permutation
from ._power import sample_size_items
from ._ppi import MIN_LABELLED, MIN_UNLABELLED, MeanInterval, PPIMean, ppi_mean
from ._proportion import Z_95, compounded, wilson
from ._se import clustered_se, item_means, item_se, mean_sd
from ._sequential import Look, SequentialResult, check_stop, cs_radius, sequential_rule
from ._small_n import MIN_N_BOOTSTRAP, bootstrap_note, clopper_pearson

__all__ = [
    "MIN_LABELLED",
    "MIN_N_BOOTSTRAP",
    "MIN_UNLABELLED",
    "Z_95",
    "ExactSum",
    "Look",
    "MeanInterval",
    "PPIMean",
    "PermutationTest",
    "SequentialResult",
    "VarianceComponents",
    "abstention_score",
    "agreement",
    "benjamini_hochberg",
    "beta_interval",
    "bootstrap_by_group",
    "bootstrap_note",
    "check_stop",
    "clopper_pearson",
    "clustered_se",
    "cohen_kappa",
    "compounded",
    "cs_radius",
    "discordant_split",
    "holm",
    "item_means",
    "item_se",
    "mcnemar_midp",
    "mde_paired",
    "mean_nll",
    "mean_pass_at_k",
    "mean_pass_hat_k",
    "mean_pass_k_curves",
    "mean_sd",
    "min_k_prob",
    "paired_bootstrap",
    "paired_difference",
    "paired_permutation",
    "paired_se",
    "pass_at_k",
    "pass_hat_k",
    "pass_k_curves",
    "perplexity",
    "ppi_mean",
    "prob_a_better",
    "sample_size_items",
    "sequential_rule",
    "sign_test",
    "sign_test_items",
    "sign_test_power",
    "stratified_bootstrap",
    "unpaired_se",
    "variance_components",
    "wilson",
    "z_total",
]
