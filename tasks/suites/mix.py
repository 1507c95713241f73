"""The Conductor paper's training mix: MATH-500, MMLU, LiveCodeBench release_v1 (and RLPR).

PAPER.md: "960 problems, balanced from MATH500, MMLU, RLPR and LiveCodeBench release_v1
(60/20/20 split)". Each source contributes ``size // len(sources)`` problems (all of them when
it has fewer), drawn with a seed of its own; each source's draw is split 60/20/20 into
``train``/``validation``/``test``, so every split holds every source in the same proportion,
and each split is shuffled with the seed. Problems keep their source's grading: ids are
``<source>/<source id>`` and :meth:`MixSuite.verify` hands the answer to the source suite.
RLPR joins only when its data is given (``data_files={"rlpr": ...}``) or named in ``sources``.
LiveCodeBench rows without private tests (e.g. a public-only export of release_v1) are graded on
the examples printed in their statement; the ``train`` split refuses them unless
``allow_public_only=True`` (see :mod:`conductor_env.tasks.public_tests`).
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import replace
from typing import Any, Mapping, Sequence

from conductor_env.suite import Problem, Score, TaskSuite
from conductor_env.tasks.loading import DataFiles
from conductor_env.tasks.public_tests import check_training_use, resolve_opt_in
from conductor_env.tasks.registry import SuiteError

__all__ = ["DEFAULT_SOURCES", "MixSuite", "SPLITS"]

SPLITS = ("train", "validation", "test")
DEFAULT_SOURCES = ("math500", "mmlu", "lcb")
_KNOWN_SOURCES = ("math500", "mmlu", "lcb", "rlpr")


def _build_source(name: str, data_files: DataFiles | None, sandbox: Any, lcb_version: str, allow_public_only: bool) -> TaskSuite:
    if name == "math500":
        from conductor_env.tasks.suites.math_suites import Math500Suite

        return Math500Suite(data_files=data_files)
    if name == "mmlu":
        from conductor_env.tasks.suites.choice import MMLUSuite

        return MMLUSuite(data_files=data_files)
    if name == "rlpr":
        from conductor_env.tasks.suites.rlpr import RLPRSuite

        return RLPRSuite(data_files=data_files)
    from conductor_env.tasks.suites.livecodebench import LiveCodeBenchSuite

    return LiveCodeBenchSuite(version=lcb_version, data_files=data_files, sandbox=sandbox, allow_public_only=allow_public_only)


def _seeded(seed: int, label: str) -> random.Random:
    digest = hashlib.sha256(f"{seed}:{label}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


class MixSuite(TaskSuite):
    """``Conductor-Mix-v0``: the balanced training mix, split 60/20/20 by a fixed seed.

    Args:
        data_files: Local files per source, e.g. ``{"math500": "math500.jsonl", "mmlu":
            "mmlu.jsonl", "lcb": "lcb_v1.jsonl", "rlpr": "rlpr.jsonl"}``; sources without an
            entry load from the hub.
        sources: Which sources to mix (default MATH-500, MMLU, LCB, plus RLPR when its files are
            given).
        size: Total problems before the split (960 in the paper).
        seed: Seed of the draws and shuffles.
        ratios: Train/validation/test fractions.
        sandbox: The sandbox for LiveCodeBench (``"auto"``, ``"docker"``, ``"local"`` or an
            instance).
        lcb_version: The LiveCodeBench release (``release_v1`` in the paper).
        allow_public_only: Allow the ``train`` split to hold LiveCodeBench rows without private
            tests, graded only on the examples printed in their statement (a lookup table of
            them passes); it then warns once. Without it such a ``train`` split raises
            :class:`~conductor_env.tasks.public_tests.PublicOnlyError`. ``validation`` and
            ``test`` serve them either way (their scores say ``test_set="public"``).

    Raises:
        SuiteError: For unknown sources or bad ratios, or when a source cannot load (the message
            names the source and the ``data_files`` entry to pass).
    """

    name = "mix"
    default_split = "train"

    def __init__(
        self,
        *,
        data_files: Mapping[str, DataFiles] | None = None,
        sources: Sequence[str] | None = None,
        size: int = 960,
        seed: int = 42,
        ratios: Sequence[float] = (0.6, 0.2, 0.2),
        sandbox: Any = "auto",
        lcb_version: str = "release_v1",
        allow_public_only: bool = False,
    ) -> None:
        self.allow_public_only = resolve_opt_in(allow_public_only)
        files = dict(data_files or {})
        chosen = list(sources) if sources is not None else list(DEFAULT_SOURCES) + (["rlpr"] if "rlpr" in files else [])
        unknown = sorted(set(chosen) - set(_KNOWN_SOURCES)) + sorted(set(files) - set(_KNOWN_SOURCES))
        if unknown or not chosen:
            raise SuiteError(f"mix sources must be among {list(_KNOWN_SOURCES)}; got {unknown or chosen}")
        if len(ratios) != 3 or any(r < 0 for r in ratios) or abs(sum(ratios) - 1.0) > 1e-9:
            raise SuiteError(f"ratios must be three non-negative fractions summing to 1, got {list(ratios)}")
        if size < len(chosen):
            raise SuiteError(f"size must be at least one problem per source ({len(chosen)}), got {size}")
        self.sources = chosen
        self.size = size
        self.seed = seed
        self.ratios = tuple(ratios)
        self._suites: dict[str, TaskSuite] = {}
        try:
            for name in chosen:
                self._suites[name] = self._load_source(name, files.get(name), sandbox, lcb_version, self.allow_public_only)
            self._splits = self._draw()
        except BaseException:
            self.close()
            raise
        self._origin = {p.id: original for split in self._splits.values() for p, original in split}

    @staticmethod
    def _load_source(name: str, files: DataFiles | None, sandbox: Any, lcb_version: str, allow_public_only: bool) -> TaskSuite:
        try:
            return _build_source(name, files, sandbox, lcb_version, allow_public_only)
        except SuiteError as error:
            raise SuiteError(
                f"Conductor-Mix-v0 source {name!r} cannot load: {error} For the mix, give each source its files: "
                f'suite_options={{"data_files": {{"{name}": "path/to/{name}.jsonl", ...}}}}.'
            ) from error

    def _draw(self) -> dict[str, list[tuple[Problem, Problem]]]:
        per_source = self.size // len(self.sources)
        splits: dict[str, list[tuple[Problem, Problem]]] = {split: [] for split in SPLITS}
        for name in self.sources:
            pool = list(self._suites[name].problems(None))
            drawn = _seeded(self.seed, name).sample(pool, min(per_source, len(pool)))
            n_train = round(len(drawn) * self.ratios[0])
            n_validation = round(len(drawn) * self.ratios[1])
            parts = (drawn[:n_train], drawn[n_train : n_train + n_validation], drawn[n_train + n_validation :])
            for split, part in zip(SPLITS, parts):
                splits[split].extend((self._wrap(name, problem), problem) for problem in part)
        for split in SPLITS:
            _seeded(self.seed, f"shuffle/{split}").shuffle(splits[split])
        return splits

    @staticmethod
    def _wrap(source: str, problem: Problem) -> Problem:
        return replace(
            problem,
            id=f"{source}/{problem.id}",
            metadata={**problem.metadata, "source": source, "source_id": problem.id},
        )

    def problems(self, split: str | None = None) -> Sequence[Problem]:
        """Returns a split of the mix (``train``, ``validation`` or ``test``), in shuffled order.

        Raises:
            SuiteError: For another split name.
            PublicOnlyError: For ``train`` when it holds rows graded on public tests only and
                the suite was built without ``allow_public_only=True``.
        """
        split = split or self.default_split
        if split not in self._splits:
            raise SuiteError(f"the mix has splits {list(SPLITS)}, not {split!r}")
        problems = [problem for problem, _ in self._splits[split]]
        if split == "train":
            check_training_use(self, problems, what="Conductor-Mix-v0 split 'train'")
        return problems

    def source_of(self, problem: Problem) -> tuple[TaskSuite, Problem]:
        """Returns the source suite of a mix problem and the problem as that suite knows it.

        Raises:
            SuiteError: For a problem that is not from this mix.
        """
        original = self._origin.get(problem.id)
        if original is None:
            raise SuiteError(f"problem {problem.id!r} is not part of this mix")
        return self._suites[problem.metadata["source"]], original

    def verify(self, problem: Problem, answer: str) -> Score:
        """Grades with the source suite's verifier."""
        suite, original = self.source_of(problem)
        return suite.verify(original, answer)

    async def averify(self, problem: Problem, answer: str) -> Score:
        suite, original = self.source_of(problem)
        return await suite.averify(original, answer)

    def reference_response(self, problem: Problem) -> str | None:
        suite, original = self.source_of(problem)
        return suite.reference_response(original)

    def wrong_response(self, problem: Problem) -> str:
        suite, original = self.source_of(problem)
        return suite.wrong_response(original)

    def close(self) -> None:
        """Closes every source suite (LiveCodeBench's sandbox among them)."""
        for suite in getattr(self, "_suites", {}).values():
            suite.close()
