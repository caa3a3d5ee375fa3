"""jaxpuffer: calibrate additive noise for (ε, δ)-pufferfish privacy, in JAX."""
import jax as _jax

# Calibration at small δ needs float64. Importing jaxpuffer turns on JAX's 64-bit mode for the
# process (the same switch as JAX_ENABLE_X64=1), before any array is created here.
_jax.config.update("jax_enable_x64", True)

from .priors import Gaussian  # noqa: E402
from .pairs import PairSet, all_pairs, all_pairs_index, concatenate, sum_query_presence, sum_query_value  # noqa: E402
from .tau import tau_star  # noqa: E402
from . import bounds  # noqa: E402
from .losses import delta_coupling, delta_exact, delta_indicator, delta_theorem  # noqa: E402
from .calibration import Calibration, calibrate  # noqa: E402
from .release import privatize  # noqa: E402

__all__ = [
    "Calibration",
    "bounds",
    "calibrate",
    "delta_coupling",
    "delta_exact",
    "delta_indicator",
    "delta_theorem",
    "privatize",
    "Gaussian",
    "PairSet",
    "all_pairs",
    "all_pairs_index",
    "concatenate",
    "sum_query_presence",
    "sum_query_value",
    "tau_star",
]
__version__ = "0.1.0"
