"""Reasoning blocks (``<think>...</think>``) in untrusted text, removed in linear time.

Both the workflow parser (an action) and the answer extractors (a worker's response) drop the
reasoning an LLM wrote before its answer; this is the one implementation they share.
"""

from __future__ import annotations

import re

__all__ = ["THINK_BLOCK", "THINK_CLOSE", "THINK_OPEN", "drop_think_blocks"]

THINK_BLOCK = re.compile(r"<think>.*?</think>", re.IGNORECASE | re.DOTALL)
THINK_OPEN = re.compile(r"<think>", re.IGNORECASE)
THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)


def drop_think_blocks(text: str) -> str:
    """Removes every closed ``<think>...</think>`` block (``THINK_BLOCK.sub("", text)``), in linear time.

    A ``<think>`` after the last ``</think>`` closes nowhere, and the regex would scan from each
    such tag to the end of the text; so only the text up to the last closing tag is searched.

    Args:
        text: Untrusted text.

    Returns:
        The text without its closed reasoning blocks (an unclosed one is left in place).
    """
    last = None
    for last in THINK_CLOSE.finditer(text):
        pass
    if last is None:
        return text
    return THINK_BLOCK.sub("", text[: last.end()]) + text[last.end() :]
