"""Units and base subscripts in LaTeX answers: the host-side pre-check math-verify needs.

math-verify drops units (``\\text{ cm}``, ``^\\circ``, ``\\$``, a trailing ``cm``) and base
subscripts (``1011_2``) before comparing, so ``5\\text{ m}`` equals ``5\\text{ cm}`` and
``1011_3`` equals ``1011_2`` there. :func:`notation_mismatch` refuses those first: when the gold
answer has a unit, an answer that names a different one is different, and when the gold answer is
a numeral with a base subscript, an answer naming another base is different. An answer without a
unit or base (``5`` for ``5\\text{ cm}``, ``1011`` for ``1011_2``) is left to math-verify, as
MATH graders accept it.

Both answers are read in a normal form first (:func:`~conductor_env.tasks.latex_normal_form.normalise`),
so a spelling cannot hide a unit or base: every text-like command becomes ``\\text{...}``, nested
braces, spacing commands and spaces before a subscript are dropped, in linear time.

Spellings of one unit are the same unit (``cm``, ``centimeters``; ``^\\circ`` and ``degrees``;
``inches^2`` and ``square inches``); a text group with letters (of any script) that is not a plain
unit (``\\text{ m2}``, ``\\text{ (m)}``, ``\\text{ м}``) names a unit no gold answer has. Units are
read from text groups after a number, ``^\\circ``, ``\\$`` and, in an answer to a gold answer with a
unit, from letters outside commands (``5 kg``, ``5km\\text{ }``, ``5\\mathrm{}{m}``), after the last
``=`` or ``\\approx`` when a number follows it (``x = 5 cm``). Every subscript of an answer to a gold
answer with a base must name that base, and ``base 3``-like words count.
"""

from __future__ import annotations

import re

from conductor_env.tasks.latex_normal_form import normalise

__all__ = ["normalise", "notation_mismatch"]

# ------------------------------------------------------------------------------ units

# Every pattern below is linear: no two parts of one pattern can take the same characters.
_TEXT_GROUP = re.compile(r"\\text\{([^{}]*)\}(\^\s*(?:\{\s*\d\s*\}|\d))?")
_DEGREES = re.compile(r"\^\s*(?:\\circ|\{\s*\\circ\s*\})|°")
_DOLLAR = re.compile(r"\\\$")
_BLANK_TEXT = re.compile(r"\\text\{\s*\}")
#: Letters outside commands: ``km`` in ``5km``, not ``times`` in ``\\times``.
_FREE_WORD = re.compile(r"(?<![\\A-Za-z])[^\W\d_]+")
_TRAILING_POWER = re.compile(r"\^\s*(?:\{\s*\d\s*\}|\d)$")
_UNIT_WORDS = re.compile(r"[a-z][a-z.]*")
_POWER_DIGIT = re.compile(r"\d")
_DIGIT = re.compile(r"\d")
_POWER_WORDS = {"square": 2, "sq": 2, "cubic": 3, "cu": 3}
#: Spellings of one unit (after a plural ``s`` is dropped from words of four letters or more).
_UNIT_ALIASES = {
    "centimeter": "cm", "centimetre": "cm", "meter": "m", "metre": "m", "millimeter": "mm", "millimetre": "mm",
    "kilometer": "km", "kilometre": "km", "inche": "inch", "in": "inch", "foot": "ft", "feet": "ft", "yard": "yd",
    "mile": "mi", "degree": "deg", "second": "s", "sec": "s", "minute": "min", "hour": "h", "hr": "h",
    "gram": "g", "kilogram": "kg", "liter": "l", "litre": "l", "cent": "cent", "dollar": "dollar",
}  # fmt: skip


def _unit_name(content: str, power: str | None, *, strict: bool) -> str | None:
    """A canonical unit from a text group's content and its ``^2``.

    Text without letters is not a unit (``None``). Text with letters that is not plain words
    (``m2``, ``(m)``, ``m, really``) is ``None`` when ``strict`` is false (the gold answer's side:
    not a unit to check) and itself, quoted, when true (the answer's: a unit no gold answer names).
    """
    words = content.lower().split()
    if not words or not any(char.isalpha() for char in content):
        return None
    if any(_UNIT_WORDS.fullmatch(word) is None for word in words):
        return repr(" ".join(words)) if strict else None
    exponent = int(_POWER_DIGIT.search(power).group()) if power else 1  # type: ignore[union-attr]  # power holds a digit
    if len(words) > 1 and words[0].rstrip(".") in _POWER_WORDS:
        exponent = exponent * _POWER_WORDS[words.pop(0).rstrip(".")]
    names = []
    for word in words:
        word = word.strip(".")
        if len(word) >= 4 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        names.append(_UNIT_ALIASES.get(word, word))
    name = " ".join(names)
    return name if exponent == 1 else f"{name}^{exponent}"


def _trailing_unit(remainder: str) -> tuple[str, int] | None:
    """The unit that words ending ``remainder`` after a number or ``}`` name (``5 kg``, ``5 cm^2``)
    and where they start, or ``None``; read from the end in linear time."""
    end = len(remainder.rstrip())
    power = _TRAILING_POWER.search(remainder, 0, end)
    if power is not None:
        end = len(remainder[: power.start()].rstrip())
    start = end
    while start > 0 and (remainder[start - 1].isalpha() or remainder[start - 1] in ". "):
        start -= 1
    segment = remainder[start:end]
    words = segment.strip(". ")
    start += len(segment) - len(segment.lstrip(". "))
    before = remainder[:start].rstrip()
    if not words or not before or before[-1] not in "0123456789}":
        return None
    name = _unit_name(words, power.group() if power else None, strict=True)
    return None if name is None else (name, start)


def _units(normal: str, *, answer: bool) -> list[str]:
    """The units a normalised answer names, sorted: text groups of words, ``^\\circ`` (``deg``),
    ``\\$`` (``dollar``) and, for an ``answer``, words outside text groups and commands (after
    its last ``=``, where math-verify reads the value); none unless a digit remains outside them
    (a boxed word, ``\\text{Evelyn}``, is an answer, not a unit)."""
    normal = _BLANK_TEXT.sub(" ", normal)
    units: list[str] = []
    rest: list[str] = []
    position = 0
    for group in _TEXT_GROUP.finditer(normal):
        name = _unit_name(group.group(1), group.group(2), strict=answer)
        if name is not None:
            units.append(name)
            rest.append(normal[position : group.start()])
            position = group.end()
    rest.append(normal[position:])
    remainder = " ".join(rest)
    units += ["deg"] * len(_DEGREES.findall(remainder)) + ["dollar"] * len(_DOLLAR.findall(remainder))
    remainder = _DEGREES.sub(" ", remainder)
    if answer:
        # Words are read after the last = or \\approx when a number follows it, where math-verify
        # reads the value (x = 5 cm), else everywhere.
        approx = remainder.rfind("\\approx")
        value = remainder[max(remainder.rfind("=") + 1, approx + len("\\approx") if approx >= 0 else 0) :]
        value = (value if _DIGIT.search(value) else remainder).replace("{", " ").replace("}", " ")
        if (trailing := _trailing_unit(value)) is not None:
            units.append(trailing[0])
            value = value[: trailing[1]]
        words = _FREE_WORD.findall(value)  # 5km\text{ } or 5\mathrm{}{m}\times{}: letters math-verify drops
        if words and (name := _unit_name(" ".join(words), None, strict=True)) is not None:
            units.append(name)
    return sorted(units) if _DIGIT.search(remainder) else []


# ------------------------------------------------------------------------------ bases

# A numeral (digits, capital letters) with a base subscript, the whole gold answer: 1011_2,
# 4210_{5}, (1011)_{(2)}, A1_{16}; and a subscript in an answer (every unescaped _ in it).
_BASE_NUMERAL = re.compile(r"(?:\([ \t]*[0-9A-Z]+[ \t]*\)|\{[ \t]*[0-9A-Z]+[ \t]*\}|[0-9A-Z]+)_(?:\{([^{}]*)\}|([0-9A-Za-z]))")
_SUBSCRIPT = re.compile(r"_(?:\{([^{}]*)\}|([0-9A-Za-z]))")
_UNDERSCORE = re.compile(r"(?<!\\)_")
_BASE_NAMES = {"two": "2", "binary": "2", "three": "3", "ternary": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
               "eight": "8", "octal": "8", "nine": "9", "ten": "10", "decimal": "10", "sixteen": "16", "hex": "16",
               "hexadecimal": "16"}  # fmt: skip
#: A base named in words in an answer: ``\\text{ in base 3}``, ``\\text{base} 3``, ``(binary)``.
_BASE_WORDS = re.compile(rf"(?<![a-z])(?:base[\s{{}}-]*([0-9]+|{'|'.join(_BASE_NAMES)})|({'|'.join(_BASE_NAMES)}))(?![a-z])")
_BASE_JUNK = re.compile(r"\\text|[\s{}()-]")


def _base_name(subscript: str) -> str:
    """A base subscript's content without ``\\text``, braces, parentheses or spaces: ``{(2)}`` -> ``2``."""
    name = _BASE_JUNK.sub("", subscript).lower().removeprefix("base")
    return _BASE_NAMES.get(name, name.lstrip("0") or "0")


def _named_bases(normal: str) -> list[str]:
    """The bases an answer names: its subscripts and ``base N`` or ``binary``-like words; a
    subscript that cannot be read (``_\\left(3\\right)``) names itself, which no gold base is."""
    bases = []
    for underscore in _UNDERSCORE.finditer(normal):
        found = _SUBSCRIPT.match(normal, underscore.start())
        if found is None:
            bases.append(repr(normal[underscore.start() : underscore.start() + 16]))
        else:
            bases.append(_base_name(found.group(1) if found.group(1) is not None else found.group(2)))
    bases += [_base_name(found.group(1) or found.group(2)) for found in _BASE_WORDS.finditer(normal.lower())]
    return bases


def notation_mismatch(gold: str, answer: str) -> str | None:
    """Why ``answer`` names a different unit or base than ``gold``, or ``None``.

    Only notation the gold answer has is checked, and an answer that leaves it out passes here
    (math-verify then compares the values): ``5`` for ``5\\text{ cm}`` and ``1011`` for
    ``1011_2`` are not refused, ``5\\text{ m}``, ``5\\,\\mathit{m}``, ``5 kg``, ``1011_{10}`` and
    ``1011\\,_{\\rm ten}`` are. Both are read in :func:`normalise`'s form.

    Args:
        gold: The gold LaTeX answer (the contents of its ``\\boxed{}``).
        answer: The candidate's.

    Returns:
        A reason (``the unit differs ...``, ``the base differs ...``), or ``None``.
    """
    normal_gold = normalise(gold).strip()
    gold_base = _BASE_NUMERAL.fullmatch(normal_gold)
    if gold_base is not None:
        base = _base_name(gold_base.group(1) if gold_base.group(1) is not None else gold_base.group(2))
        if not base.isdigit() or int(base) < 2:  # x_1, A_n: an index, not a base
            return None
        for named in _named_bases(normalise(answer)):
            if named != base:
                return f"the base differs: the gold answer is in base {base}, the answer names base {named}"
        return None
    gold_units = _units(normal_gold, answer=False)
    if gold_units:
        answer_units = _units(normalise(answer), answer=True)
        if answer_units and answer_units != gold_units:
            return f"the unit differs: the gold answer is in {', '.join(gold_units)}, the answer in {', '.join(answer_units)}"
    return None
