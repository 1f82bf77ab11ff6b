"""JSON text, encoded and decoded by orjson.

orjson is a well-kept C library, ten times the standard library's speed on the hot path's
bodies (a test's logged body: ~0.7 against ~7.7 µs measured here), and a request encodes
or decodes several (the body once for the log, the record and the response; the request;
the sheet, the figures and the events the database stores). Its text is the standard
library's with `separators=(",", ":")` and `ensure_ascii=False` (compact, UTF-8), but for
the spelling of a float's exponent (`1e-5` for `1e-05`: the same number).

What orjson refuses to encode (an integer beyond 64 bits) is encoded by the standard library,
so nothing encodable before fails now. Decoding, orjson refuses what is not JSON (`NaN`,
a lone surrogate escape): `loads` raises ValueError then, as `json.loads` does for bad JSON."""

from __future__ import annotations

import json
from typing import Any

import orjson

# keys as the standard library writes them (an int key: "1"); a datetime or a dataclass, which the
# standard library cannot encode, goes to the fallback, which raises TypeError as before (a UUID alone
# is now written as its text)
_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


def dumps(value: Any) -> bytes:
    """The JSON of `value`, UTF-8, compact."""
    try:
        return orjson.dumps(value, option=_OPTIONS)
    except orjson.JSONEncodeError:  # beyond orjson (an integer over 64 bits): the standard library's
        return _standard(value).encode()


def dumps_text(value: Any) -> str:
    """`dumps` as a str."""
    return dumps(value).decode()


def loads(text: str | bytes | bytearray | memoryview) -> Any:
    """The value of a JSON text (ValueError when it is not JSON)."""
    return orjson.loads(text)


def _standard(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
