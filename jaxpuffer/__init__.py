"""jaxpuffer: calibrate additive noise for (ε, δ)-pufferfish privacy, in JAX."""
import sys as _sys

_JAX_IMPORTED_BEFORE = "jax" in _sys.modules
import jax as _jax  # noqa: E402

# Calibration at small δ needs float64. Importing jaxpuffer turns on JAX's 64-bit mode for the
# process (the same switch as JAX_ENABLE_X64=1), before any array is created here. It stays a
# process-wide switch: priors and pair sets are arrays a user builds and traces under their own
# jit/vmap/grad, and their dtype there is fixed by the global flag, not by a context entered inside
# a jaxpuffer call (README, "float64"). Where that may surprise (JAX was imported first, with 32-bit
# defaults), it says so once.
if not _jax.config.jax_enable_x64:
    if _JAX_IMPORTED_BEFORE:
        import warnings as _warnings

        _warnings.warn(
            "jaxpuffer turned on JAX's 64-bit mode for this whole process (jax_enable_x64=True): arrays "
            "created from now on default to float64. Set JAX_ENABLE_X64=1, or call "
            "jax.config.update('jax_enable_x64', True) before importing jaxpuffer, to make this explicit "
            "and silence this warning.", stacklevel=2)
    _jax.config.update("jax_enable_x64", True)

from ._xla_guard import guard_from_environment as _guard_xla  # noqa: E402

_guard_xla()  # XLA:CPU's concurrent schedule can deadlock jaxlib's batched LAPACK kernels on few cores

from ._cache import enable_from_environment as _enable_cache  # noqa: E402

_enable_cache()  # JAX's persistent compile cache in ~/.cache/jaxpuffer (JAXPUFFER_CACHE=0: off)

from .priors import Discrete, Gaussian, GaussianMixture  # noqa: E402
from .pairs import (  # noqa: E402
    PairSet,
    all_pairs,
    all_pairs_index,
    concatenate,
    counting_query,
    counting_query_pmfs,
    sum_query_presence,
    sum_query_value,
)
from .tau import tau_star  # noqa: E402
from . import bounds, kantorovich  # noqa: E402
from .couplings import ComponentPlan, TransportPlan, gmm_coupling, plan_sensitivity, quantile_cmf, quantile_plan  # noqa: E402
from .losses import delta_coupling, delta_indicator, delta_probabilistic, delta_theorem  # noqa: E402
from .evaluate import delta_exact  # noqa: E402
from .calibration import Calibration, calibrate  # noqa: E402
from .release import privatize  # noqa: E402
from .fitting import GMMFit, MultivariateGMMFit, fit_gmm, fit_gmm_nd, priors_from_table  # noqa: E402
from . import data, noise  # noqa: E402

_LAZY = ("leakage", "mechanisms")  # the two papers' toolkits: imported on first use (they pull in
# scipy.integrate and scipy.optimize, ~0.35 s that a calibration does not need)


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'jaxpuffer' has no attribute {name!r}")

__all__ = [
    "Calibration",
    "bounds",
    "calibrate",
    "delta_coupling",
    "delta_exact",
    "delta_indicator",
    "delta_probabilistic",
    "delta_theorem",
    "privatize",
    "Discrete",
    "Gaussian",
    "GaussianMixture",
    "GMMFit",
    "data",
    "leakage",
    "mechanisms",
    "noise",
    "fit_gmm",
    "fit_gmm_nd",
    "MultivariateGMMFit",
    "priors_from_table",
    "ComponentPlan",
    "gmm_coupling",
    "PairSet",
    "all_pairs",
    "all_pairs_index",
    "concatenate",
    "counting_query",
    "counting_query_pmfs",
    "kantorovich",
    "plan_sensitivity",
    "quantile_cmf",
    "quantile_plan",
    "TransportPlan",
    "sum_query_presence",
    "sum_query_value",
    "tau_star",
]
__version__ = "0.1.0"
