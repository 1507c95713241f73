"""Policy spec strings (``single:0``, ``moa:3``, ``llm:gemma3-270m``, ...) and :func:`make_policy`."""

from __future__ import annotations

import re
from typing import Any

from conductor_env.agents.base import Policy

#: The spec grammar, shown in errors and in ``--help`` texts.
SPEC_GRAMMAR = """policy specs:
  single:<id>                    one worker (shown id) solves the task
  random                         a random valid workflow (option seed=)
  template:plan-solve-verify     plan -> solve -> verify, workers cycling through the shown pool
  template:parallel-judge[:<k>]  k independent attempts (default 3, k <= 4) then a judge reading all
  reflect:<id>:<k>               k turns (k <= 5) of self-reflection on one worker
  moa:<k>                        Mixture-of-Agents, one layer: k proposers (k <= 4) then an aggregator
  llm:<name>                     an LLM as a zero-shot Conductor: a pool worker name, a model folder
                                 or a known local model (e.g. llm:gemma3-270m)"""

#: Options each family accepts; options meant for other families are ignored, so one options
#: dict can be passed to every spec of an evaluation.
_FAMILY_OPTIONS: dict[str, set[str]] = {
    "single": {"wrap_ids"},
    "random": {"seed", "max_steps"},
    "template:plan-solve-verify": {"wrap_ids", "workers"},
    "template:parallel-judge": set(),
    "reflect": {"wrap_ids"},
    "moa": {"wrap_ids", "aggregator"},
    "llm": {"pool", "max_tokens", "temperature", "max_concurrency", "retry", "local_options"},
}
KNOWN_OPTIONS: frozenset[str] = frozenset().union(*_FAMILY_OPTIONS.values())

_ID = r"(\d{1,6})"


def _bad(spec: str, why: str) -> ValueError:
    return ValueError(f"bad policy spec {spec!r}: {why}\n{SPEC_GRAMMAR}")


def _pick(family: str, options: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in options.items() if k in _FAMILY_OPTIONS[family]}


def make_policy(spec: str, **options: Any) -> Policy:
    """Builds a policy from its spec string.

    Args:
        spec: One of the forms in :data:`SPEC_GRAMMAR`.
        **options: Family options: ``seed``/``max_steps`` (random); ``wrap_ids`` (map explicit ids
            the observation does not show onto the pool modulo its size instead of raising);
            ``workers`` (three explicit ids for plan-solve-verify); ``aggregator`` (moa);
            ``pool``, ``max_tokens``, ``temperature``, ``max_concurrency``, ``retry``,
            ``local_options`` (llm). Options of other families are ignored.

    Returns:
        The policy; its ``name`` is the normalised spec.

    Raises:
        ValueError: For an unknown or malformed spec (the message lists the grammar), an option
            no family knows, or an ``llm:`` name that resolves to nothing.
    """
    unknown = sorted(set(options) - KNOWN_OPTIONS)
    if unknown:
        raise ValueError(f"unknown policy options {unknown}; known options: {sorted(KNOWN_OPTIONS)}")
    if not isinstance(spec, str) or not spec.strip():
        raise _bad(str(spec), "empty spec")
    text = spec.strip()
    # Imported here so `import conductor_env.agents` stays light.
    from conductor_env.agents import baselines

    if text.startswith("llm:"):
        from conductor_env.agents.llm import LLMConductor

        return LLMConductor(text[len("llm:") :], **_pick("llm", options))
    if text == "random":
        return baselines.RandomWorkflow(**_pick("random", options))
    if m := re.fullmatch(rf"single:{_ID}", text):
        return baselines.SingleWorker(int(m.group(1)), **_pick("single", options))
    if text == "template:plan-solve-verify":
        return baselines.PlanSolveVerify(**_pick("template:plan-solve-verify", options))
    if m := re.fullmatch(rf"template:parallel-judge(?::{_ID})?", text):
        k = int(m.group(1)) if m.group(1) else 3
        try:
            return baselines.ParallelJudge(k)
        except ValueError as error:
            raise _bad(spec, str(error)) from None
    if m := re.fullmatch(rf"reflect:{_ID}:{_ID}", text):
        try:
            return baselines.SelfReflection(int(m.group(1)), int(m.group(2)), **_pick("reflect", options))
        except ValueError as error:
            raise _bad(spec, str(error)) from None
    if m := re.fullmatch(rf"moa:{_ID}", text):
        try:
            return baselines.MixtureOfAgents(int(m.group(1)), **_pick("moa", options))
        except ValueError as error:
            raise _bad(spec, str(error)) from None
    raise _bad(spec, "unknown form")
