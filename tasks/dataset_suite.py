"""A base for suites whose problems are rows of a dataset (hub or local files)."""

from __future__ import annotations

import abc
from typing import Any, Mapping, Sequence

from conductor_env.suite import Problem, TaskSuite
from conductor_env.tasks.loading import DataFiles, load_rows
from conductor_env.tasks.registry import SuiteError

__all__ = ["DatasetSuite", "row_field"]


def row_field(row: Mapping[str, Any], *names: str, dataset: str = "dataset", index: int = 0) -> Any:
    """Returns the first of ``names`` present in a row, matching field names case-insensitively.

    Several hub copies of one benchmark differ only in capitalisation or naming (``problem``,
    ``Problem``, ``question``), so suites accept each.

    Raises:
        SuiteError: Naming the row, the wanted fields and the fields it has.
    """
    lowered = {str(key).lower(): key for key in row}
    for name in names:
        key = lowered.get(name.lower())
        if key is not None and row[key] is not None:
            return row[key]
    raise SuiteError(f"row {index} of {dataset} has no field {' / '.join(repr(n) for n in names)} (it has {sorted(map(str, row))}); is the file in the dataset's schema?")


class DatasetSuite(TaskSuite):
    """Problems built from the rows of one dataset split, loaded once per split.

    Subclasses set :attr:`dataset`, :attr:`config`, :attr:`hub_splits` and implement
    :meth:`make_problem`. The default split is loaded when the suite is built, so a missing
    file or an unreachable hub fails at ``gym.make`` time.

    Args:
        data_files: Local files instead of the hub: a path (serving the default split), a list
            of paths, or ``{split: path(s)}``.
        dataset: Another hub id with the same schema.
        config: Another hub configuration.
        revision: A hub revision to pin.
        limit: Keep only the first ``limit`` problems of each split (quick runs).
    """

    #: The hub id of the default dataset.
    dataset: str = ""
    #: Its hub configuration, or ``None``.
    config: str | None = None
    #: Our split name -> the hub's split name.
    hub_splits: Mapping[str, str] = {"test": "test"}
    #: Whether the hub dataset is gated (errors then explain authentication).
    gated: bool = False
    #: The gym id, quoted in error messages.
    env_id: str = ""

    def __init__(
        self,
        *,
        data_files: DataFiles | None = None,
        dataset: str | None = None,
        config: str | None = None,
        revision: str | None = None,
        limit: int | None = None,
    ) -> None:
        if limit is not None and limit < 1:
            raise SuiteError(f"limit must be a positive number of problems, got {limit!r}")
        self.data_files = data_files
        if dataset is not None:
            self.dataset = dataset
        if config is not None:
            self.config = config
        self.revision = revision
        self.limit = limit
        self._problems: dict[str, list[Problem]] = {}
        self.problems(self.default_split)

    def splits(self) -> list[str]:
        """Returns the split names this suite can serve."""
        if isinstance(self.data_files, Mapping):
            return sorted(self.data_files)
        if self.data_files is not None:
            return [self.default_split]
        return list(self.hub_splits)

    def problems(self, split: str | None = None) -> Sequence[Problem]:
        """Returns the problems of a split, loading its rows on first use.

        Raises:
            SuiteError: For an unknown split or rows that cannot be loaded.
        """
        split = split or self.default_split
        if split not in self._problems:
            if split not in self.splits():
                raise SuiteError(f"suite {self.name!r} has no split {split!r}; it has {self.splits()}")
            rows = self.load_split(split)
            if self.limit is not None:
                rows = rows[: self.limit]
            problems = [self.make_problem(row, index, split) for index, row in enumerate(rows)]
            if not problems:
                raise SuiteError(f"suite {self.name!r}: split {split!r} of {self.dataset} has no rows")
            self._check_unique(problems)
            self._problems[split] = problems
        return self._problems[split]

    def load_split(self, split: str) -> list[dict[str, Any]]:
        """Returns the raw rows of a split (local files or the hub)."""
        data_files = self.data_files
        if data_files is not None and not isinstance(data_files, Mapping):
            data_files = {self.default_split: data_files}
        return load_rows(
            self.dataset,
            config=self.config,
            split=split if data_files is not None else self.hub_splits[split],
            data_files=data_files,
            revision=self.revision,
            gated=self.gated,
            env_id=self.env_id or None,
        )

    @abc.abstractmethod
    def make_problem(self, row: Mapping[str, Any], index: int, split: str) -> Problem:
        """Turns one row into a problem.

        Raises:
            SuiteError: When the row is not in the dataset's schema.
        """

    def _check_unique(self, problems: list[Problem]) -> None:
        seen: set[str] = set()
        for problem in problems:
            if problem.id in seen:
                raise SuiteError(f"suite {self.name!r}: duplicate problem id {problem.id!r} in {self.dataset}")
            seen.add(problem.id)
