"""LiveCodeBench's private tests, decoded without executing anything.

A row's ``private_test_cases`` is plain JSON text or ``base64(zlib(pickle(json text)))``.
:func:`decode_private_tests` reads the pickle's opcodes with :mod:`pickletools` and accepts only a
lone string: nothing in a payload can import or call anything, and a crafted payload is refused
with :class:`PrivateTestsError`.
"""

from __future__ import annotations

import base64
import binascii
import json
import pickletools
import zlib
from typing import Any, Mapping

from conductor_env.tasks.registry import SuiteError

__all__ = [
    "MAX_PRIVATE_BYTES",
    "PrivateTestsError",
    "as_tests",
    "check_private_payload",
    "decode_private_tests",
]

#: Largest decompressed private-test payload accepted (a zlib bomb is refused, not expanded).
MAX_PRIVATE_BYTES = 1 << 30

_STRING_OPCODES = {"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE"}
# Opcodes that only frame or memoize; together with one string they make a pickled ``str``.
_HARMLESS_OPCODES = {"PROTO", "FRAME", "MEMOIZE", "PUT", "BINPUT", "LONG_BINPUT", "STOP"}


class PrivateTestsError(SuiteError):
    """A private-test payload is malformed or is not a pickled plain string (possibly crafted)."""


def _string_from_pickle(raw: bytes) -> str:
    """Returns the string a pickle holds, refusing any pickle that holds anything else.

    The opcodes are read with :func:`pickletools.genops`, which parses and never executes; a
    pickle that imports (``GLOBAL``), calls (``REDUCE``), builds objects or holds anything but
    one string is refused before any object exists.
    """
    found: str | None = None
    try:
        for opcode, argument, position in pickletools.genops(raw):
            if opcode.name in _STRING_OPCODES:
                if found is not None:
                    raise PrivateTestsError("the pickle holds more than one string")
                found = argument
            elif opcode.name not in _HARMLESS_OPCODES:
                detail = f" {argument!r}" if argument is not None else ""
                raise PrivateTestsError(f"refused pickle opcode {opcode.name}{detail} at byte {position}: private tests must be a pickled plain string, and this payload could run code")
    except PrivateTestsError:
        raise
    except Exception as error:  # genops raises ValueError and friends on truncated input
        raise PrivateTestsError(f"the pickle is malformed: {error}") from error
    if found is None:
        raise PrivateTestsError("the pickle holds no string")
    return found


def _inflate(compressed: bytes, max_bytes: int) -> bytes:
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(compressed, max_bytes)
    except zlib.error as error:
        raise PrivateTestsError(f"the payload is not zlib data: {error}") from error
    if inflater.unconsumed_tail:
        raise PrivateTestsError(f"the payload inflates to more than {max_bytes} bytes; refused")
    if not inflater.eof:
        raise PrivateTestsError("the zlib stream is truncated")
    return raw


def as_tests(value: Any, what: str) -> list[dict[str, str]]:
    """Returns a decoded JSON value as a list of tests (public or private).

    Args:
        value: The decoded JSON value.
        what: The field's name, for the error message.

    Returns:
        Dicts with ``input``, ``output`` and ``testtype`` strings.

    Raises:
        PrivateTestsError: When ``value`` is not a list of tests with string input and output.
    """
    if not isinstance(value, list):
        raise PrivateTestsError(f"{what} must be a JSON list of tests, got {type(value).__name__}")
    tests = []
    for index, test in enumerate(value):
        if not isinstance(test, Mapping) or not isinstance(test.get("input"), str) or not isinstance(test.get("output"), str):
            raise PrivateTestsError(f"{what}[{index}] is not a test with string 'input' and 'output'")
        tests.append({"input": test["input"], "output": test["output"], "testtype": str(test.get("testtype", ""))})
    return tests


def _pickled_text(payload: str, max_bytes: int) -> str:
    """Returns the string inside ``base64(zlib(pickle(str)))``, executing nothing."""
    try:
        compressed = base64.b64decode(payload.encode("ascii"))
    except (binascii.Error, UnicodeEncodeError) as error:
        raise PrivateTestsError(f"private_test_cases is neither JSON nor base64: {error}") from error
    return _string_from_pickle(_inflate(compressed, max_bytes))


def _plain_json(payload: str) -> Any:
    try:
        return json.loads(payload)
    except ValueError:
        return None


def decode_private_tests(payload: str | None, *, max_bytes: int = MAX_PRIVATE_BYTES) -> list[dict[str, str]]:
    """Decodes a ``private_test_cases`` field.

    The field is plain JSON text, or ``base64(zlib(pickle(json text)))``; LiveCodeBench tries
    JSON first, and so does this function.

    Args:
        payload: The field's value (``None`` or ``""``: no private tests).
        max_bytes: Largest decompressed pickle accepted.

    Returns:
        The tests: dicts with ``input``, ``output`` and ``testtype`` strings.

    Raises:
        PrivateTestsError: For a payload that is not valid base64/zlib, a pickle holding anything
            but one string (e.g. one that would import and call a function), or JSON that is not
            a list of tests. Nothing in the payload is ever executed.
    """
    if payload is None or not payload.strip():
        return []
    plain = _plain_json(payload)
    if plain is not None:
        return as_tests(plain, "private_test_cases")
    text = _pickled_text(payload, max_bytes)
    try:
        tests = json.loads(text)
    except ValueError as error:
        raise PrivateTestsError(f"the decoded private tests are not JSON: {error}") from error
    return as_tests(tests, "decoded private_test_cases")


def check_private_payload(payload: str | None) -> None:
    """Validates a payload at load time, keeping nothing: decoded, a release is gigabytes.

    Raises:
        PrivateTestsError: As :func:`decode_private_tests` would, except that the JSON inside a
            pickle is not parsed yet.
    """
    if payload is None or not payload.strip():
        return
    plain = _plain_json(payload)
    if plain is not None:
        as_tests(plain, "private_test_cases")
    else:
        _pickled_text(payload, MAX_PRIVATE_BYTES)
