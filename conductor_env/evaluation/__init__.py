"""Evaluating coordinator policies: the eval loop, results files, tables, plots and the viewer.

    from conductor_env.evaluation import EvalConfig, evaluate, summarize
    result = evaluate(EvalConfig.for_id("Conductor-RG-v0", pool="simulated", n=50), policies, "runs/rg")
    summarize(result.records)

The ``conductor-env eval``, ``report`` and ``demo`` commands are thin layers over this package.
"""

from conductor_env.evaluation.results import ResultsWriter, episode_key, read_results
from conductor_env.evaluation.runner import EvalConfig, EvalResult, ProgressReporter, evaluate
from conductor_env.evaluation.setup import EvalConfigError
from conductor_env.evaluation.summary import PolicySummary, summarize, summary_table, wilson_interval

__all__ = [
    "EvalConfig",
    "EvalConfigError",
    "EvalResult",
    "PolicySummary",
    "ProgressReporter",
    "ResultsWriter",
    "episode_key",
    "evaluate",
    "read_results",
    "summarize",
    "summary_table",
    "wilson_interval",
]
