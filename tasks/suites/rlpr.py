"""RLPR (``openbmb/RLPR-Train-Dataset``): general-domain reasoning with short reference answers.

Graded as the Conductor paper's released code grades it: the answer is the last
``<answer>...</answer>`` (here also the last ``\\boxed{}`` when there is no tag), compared with
the ground truth after collapsing whitespace, case-insensitively, then numerically: within a
relative tolerance of 1e-3 of the reference at every magnitude (an absolute 1e-12 only where the
reference is exactly zero), so ``0`` or ``1e-30`` is not ``6.626e-34``. Numbers are read with
``%`` as hundredths, ``$`` and thousands separators dropped, "million"/"thousand"/"billion"
expanded, a trailing unit ignored (``30 J``, ``5\\text{ cm}``), a plain fraction (``3/4``), and
powers of ten (``6.626e-34``, ``6.626 \\times 10^{-34}``, ``6.626×10^-34``, ``6.626*10**-34``).
Text after a number that is not a unit (``5-6``, ``2^10``), mantissas over 64 characters,
exponents over four digits (``1e999999``) and values that are not finite are not read as numbers,
so they match only as text. (This suite once compared references up to 1 with an absolute
1e-6, which paid ``0`` for every small physical constant.) Rows whose ground truth is longer than
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
import math
import re
from typing import Any, Mapping

from conductor_env.suite import Problem, Score
from conductor_env.tasks.dataset_suite import DatasetSuite, row_field
from conductor_env.tasks.extract import extract_boxed, strip_think
from conductor_env.tasks.loading import DataFiles
from conductor_env.tasks.registry import SuiteError

__all__ = ["RLPRSuite", "extract_tagged_answer", "numbers_match", "rlpr_match"]

_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)
_ANSWER_CLOSE = re.compile(r"</answer>", re.IGNORECASE)
# A number is read in steps, each a pattern that cannot backtrack over the text more than once
# (as one pattern, "\d+\.?\d*" next to a run that also takes digits and spaces backtracks in
# cubic time when the match fails): the mantissa, then a power of ten or a denominator, then a
# unit. Numbers are compared as floats, so no step builds a big integer: "1e999999" and
# "10^{99999999}" are refused by the exponent's length, never computed.
_MANTISSA = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)")
# 6.626e-34, 6.626 \times 10^{-34}, 6.626×10^-34, 6.626*10**-34, 6.626 x 10^(-34), 6.626·10^-34.
_E_EXPONENT = re.compile(r"e([+-]?\d+)")
_TIMES_TEN = re.compile(
    r"[ \t]*(?:\\times|\\cdot|×|·|\*|x)[ \t]*10[ \t]*(?:\^|\*\*)[ \t]*"
    r"(?:\{[ \t]*([+-]?\d+)[ \t]*\}|\([ \t]*([+-]?\d+)[ \t]*\)|([+-]?\d+))"
)
_BARE_TEN = re.compile(  # 10^{-34}, -10^3, 10**5: a power of ten alone
    r"([+-]?)10[ \t]*(?:\^|\*\*)[ \t]*(?:\{[ \t]*([+-]?\d+)[ \t]*\}|\([ \t]*([+-]?\d+)[ \t]*\)|([+-]?\d+))"
)
_DENOMINATOR = re.compile(r"[ \t]*/[ \t]*(\d+(?:\.\d*)?|\.\d+)")
# A unit starts with a letter (or µ, °, Ω); digits, powers and slashes may follow (m/s^2, cm3).
_UNIT = re.compile(r"[a-zµμ°ωå][a-zµμ°ωå/^.*·\s\d-]*")
_LATEX_WRAPPER = re.compile(r"\\(?:text|textrm|mathrm|mbox|rm)[ \t]*\{([^{}]*)\}")
_LATEX_SPACE = re.compile(r"\\[,;:! ]|~")
_DEGREES = re.compile(r"\^[ \t]*(?:\\circ|\{[ \t]*\\circ[ \t]*\})")
#: Longest mantissa and exponent read (digits and sign included): the ground truths have at
#: most 30 characters, and a longer digit string is no honest answer's.
MAX_MANTISSA_CHARS = 64
MAX_EXPONENT_DIGITS = 4
#: Relative tolerance of the numeric comparison, at every magnitude.
RELATIVE_TOLERANCE = 1e-3
#: Absolute tolerance used only when the reference is exactly zero.
ZERO_TOLERANCE = 1e-12
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


def _normalize(text: str) -> str:
    """Lower-cases ``text`` and drops what never changes a number.

    ``$``, thousands separators (``,`` and LaTeX's ``{,}``) and LaTeX spaces (``\\,``, ``~``) go,
    ``\\text{cm}``-style wrappers leave their text, ``^\\circ`` becomes ``°`` and the Unicode minus
    sign (U+2212) an ASCII hyphen.
    """
    cleaned = text.strip().lower().replace("{,}", "").replace("$", "").replace(",", "").replace("\u2212", "-")
    cleaned = _LATEX_SPACE.sub(" ", cleaned)
    cleaned = _LATEX_WRAPPER.sub(r" \1", cleaned)
    return _DEGREES.sub("°", cleaned).strip()


def _number(text: str) -> float | None:
    """Reads ``text`` as one finite number, or ``None``.

    Read: ``$1,200``, ``12%`` (0.12), ``3.5 million``, ``30 J``, ``3/4``, and powers of ten
    (``6.626e-34``, ``6.626 \\times 10^{-34}``, ``6.626×10^-34``, ``6.626*10**-34``,
    ``10^{-3}``). Not read (so compared as text only): anything after the number that is not a
    unit (``5-6``, ``2^10``, ``60 61``), mantissas over :data:`MAX_MANTISSA_CHARS` characters,
    exponents over :data:`MAX_EXPONENT_DIGITS` digits, and values that are not finite.
    """
    cleaned = _normalize(text)
    scale = 1.0
    for word, factor in _SCALES.items():
        if cleaned.endswith(word):
            cleaned, scale = cleaned[: -len(word)].strip(), factor
    if cleaned.endswith("%"):
        cleaned, scale = cleaned[:-1].strip(), scale / 100
    bare = _BARE_TEN.match(cleaned)
    mantissa = _MANTISSA.match(cleaned) if bare is None else None
    if bare is None and (mantissa is None or len(mantissa.group()) > MAX_MANTISSA_CHARS):
        return None
    digits = f"{bare.group(1)}1" if bare is not None else mantissa.group()
    end, exponent, denominator = (bare or mantissa).end(), "0", "1"
    power = bare or _E_EXPONENT.match(cleaned, end) or _TIMES_TEN.match(cleaned, end)
    if power is not None:
        exponent, end = next(group for group in power.groups()[-3:] if group), power.end()
        if len(exponent.lstrip("+-")) > MAX_EXPONENT_DIGITS:
            return None
    else:
        fraction = _DENOMINATOR.match(cleaned, end)
        if fraction is not None:
            denominator, end = fraction.group(1), fraction.end()
            if len(denominator) > MAX_MANTISSA_CHARS:
                return None
    rest = cleaned[end:].strip()
    if rest and _UNIT.fullmatch(rest) is None:
        return None
    try:
        value = float(f"{digits}e{exponent}") / float(denominator) * scale
    except (ValueError, ZeroDivisionError, OverflowError):
        return None
    return value if math.isfinite(value) else None


def numbers_match(prediction: float, reference: float) -> bool:
    """Whether ``prediction`` is within :data:`RELATIVE_TOLERANCE` of ``reference``, relative to
    the reference (within :data:`ZERO_TOLERANCE` of it when the reference is exactly zero)."""
    if reference == 0:
        return abs(prediction) <= ZERO_TOLERANCE
    return abs(prediction - reference) <= RELATIVE_TOLERANCE * abs(reference)


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
    return numbers_match(pred_value, ref_value)


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
