"""The normal form of a LaTeX answer in which :mod:`conductor_env.tasks.math_notation` reads units and bases.

Every text-like command (``\\mathrm``, ``\\textit``, ``\\operatorname``, ``\\mbox``, ``\\hbox``,
``{\\rm ...}``, ...) becomes ``\\text{...}``, braces nested inside a text group or a
sub/superscript are dropped (``\\text{{cm}}``), spacing commands (``\\,``, ``\\;``, ``\\!``,
``~``, ``\\quad``, ``\\hspace{..}``) become a space, and spaces before a ``_`` or ``^`` are
removed (``1011\\,_{10}``). Adjacent text groups are one group. The form is built in one pass
with an explicit stack, so answers built to be slow (braces 10,000 deep) cost linear time and no
recursion.
"""

from __future__ import annotations

import re

__all__ = ["normalise"]

#: Commands whose argument is text or an upright/styled symbol: read as ``\text{...}``.
TEXT_COMMANDS = frozenset(
    "text textrm textnormal textit textbf textsf texttt textup textsl textsc textmd textlf emph mbox hbox makebox fbox "
    "mathrm mathit mathbf mathsf mathtt mathnormal mathup mathsfit mathbfit operatorname operatorname* boldsymbol bm pmb "
    "unit si mathord mathop mathrel".split()
)
#: Declarations that style the rest of their group: ``{\\rm cm}``, ``\\rm cm``.
TEXT_DECLARATIONS = frozenset("rm it bf sf tt sl sc up md normalfont rmfamily sffamily ttfamily itshape slshape upshape bfseries mdseries scshape".split())
#: Spacing and style commands without an argument: read as a space.
SPACING_COMMANDS = frozenset(
    "quad qquad enspace enskip thinspace medspace thickspace negthinspace negmedspace negthickspace space nobreakspace "
    "displaystyle textstyle scriptstyle scriptscriptstyle strut relax nolinebreak allowbreak".split()
)
#: Spacing commands with one braced argument, which is dropped: ``\\hspace{1em}``.
SPACING_WITH_ARGUMENT = frozenset("hspace hspace* hphantom phantom vphantom mspace".split())
#: Spacing commands with a bare dimension, which is dropped: ``\\kern1em``, ``\\mkern3mu``.
SPACING_WITH_DIMENSION = frozenset("kern mkern hskip mskip".split())
_TEXT_LIKE = TEXT_COMMANDS | TEXT_DECLARATIONS
#: Symbols spelled as commands.
SYMBOLS = {"textdegree": "^\\circ", "degree": "^\\circ", "textdollar": "\\$", "dollar": "\\$"}

#: Commands math-verify finds as text, so letters glued after them are letters: ``\\approxm``.
_GLUED = ("displaystyle", "approx")
_COMMAND = re.compile(r"[A-Za-z]+\*?")
_PLAIN_RUN = re.compile(r"[^\\{}_^~\s]+")
_DIMENSION = re.compile(r"\s*-?[0-9.]*\s*[a-z]{0,2}")
_SPACE = re.compile(r"\s")

# Frame kinds of the scanner's stack.
_PLAIN, _TEXT, _SCRIPT, _FLAT, _SKIP = range(5)


class _Scanner:
    """One left-to-right pass over a LaTeX string building its normal form (see :func:`normalise`)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.out: list[str] = []
        self.stack: list[int] = []  # frame kinds; the frame's closing brace is decided by its kind
        self.skipping = 0  # open _SKIP frames: output is dropped while any is open
        self.text_close: int | None = None  # index in out of the last text group's "}" with only spaces after it

    def emit(self, piece: str) -> None:
        if self.skipping:
            return
        if piece.strip():
            self.text_close = None
        self.out.append(piece)

    @property
    def inside_text(self) -> bool:
        return bool(self.stack) and self.stack[-1] in (_TEXT, _SCRIPT, _FLAT)

    def skip_spaces(self, index: int) -> int:
        """The index after spaces, spacing commands and ``~`` starting at ``index``."""
        text = self.text
        while index < len(text):
            if text[index].isspace() or text[index] == "~":
                index += 1
            elif text.startswith("\\", index) and index + 1 < len(text) and text[index + 1] in ",;:!> ":
                index += 2
            elif text.startswith("\\", index) and (name := _COMMAND.match(text, index + 1)) and name.group() in SPACING_COMMANDS:
                index = name.end()
            else:
                break
        return index

    def open(self, kind: int, brace: str) -> None:
        if kind == _SKIP:
            self.skipping += 1
        elif kind != _FLAT:
            self.emit(brace)
        self.stack.append(kind)

    def close(self) -> None:
        if not self.stack:
            self.emit("}")
            return
        kind = self.stack.pop()
        if kind == _SKIP:
            self.skipping -= 1
        elif kind != _FLAT:
            self.emit("}")
            if kind == _TEXT and not self.skipping:
                self.text_close = len(self.out) - 1

    def emit_text_group(self, content: str) -> None:
        """A whole text group, in three pieces so that a following one can merge into it."""
        if self.text_close is not None and not self.skipping:
            self.out[self.text_close] = " "
            self.emit(content)
            self.emit("}")
        else:
            self.emit("\\text{")
            self.emit(content)
            self.emit("}")
        self.text_close = None if self.skipping else len(self.out) - 1

    def open_text(self, index: int) -> int:
        """After a text-like command: its argument as a text group; returns the index after what was read."""
        index = self.skip_spaces(index)
        text = self.text
        if self.inside_text:
            return index  # a command inside a text group or script: dropped, its braces are flat
        if index < len(text) and text[index] == "{":
            if self.text_close is not None and not self.skipping:
                self.out[self.text_close] = " "  # \text{a}\text{b} is \text{a b}
                self.text_close = None
                self.stack.append(_TEXT)
            else:
                self.open(_TEXT, "\\text{")
            return index + 1
        if index < len(text) and text[index].isalnum():
            self.emit_text_group(text[index])
            return index + 1
        return index

    def declaration(self, index: int) -> int:
        """After ``\\rm``-like declarations: the rest of the group (up to a brace, command or script) as a text group."""
        start = self.skip_spaces(index)
        if self.inside_text or (start < len(self.text) and self.text[start] == "{"):
            return self.open_text(index)
        end = start
        while end < len(self.text) and self.text[end] not in "{}\\_^$":  # the rest of the group
            end += 1
        if end > start:
            self.emit_text_group(self.text[start:end].replace("~", " "))
        return end

    def script(self, index: int) -> int:
        """After ``_`` or ``^`` outside text: spaces before it are dropped, its argument braced and flat."""
        while self.out and not self.skipping and not self.out[-1].strip():
            self.out.pop()
        if self.out and not self.skipping:
            self.out[-1] = self.out[-1].rstrip()
        self.emit(self.text[index])
        index = self.skip_spaces(index + 1)
        text = self.text
        if index < len(text) and text[index] == "\\" and (name := _COMMAND.match(text, index + 1)) and name.group() in _TEXT_LIKE:
            index = self.skip_spaces(name.end())
            if index < len(text) and text[index] != "{":
                if text[index].isalnum():
                    self.emit("{" + text[index] + "}")
                    return index + 1
                return index
        if index < len(text) and text[index] == "{":
            self.open(_SCRIPT, "{")
            return index + 1
        return index

    def command(self, index: int) -> int:
        """At a backslash: one command; returns the index after it."""
        text = self.text
        name_match = _COMMAND.match(text, index + 1)
        if name_match is None:
            symbol = text[index + 1 : index + 2]
            if symbol in "{}" and self.inside_text:
                return index + 2  # \{3\} in a subscript: braces, like the others there
            self.emit(" " if symbol in ",;:!> " else "\\" + symbol)
            return index + 2
        name, end = name_match.group(), name_match.end()
        for glued in _GLUED:
            if name.startswith(glued) and len(name) > len(glued):  # math-verify reads \\approxm as \\approx m
                self.emit(f"\\{glued} {name[len(glued) :]}")
                return end
        if name in ("left", "right") and text.startswith(".", end):
            self.emit(" ")  # an invisible delimiter
            return end + 1
        if name in TEXT_COMMANDS:
            return self.open_text(end)
        if name in TEXT_DECLARATIONS:
            return self.declaration(end)
        if name in SPACING_COMMANDS:
            self.emit(" ")
            return end
        if name in SPACING_WITH_ARGUMENT:
            self.emit(" ")
            after = self.skip_spaces(end)
            if after < len(text) and text[after] == "{":
                self.open(_SKIP, "")
                return after + 1
            return end
        if name in SPACING_WITH_DIMENSION:
            self.emit(" ")
            return _DIMENSION.match(text, end).end()  # type: ignore[union-attr]  # matches the empty string
        if name in SYMBOLS:
            self.emit(SYMBOLS[name])
            return end
        self.emit("\\" + name)
        return end

    def run(self) -> str:
        text, index = self.text, 0
        while index < len(text):
            char = text[index]
            if char == "\\":
                index = self.command(index)
            elif char == "{":
                self.open(_FLAT if self.inside_text else _PLAIN, "{")
                index += 1
            elif char == "}":
                self.close()
                index += 1
            elif char in "_^" and not self.inside_text:
                index = self.script(index)
            elif char == "~" or char.isspace():
                self.emit(" ")
                index += 1
            else:
                run = _PLAIN_RUN.match(text, index)
                piece = run.group() if run is not None else char
                self.emit(piece)
                index += len(piece)
        while self.stack:  # unclosed groups are closed at the end
            self.close()
        return "".join(self.out)


def normalise(text: str) -> str:
    """The normal form in which units and bases are read.

    Every text-like command becomes ``\\text{...}`` (adjacent ones merge), braces inside a text
    group, subscript or superscript are dropped, spacing commands and ``~`` become spaces and
    spaces before ``_`` and ``^`` are removed. Linear in the length, with no recursion.

    Args:
        text: A LaTeX answer.

    Returns:
        Its normal form: ``5\\,\\mathrm{{cm}}`` -> ``5 \\text{cm}``, ``1011\\;_{\\text{ten}}`` -> ``1011_{ten}``.
    """
    return _Scanner(text).run()
