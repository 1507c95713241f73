"""Training rows are training rows: the one check every path that builds training envs passes.

An :class:`~conductor_env.envs.setup.EnvSetup` built with ``training=True`` is checked here when
its suite is built (:meth:`EnvSetup.build_suite`). Every training path builds through such a
setup: the package's GRPO trainer and TRL's paths (``EnvFactory``), the SkyRL-gym, GEM, verl and
verifiers adapters (``shared_env``) and the OpenEnv server (``ConductorHub``). So whichever
framework trains, the same rules hold:

- the split is ``"train"`` unless another is named;
- a test split (:data:`TEST_SPLITS`) is refused unless ``allow_test_split=True`` is named, and
  then warns once (:class:`TestSplitWarning`): test rows trained on no longer measure anything;
- problems a program can be paid for without solving are refused without the suite's opt-in and
  warned about once with it: graded only on public tests (``allow_public_only``), unverified
  BigCodeBench tasks (``allow_unverified``), both in :mod:`conductor_env.tasks.public_tests`, and
  reasoning-gym datasets that pay trivial answers (``allow_gameable``, problems marked
  ``metadata["gameable"]``).
"""

from __future__ import annotations

import threading
import warnings
import weakref
from typing import Sequence

from conductor_env.suite import Problem, TaskSuite
from conductor_env.tasks.public_tests import PublicOnlyError, check_training_use
from conductor_env.tasks.registry import SuiteError
from conductor_env.tasks.suites.rg_audit import GameableDatasetWarning

__all__ = ["ALLOW_TEST_SPLIT", "GAMEABLE_OPT_IN", "TEST_SPLITS", "TRAIN_SPLIT", "TestSplitError", "TestSplitWarning", "check_opt_ins", "check_training"]

#: The split a training env reads when none is named.
TRAIN_SPLIT = "train"
#: Splits held out for measuring: refused for training unless :data:`ALLOW_TEST_SPLIT` is named.
TEST_SPLITS = frozenset({"test"})
#: The setup option that allows training on a test split.
ALLOW_TEST_SPLIT = "allow_test_split"
#: The suite option that allows reasoning-gym datasets paying trivial answers.
GAMEABLE_OPT_IN = "allow_gameable"

_EXAMPLES_SHOWN = 3
_lock = threading.Lock()
_warned: weakref.WeakKeyDictionary[TaskSuite, set[str]] = weakref.WeakKeyDictionary()


class TestSplitError(SuiteError):
    """Training would read a test split, and the setup was not told it may."""

    __test__ = False  # not a pytest class, whatever its name


class TestSplitWarning(UserWarning):
    """Training reads a test split (the setup was told it may)."""

    __test__ = False


def _warn_once(suite: TaskSuite, key: str, message: str, category: type[Warning]) -> None:
    with _lock:
        seen = _warned.setdefault(suite, set())
        if key in seen:
            return
        seen.add(key)
    warnings.warn(message, category, stacklevel=4)


def _check_test_split(suite: TaskSuite, split: str, allow_test_split: bool, what: str) -> None:
    if split not in TEST_SPLITS:
        return
    if not allow_test_split:
        raise TestSplitError(
            f"{what} reads test rows: training on them leaves nothing held out to measure. Train on split={TRAIN_SPLIT!r} (the default), "
            f"or name the test split and pass {ALLOW_TEST_SPLIT}=True to train on it anyway"
        )
    _warn_once(suite, f"split:{split}", f"{what} reads test rows, allowed by {ALLOW_TEST_SPLIT}=True: results on this split no longer measure held-out skill", TestSplitWarning)


def _check_gameable(suite: TaskSuite, problems: Sequence[Problem], what: str) -> None:
    flagged = [problem for problem in problems if problem.metadata.get("gameable")]
    if not flagged:
        return
    datasets = sorted({str(problem.metadata.get("dataset") or problem.id) for problem in flagged})
    consequence = (
        f"{what} holds {len(flagged)} problem(s) of datasets that may pay answers needing no solving ({', '.join(datasets[:_EXAMPLES_SHOWN])}{', ...' if len(datasets) > _EXAMPLES_SHOWN else ''})"
    )
    if not getattr(suite, GAMEABLE_OPT_IN, False):
        raise PublicOnlyError(f"{consequence}. Training on them needs an explicit opt-in: suite_options={{'{GAMEABLE_OPT_IN}': True}} (see docs/REASONING_GYM_AUDIT.md)")
    _warn_once(suite, "gameable", f"{consequence}; allowed by {GAMEABLE_OPT_IN}=True.", GameableDatasetWarning)


def check_training(suite: TaskSuite, split: str, problems: Sequence[Problem], *, allow_test_split: bool, what: str) -> None:
    """Refuses what training must not use without an opt-in; warns once for what was opted in.

    Args:
        suite: The built suite (its ``allow_public_only``, ``allow_unverified`` and
            ``allow_gameable`` are the suite's opt-ins).
        split: The split training reads (a name, not ``None``).
        problems: The split's problems.
        allow_test_split: Whether a test split was named for training on purpose.
        what: What is trained on, for the messages (``"training on Conductor-RG-v0 split 'train'"``).

    Raises:
        TestSplitError: For a test split without ``allow_test_split``.
        PublicOnlyError: For public-only, unverified or gameable problems without the suite's
            opt-in; the message names the option (both are ``SuiteError``).
    """
    if not isinstance(allow_test_split, bool):  # a string such as "no" must not opt in
        raise SuiteError(f"{ALLOW_TEST_SPLIT} must be true or false, got {allow_test_split!r}")
    _check_test_split(suite, split, allow_test_split, what)
    check_opt_ins(suite, problems, what=what)


def check_opt_ins(suite: TaskSuite, problems: Sequence[Problem], *, what: str) -> None:
    """The suite's opt-ins alone (public-only, unverified, gameable), for a wrapper handed a built env.

    Raises:
        PublicOnlyError: For such problems without the suite's opt-in (warns once with it).
    """
    check_training_use(suite, problems, what=what)
    _check_gameable(suite, problems, what)
