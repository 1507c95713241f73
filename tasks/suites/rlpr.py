"""RLPR (``openbmb/RLPR-Train-Dataset``): general-domain reasoning with short reference answers.

Graded as the Conductor paper's released code grades it: the answer is the last
``<answer>...</answer>`` (here also the last ``\\boxed{}`` when there is no tag), compared with
the ground truth after collapsing whitespace, case-insensitively, then numerically (a relative
tolerance of 1e-3, ``%`` read as hundredths, ``$`` and thousands separators dropped, a trailing
unit ignored, "million"/"thousand"/"billion" expanded). Rows whose ground truth is longer than
30 characters are skipped, as there; so are rows with an empty ground truth, which the released
code keeps (no answer can match them), so where the data has such rows the released split's
indices differ from ``Conductor-Mix-v0`` ``recipe="paper"``'s.

RLPR is the fourth source of the paper's training mix: ``Conductor-Mix-v0`` mixes it when its
files are given (``suite_options={"data_files": {"rlpr": "path/to/train.parquet", ...}}``, the
hub dataset's parquet file or a JSON Lines export in its schema). Its one split, ``train``, is
split 60/20/20 by the mix.
"""

from __future__ import annotations

import json
import re
from typing import Any, Mapping

from conductor_env.suite import Problem, Score
from conductor_env.tasks.dataset_suite import DatasetSuite, row_field
from conductor_env.tasks.extract import extract_boxed, strip_think
from conductor_env.tasks.loading import DataFiles
from conductor_env.tasks.registry import SuiteError

__all__ = ["RLPRSuite", "extract_tagged_answer", "rlpr_match"]

_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)
_ANSWER_CLOSE = re.compile(r"</answer>", re.IGNORECASE)
# A number, then only unit characters. Matched in two steps: as one pattern ("\d+\.?\d*" next to
# a run that also takes digits and spaces) it backtracks in cubic time when the match fails.
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?")
_UNIT = re.compile(r"[a-zµ°/^.*·\s\d-]*")
_INSTRUCTION = (
    "\n\nThink step by step, then give only the final result inside <answer></answer> tags, e.g. "
    "<answer>1.99</answer>. Use decimals for percentages (0.1033 for 10.33%), plain numbers for money "
    "(5200 for $5,200), standard notation for formulas (F=qvB), and 2-4 significant figures."
)
_SCALES = {"thousand": 1e3, "million": 1e6, "billion": 1e9}


def extract_tagged_answer(text: str) -> str | None:
    """Returns the last ``<answer>...</answer>`` of a response, else its last ``\\boxed{}``."""
    cleaned = strip_think(text or "")
    last = None
    for last in _ANSWER_CLOSE.finditer(cleaned):
        pass
    # An <answer> after the last </answer> closes nowhere: searching past it would rescan the
    # rest of the text from each such tag.
    tagged = _ANSWER_TAG.findall(cleaned, 0, last.end()) if last is not None else []
    if tagged:
        return tagged[-1].strip()
    return extract_boxed(text or "")


def _number(text: str) -> float | None:
    """Reads ``text`` as one number: ``$1,200``, ``12%`` (0.12), ``3.5 million``, ``30 J``."""
    cleaned = text.strip().lower().replace("$", "").replace(",", "")
    scale = 1.0
    for word, factor in _SCALES.items():
        if cleaned.endswith(word):
            cleaned, scale = cleaned[: -len(word)].strip(), factor
    if cleaned.endswith("%"):
        cleaned, scale = cleaned[:-1].strip(), scale / 100
    number = _NUMBER.match(cleaned)
    if number is None or _UNIT.fullmatch(cleaned, number.end()) is None:
        return None
    return float(number.group()) * scale


def rlpr_match(prediction: str, reference: str) -> bool:
    """Whether a predicted answer matches an RLPR ground truth (see the module notes)."""
    pred = re.sub(r"\s+", " ", prediction).strip()
    ref = re.sub(r"\s+", " ", reference).strip()
    if not pred or not ref:
        return False
    if pred.lower() == ref.lower():
        return True
    pred_value, ref_value = _number(pred), _number(ref)
    if pred_value is None or ref_value is None:
        return False
    tolerance = abs(ref_value) * 1e-3 if abs(ref_value) > 1 else 1e-6
    return abs(pred_value - ref_value) <= tolerance


class RLPRSuite(DatasetSuite):
    """RLPR training questions (split ``train``; domain ``reasoning``).

    Rows: ``prompt`` (chat messages, or their JSON), ``ability``, ``reward_model`` with
    ``ground_truth``; ids come from ``extra_info.index`` when present, else the row index.

    Args:
        data_files: Local files in that schema instead of the hub.
        dataset: Another hub copy with the same schema.
        revision: A hub revision to pin.
        limit: Keep the first ``limit`` problems (after the answer-length filter).
        max_answer_chars: Skip rows with longer ground truths (30, as the released code).
    """

    name = "rlpr"
    dataset = "openbmb/RLPR-Train-Dataset"
    hub_splits = {"train": "train"}
    default_split = "train"
    blocking_verify = False  # string and number comparisons only

    def __init__(
        self,
        *,
        data_files: DataFiles | None = None,
        dataset: str | None = None,
        revision: str | None = None,
        limit: int | None = None,
        max_answer_chars: int = 30,
    ) -> None:
        self.max_answer_chars = max_answer_chars
        super().__init__(data_files=data_files, dataset=dataset, revision=revision, limit=limit)

    def load_split(self, split: str) -> list[dict[str, Any]]:
        rows = []
        for index, row in enumerate(super().load_split(split)):
            truth = str(self._reward_model(row, index).get("ground_truth") or "")
            if truth.strip() and len(truth) <= self.max_answer_chars:
                rows.append(dict(row, _index=index))
        return rows

    def _reward_model(self, row: Mapping[str, Any], index: int) -> Mapping[str, Any]:
        reward_model = row_field(row, "reward_model", dataset=self.dataset, index=index)
        if isinstance(reward_model, str):
            reward_model = json.loads(reward_model)
        if not isinstance(reward_model, Mapping):
            raise SuiteError(f"row {index} of {self.dataset}: reward_model must be an object")
        return reward_model

    def make_problem(self, row: Mapping[str, Any], index: int, split: str) -> Problem:
        position = row.get("_index", index)
        messages = row_field(row, "prompt", dataset=self.dataset, index=position)
        if isinstance(messages, str):
            try:
                messages = json.loads(messages)
            except json.JSONDecodeError:
                messages = [{"role": "user", "content": messages}]
        question = next((m.get("content", "") for m in messages if m.get("role") == "user"), "")
        if not question:
            raise SuiteError(f"row {position} of {self.dataset}: the prompt has no user message")
        ability = str(row.get("ability") or "general")
        extra = row.get("extra_info") if isinstance(row.get("extra_info"), Mapping) else {}
        return Problem(
            id=str(extra.get("index", position)),
            question=f"Subject: {ability}\n\n{question.strip()}{_INSTRUCTION}",
            domain="reasoning",
            answer=str(self._reward_model(row, position)["ground_truth"]).strip(),
            metadata={"ability": ability, "source": "rlpr"},
        )

    def verify(self, problem: Problem, answer: str) -> Score:
        """Compares the tagged answer with the ground truth (see :func:`rlpr_match`)."""
        extracted = extract_tagged_answer(answer)
        if extracted is None:
            return Score(False, 0.0, "no <answer> tag")
        if rlpr_match(extracted, str(problem.answer)):
            return Score(True, 1.0, "match")
        return Score(False, 0.0, f"expected {problem.answer}, got {extracted[:80]}")

    def reference_response(self, problem: Problem) -> str | None:
        return f"Working it through briefly.\n<answer>{problem.answer}</answer>"

    def wrong_response(self, problem: Problem) -> str:
        return "I could not pin it down.\n<answer>unknown</answer>"
