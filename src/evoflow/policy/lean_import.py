"""transformers without its scikit-learn and SciPy imports: import this first.

Loading any transformers model class imports ``generation.candidate_generator``,
which imports ``sklearn.metrics`` whenever scikit-learn is installed (only to
tune assisted decoding's confidence threshold), and the object-detection losses,
which import ``scipy.optimize`` whenever SciPy is (Hungarian matching). evoflow
uses neither, but both packages are installed (Helmsman's data), so every job
that loads a model paid for them: 2.4 s of a train or evaluation job's 6.9 s of
imports on a 2-core machine (``benchmarks/job_startup.py``), and a tiny-model job
is mostly start-up. Modules that load models or import peft import this one before them;
importing transformers' models first elsewhere only costs the time again.
"""

from __future__ import annotations

import transformers.utils

transformers.utils.is_sklearn_available = lambda: False
transformers.utils.is_scipy_available = lambda: False
