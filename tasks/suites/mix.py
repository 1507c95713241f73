"""The Conductor paper's training mix: MATH-500, MMLU, LiveCodeBench release_v1 (and RLPR).

PAPER.md: "960 problems, balanced from MATH500, MMLU, RLPR and LiveCodeBench release_v1
(60/20/20 split)". Two recipes read that sentence:

- ``recipe="default"`` (the package's, kept for compatibility): each source contributes
  ``size // len(sources)`` problems (all of them when it has fewer), drawn with a seed of its
  own, and each draw is split 60/20/20 into ``train``/``validation``/``test``, so every split
  holds every source in the same proportion. With three sources and ``size=960`` that is
  576/192/192 (192 per source in train); with RLPR, 4 x 144 = 576 in train.
- ``recipe="paper"``: the released training code's procedure and sizes
  (:mod:`~conductor_env.tasks.suites.mix_recipe`): each source is split 60/20/20 first (MATH-500
  all 500 problems: 300/100/100; LCB release_v1's 400: 240/80/80; MMLU: train from
  ``auxiliary_train``, validation and test from MMLU's own splits; RLPR: its train set), then
  the train split is balanced to the smallest source's train count, so 4 x 240 = 960 with the
  paper's four sources; validation and test keep every source's whole 20 % (not balanced).
  **Without RLPR files** it mixes three sources and warns (:class:`MixRecipeWarning`): the train
  split is then 3 x 240 = 720 with release_v1. MMLU given as one file (its ``test`` rows only)
  cannot take train from ``auxiliary_train``: its rows are then split 60/20/20 like the other
  sources, with a warning. ``size`` does not apply.

Within either recipe a problem belongs to one split only, so the ``test`` split never overlaps
``train``. Each split is shuffled with the seed. Problems keep their source's grading: ids are
``<source>/<source id>`` (``mmlu/auxiliary_train/<id>`` and ``mmlu/validation/<id>`` for MMLU
problems from those splits) and :meth:`MixSuite.verify` hands the answer to the source suite.
RLPR joins only when its data is given (``data_files={"rlpr": ...}``) or named in ``sources``.
LiveCodeBench rows without private tests (e.g. a public-only export of release_v1) are graded on
the examples printed in their statement; the ``train`` split refuses them unless
``allow_public_only=True`` (see :mod:`conductor_env.tasks.public_tests`).
"""

from __future__ import annotations

import hashlib
import random
import warnings
from dataclasses import replace
from typing import Any, Mapping, Sequence

from conductor_env.suite import Problem, Score, TaskSuite
from conductor_env.tasks.loading import DataFiles
from conductor_env.tasks.public_tests import check_training_use, resolve_opt_in
from conductor_env.tasks.registry import SuiteError
from conductor_env.tasks.suites import mix_recipe

__all__ = ["DEFAULT_SOURCES", "MixRecipeWarning", "MixSuite", "RECIPES", "SPLITS"]

SPLITS = ("train", "validation", "test")
DEFAULT_SOURCES = ("math500", "mmlu", "lcb")
RECIPES = ("default", "paper")
_KNOWN_SOURCES = ("math500", "mmlu", "lcb", "rlpr")
#: Problems per source before the split in the default recipe (``size`` is the total).
_DEFAULT_SIZE = 960

Pair = tuple[Problem, Problem]


class MixRecipeWarning(UserWarning):
    """``recipe="paper"`` runs with sources other than the paper's (no RLPR, MMLU without its splits)."""


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
            entry load from the hub. For ``recipe="paper"`` MMLU takes ``{"auxiliary_train": ...,
            "validation": ..., "test": ...}`` (one file: its rows are split like the others).
        sources: Which sources to mix (default MATH-500, MMLU, LCB, plus RLPR when its files are
            given).
        recipe: ``"default"`` (draw ``size`` problems, then split) or ``"paper"`` (the released
            code: split each source, then balance train to the smallest source); see the module
            notes for both, and for what ``"paper"`` does without RLPR.
        size: Total problems before the split in the default recipe (default 960); not accepted
            with ``recipe="paper"``, whose size follows from the sources.
        seed: Seed of the draws and shuffles (42, as the released runs).
        ratios: Train/validation/test fractions (``"paper"`` uses the validation and test
            fractions, train taking the rest, as the released code).
        sandbox: The sandbox for LiveCodeBench (``"auto"``, ``"docker"``, ``"local"`` or an
            instance).
        lcb_version: The LiveCodeBench release (``release_v1`` in the paper).
        allow_public_only: Allow the ``train`` split to hold LiveCodeBench rows without private
            tests, graded only on the examples printed in their statement (a lookup table of
            them passes); it then warns once. Without it such a ``train`` split raises
            :class:`~conductor_env.tasks.public_tests.PublicOnlyError`. ``validation`` and
            ``test`` serve them either way (their scores say ``test_set="public"``).

    Raises:
        SuiteError: For unknown sources or recipes, bad ratios or sizes, or when a source cannot
            load (the message names the source and the ``data_files`` entry to pass).

    Warns:
        MixRecipeWarning: With ``recipe="paper"``, when RLPR is not mixed or MMLU comes as one file.
    """

    name = "mix"
    default_split = "train"
    runs_code = True  # its LiveCodeBench source runs programs in the sandbox

    def __init__(
        self,
        *,
        data_files: Mapping[str, DataFiles] | None = None,
        sources: Sequence[str] | None = None,
        recipe: str = "default",
        size: int | None = None,
        seed: int = mix_recipe.PAPER_SEED,
        ratios: Sequence[float] = (0.6, 0.2, 0.2),
        sandbox: Any = "auto",
        lcb_version: str = "release_v1",
        allow_public_only: bool = False,
    ) -> None:
        self.allow_public_only = resolve_opt_in(allow_public_only)
        files = dict(data_files or {})
        chosen = list(sources) if sources is not None else list(DEFAULT_SOURCES) + (["rlpr"] if "rlpr" in files else [])
        self._check_options(chosen, files, recipe, size, ratios)
        self.sources = chosen
        self.recipe = recipe
        #: Problems drawn before the split (default recipe); ``None`` for the paper recipe.
        self.size = None if recipe == "paper" else _DEFAULT_SIZE if size is None else size
        self.seed = seed
        self.ratios = tuple(ratios)
        self._suites: dict[str, TaskSuite] = {}
        try:
            for name in chosen:
                self._suites[name] = self._load_source(name, files.get(name), sandbox, lcb_version, self.allow_public_only)
            self._splits = self._paper_draw() if recipe == "paper" else self._draw()
        except BaseException:
            self.close()
            raise
        self._origin = {p.id: original for split in self._splits.values() for p, original in split}

    @staticmethod
    def _check_options(chosen: list[str], files: dict[str, Any], recipe: str, size: int | None, ratios: Sequence[float]) -> None:
        unknown = sorted(set(chosen) - set(_KNOWN_SOURCES)) + sorted(set(files) - set(_KNOWN_SOURCES))
        if unknown or not chosen:
            raise SuiteError(f"mix sources must be among {list(_KNOWN_SOURCES)}; got {unknown or chosen}")
        if len(set(chosen)) != len(chosen):
            raise SuiteError(f"mix sources must not repeat; got {chosen}")
        if recipe not in RECIPES:
            raise SuiteError(f"mix recipe must be one of {list(RECIPES)}, got {recipe!r}")
        if len(ratios) != 3 or any(r < 0 for r in ratios) or abs(sum(ratios) - 1.0) > 1e-9:
            raise SuiteError(f"ratios must be three non-negative fractions summing to 1, got {list(ratios)}")
        if recipe == "paper" and size is not None:
            raise SuiteError("size does not apply to recipe='paper': its train split is balanced to the smallest source")
        if size is not None and size < len(chosen):
            raise SuiteError(f"size must be at least one problem per source ({len(chosen)}), got {size}")

    @staticmethod
    def _load_source(name: str, files: DataFiles | None, sandbox: Any, lcb_version: str, allow_public_only: bool) -> TaskSuite:
        try:
            return _build_source(name, files, sandbox, lcb_version, allow_public_only)
        except SuiteError as error:
            raise SuiteError(
                f'Conductor-Mix-v0 source {name!r} cannot load: {error} For the mix, give each source its files: suite_options={{"data_files": {{"{name}": "path/to/{name}.jsonl", ...}}}}.'
            ) from error

    def _draw(self) -> dict[str, list[Pair]]:
        per_source = (self.size or _DEFAULT_SIZE) // len(self.sources)
        splits: dict[str, list[Pair]] = {split: [] for split in SPLITS}
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

    def _paper_draw(self) -> dict[str, list[Pair]]:
        """The released recipe: split each source, balance train, concatenate and shuffle."""
        order = [name for name in mix_recipe.PAPER_SOURCE_ORDER if name in self.sources]
        parts = {name: self._paper_source_split(name) for name in order}
        keep = mix_recipe.balanced_train({name: len(part["train"]) for name, part in parts.items()}, seed=self.seed)
        splits: dict[str, list[Pair]] = {}
        for split in SPLITS:
            joined: list[Pair] = []
            for name in order:
                part = parts[name][split]
                joined.extend([part[i] for i in keep[name]] if split == "train" else part)
            splits[split] = [joined[i] for i in mix_recipe.mixed_order(len(joined), split, seed=self.seed)]
        if "rlpr" not in order:
            kept = len(next(iter(keep.values()), []))
            warnings.warn(
                f"Conductor-Mix-v0 recipe='paper' without RLPR mixes {len(order)} sources ({', '.join(order)}): "
                f"the train split is {len(order)} x {kept} = {len(order) * kept} problems, not the paper's 4 x 240 = 960; "
                'pass suite_options={"data_files": {"rlpr": "path/to/rlpr.parquet"}} (openbmb/RLPR-Train-Dataset) for the four sources',
                MixRecipeWarning,
                stacklevel=4,
            )
        return splits

    def _paper_source_split(self, name: str) -> dict[str, list[Pair]]:
        """One source's 60/20/20 split as the released code makes it."""
        suite = self._suites[name]
        valid_ratio, test_ratio = self.ratios[1], self.ratios[2]
        if name == "mmlu" and set(mix_recipe.MMLU_SPLITS.values()) <= set(suite.splits()):
            rows = {split: list(suite.problems(mmlu_split)) for split, mmlu_split in mix_recipe.MMLU_SPLITS.items()}
            sizes = {split: len(problems) for split, problems in rows.items()}
            picked = mix_recipe.mmlu_released_split(sizes, seed=self.seed, valid_ratio=valid_ratio, test_ratio=test_ratio)
            return {split: [(self._wrap(name, rows[split][i], mix_recipe.MMLU_SPLITS[split]), rows[split][i]) for i in picked[split]] for split in SPLITS}
        if name == "mmlu":
            warnings.warn(
                "Conductor-Mix-v0 recipe='paper': MMLU has no auxiliary_train and validation files, so its rows are split "
                "60/20/20 like the other sources; the released code takes MMLU train from auxiliary_train "
                '(pass "mmlu": {"auxiliary_train": ..., "validation": ..., "test": ...})',
                MixRecipeWarning,
                stacklevel=5,
            )
        pool = list(suite.problems(None))
        picked = mix_recipe.released_split(len(pool), seed=self.seed, valid_ratio=valid_ratio, test_ratio=test_ratio)
        return {split: [(self._wrap(name, pool[i]), pool[i]) for i in picked[split]] for split in SPLITS}

    @staticmethod
    def _wrap(source: str, problem: Problem, split: str | None = None) -> Problem:
        within = f"{split}/" if split and split != "test" else ""
        return replace(
            problem,
            id=f"{source}/{within}{problem.id}",
            metadata={**problem.metadata, "source": source, "source_id": problem.id, **({"source_split": split} if split else {})},
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
