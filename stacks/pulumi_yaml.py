"""How the Pulumi CLI reads a stack file (Go's yaml.v3) and what it hands the program, so that
`validate` and `render` read Pulumi.<stack>.yaml as `pulumi up` does.

Checked against the Pulumi CLI 3.259.0 (`pulumi config --json`, and a program printing the config
the engine gave it; tests/data/cli_forms.* holds that record):

- A plain scalar resolves as yaml.v3 resolves it: `1_000` is 1000, `0b101` 5, `-0x1` -1, `0o17`
  15, `010` octal 8, `08` 8, `1.` the float 1, `2001-12-14` a timestamp, `yes` text; a number
  too big for Go is text (`1e400`, a 5000-digit integer).
- Values reach the program through JSON: a whole float is a whole number (1. -> 1, 1e3 -> 1000),
  an integer beyond int64 inside a map or list is a float, a map's keys are sorted and are Go's
  text of the key (true -> "true", 1.5 -> "1.5"), a timestamp is Go's text of the time.
- A top-level value reaches the program as text, which the program decodes as JSON (`decode`).
- `!!set` is a map of nulls, `!!binary` its decoded text, `!!omap` a list of one-key maps, and
  `<<` merges maps (a key written beside it wins, then the first map merged).

Some forms read differently from what a person meant. Those are traps (`trap`), and they are
refused wherever the file is read (validate, render, and the program under `pulumi up`).
"""

from __future__ import annotations

import base64
import binascii
import calendar
import json
import math
import re
from decimal import Decimal
from typing import Any

import yaml

TAG = "tag:yaml.org,2002:"
NULL, BOOL, INT, FLOAT, STR, TIMESTAMP, MERGE = (
    TAG + t for t in ("null", "bool", "int", "float", "str", "timestamp", "merge")
)
BINARY, SET, OMAP, PAIRS, MAP, SEQ = (TAG + t for t in ("binary", "set", "omap", "pairs", "map", "seq"))
KNOWN_TAGS = frozenset({NULL, BOOL, INT, FLOAT, STR, TIMESTAMP, MERGE, BINARY, SET, OMAP, PAIRS, MAP, SEQ})
INT64 = (-(2**63), 2**63 - 1)
UINT64_MAX = 2**64 - 1

# yaml.v3's resolve table: these exact texts, whatever the first character.
_EXACT = {
    **dict.fromkeys(("true", "True", "TRUE", "false", "False", "FALSE"), BOOL),
    **dict.fromkeys(("", "~", "null", "Null", "NULL"), NULL),
    **dict.fromkeys((f"{sign}.{word}" for sign in ("", "+", "-") for word in ("inf", "Inf", "INF")), FLOAT),
    **dict.fromkeys((".nan", ".NaN", ".NAN"), FLOAT),
    "<<": MERGE,
}
_SPECIAL_FLOATS = {
    **{
        f"{sign}.{word}": (-math.inf if sign == "-" else math.inf)
        for sign in ("", "+", "-")
        for word in ("inf", "Inf", "INF")
    },
    **dict.fromkeys((".nan", ".NaN", ".NAN"), math.nan),
}
_YAML_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_DOT_FLOAT = re.compile(r"\.[0-9](?:_?[0-9])*(?:[eE][-+]?[0-9](?:_?[0-9])*)?")  # Go's ParseFloat, from "."
_GO_INT = re.compile(r"([-+]?)(0[xX][0-9a-fA-F]+|0[bB][01]+|0[oO][0-7]+|0[0-7]*|[1-9][0-9]*)")
_LEADING_ZERO_OCTAL = re.compile(r"([-+]?)0([0-7]+)")
_DATE = r"(\d{4})-(\d{1,2})-(\d{1,2})"
_CLOCK = r"(\d{1,2}):(\d{1,2}):(\d{1,2})(?:[.,](\d+))?"
_ZONE = r"(Z|[+-]\d\d:\d\d)"
# yaml.v3's timestamp layouts (time.Parse): 2006-1-2T15:4:5.999999999Z07:00, the same with "t",
# 2006-1-2 15:4:5.999999999 (UTC), 2006-1-2.
_TIMESTAMPS = (
    re.compile(f"{_DATE}T{_CLOCK}{_ZONE}"),
    re.compile(f"{_DATE}t{_CLOCK}{_ZONE}"),
    re.compile(f"{_DATE} {_CLOCK}"),
    re.compile(_DATE),
)


# ---------------------------------------------------------------- scalars as yaml.v3 reads them


def go_int(text: str) -> int | None:
    """strconv.ParseInt(text, 0, 64), then ParseUint: the integer, or None (not one, or beyond 64 bits)."""
    match = _GO_INT.fullmatch(text)
    if match is None:
        return None
    sign, digits = match.groups()
    prefix = digits[:2].lower()
    if prefix in ("0x", "0b", "0o"):
        base, body = {"0x": 16, "0b": 2, "0o": 8}[prefix], digits[2:]
    elif len(digits) > 1 and digits[0] == "0":
        base, body = 8, digits[1:]  # a leading 0: octal, as Go reads it
    else:
        base, body = 10, digits
    body = body.lstrip("0") or "0"
    if len(body) > 64:  # more than 64 bits in any of these bases: bound the work before int()
        return None
    value = -int(body, base) if sign == "-" else int(body, base)
    if INT64[0] <= value <= INT64[1] or (not sign and value <= UINT64_MAX):
        return value
    return None


def go_float(text: str) -> float | None:
    """strconv.ParseFloat of a YAML-style float: None for one Go cannot hold (it overflows to text)."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def go_timestamp(text: str) -> str | None:
    """Go's text of the time yaml.v3 reads from `text` ("2001-12-14 00:00:00 +0000 UTC"), or None
    when it is no timestamp to yaml.v3 (time.Parse refuses it, e.g. 2001-02-30 or 24:00:00)."""
    if not (len(text) > 4 and text[:4].isdigit() and text[4] == "-"):
        return None
    for form in _TIMESTAMPS:
        match = form.fullmatch(text)
        if match is None:
            continue
        parts = [*match.groups(), None, None, None, None, None][:8]
        year, month, day = (int(p) for p in parts[:3])
        hour, minute, second = (int(p or 0) for p in parts[3:6])
        fraction, zone = parts[6] or "", parts[7] or ""
        if not (1 <= month <= 12 and 1 <= day <= calendar.monthrange(max(year, 1), month)[1]):
            return None
        if hour > 23 or minute > 59 or second > 59:
            return None
        if zone not in ("", "Z") and (int(zone[1:3]) > 24 or int(zone[4:6]) > 60):
            return None
        wall = f"{year:04d}-{month:02d}-{day:02d} {hour:02d}:{minute:02d}:{second:02d}"
        nanos = fraction[:9].ljust(9, "0").rstrip("0")
        if nanos:
            wall += "." + nanos
        offset = zone.replace(":", "")
        if offset in ("", "Z", "+0000", "-0000"):  # (an offset of 0: the deploying machine's UTC)
            return f"{wall} +0000 UTC"
        return f"{wall} {offset} {offset}"
    return None


def resolve(text: str) -> str:
    """The tag yaml.v3 gives a plain (unquoted, untagged) scalar."""
    if text in _EXACT:
        return _EXACT[text]
    first = text[0]
    if first == ".":
        return FLOAT if _DOT_FLOAT.fullmatch(text) and go_float(text) is not None else STR
    if first in "+-0123456789":
        if first in "0123456789" and go_timestamp(text) is not None:
            return TIMESTAMP
        plain = text.replace("_", "")
        if go_int(plain) is not None:
            return INT
        if _YAML_FLOAT.fullmatch(plain) and go_float(plain) is not None:
            return FLOAT
    return STR


def scalar(tag: str, text: str) -> Any:
    """A scalar's value as yaml.v3 decodes it (a timestamp: Go's text of it). Raises ValueError
    for text the tag cannot hold (`!!int abc`), as yaml.v3 refuses it."""
    if tag == NULL:
        return None
    if tag == BOOL:
        if text not in _EXACT or _EXACT[text] != BOOL:
            raise ValueError(f"cannot read {text!r} as true or false")
        return text.lower() == "true"
    if tag in (INT, FLOAT):
        if text in _SPECIAL_FLOATS and tag == FLOAT:
            return _SPECIAL_FLOATS[text]
        plain = text.replace("_", "")
        whole = go_int(plain)
        if whole is not None:
            return float(whole) if tag == FLOAT else whole
        number = go_float(plain) if _YAML_FLOAT.fullmatch(plain) else None
        if number is None:
            raise ValueError(f"cannot read {text[:40]!r} as a {'whole ' if tag == INT else ''}number")
        return number
    if tag == TIMESTAMP:
        moment = go_timestamp(text)
        if moment is None:
            raise ValueError(f"cannot read {text[:40]!r} as a timestamp")
        return moment
    if tag == BINARY:
        try:
            return base64.b64decode("".join(text.split()), validate=True).decode("utf-8", "replace")
        except (binascii.Error, ValueError):
            raise ValueError("!!binary text is not base64") from None
    return text  # !!str, and tags the CLI ignores


# ---------------------------------------------------------------- what the program receives


def decode(value: Any) -> Any:
    """The program's reading of a top-level config value: Pulumi hands structured values over
    as JSON text."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:  # (also a number beyond Python's 4300 digits)
            return value
    return value


def handed(value: Any) -> Any:
    """A top-level config value (as read from the file) as the program receives it."""
    if isinstance(value, dict | list):
        return _through_json(value)
    if value is None:
        return ""  # the CLI warns, and hands "" (text)
    if isinstance(value, str):
        return decode(value)
    if isinstance(value, float):
        return _json_number(value)
    return value  # true/false, and whole numbers (exact at the top, even beyond int64)


def handed_text(value: Any) -> str:
    """A top-level value as the text the CLI hands the program (for another package's keys, which
    this program does not decode; an object's JSON text may differ from Go's in spacing and
    escapes, never in what it decodes to)."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return json.dumps(_through_json(value), separators=(",", ":"), ensure_ascii=False)


def _through_json(value: Any) -> Any:
    if isinstance(value, dict):
        items = {go_key(k): _through_json(v) for k, v in value.items()}
        return {k: items[k] for k in sorted(items)}  # Go's json.Marshal sorts a map's keys
    if isinstance(value, list):
        return [_through_json(v) for v in value]
    if isinstance(value, float):
        return _json_number(value)
    if isinstance(value, int) and not isinstance(value, bool) and value > INT64[1]:
        return _json_number(float(value))  # a uint64 inside an object becomes a float
    return value


def _json_number(value: float) -> int | float:
    """A float as Go writes it in JSON and Python reads it back: whole ones below 1e21 are
    written without a point, so they come back as whole numbers."""
    if math.isfinite(value) and value.is_integer() and abs(value) < 1e21:
        return int(Decimal(repr(value)))
    return value


def read_plain(text: str) -> Any:
    """A plain scalar, written inside a map or list, as the program receives it."""
    return _through_json(scalar(resolve(text), text)) if text else None


def go_key(key: Any) -> str:
    """A map key as the program receives it: Go's text of it (fmt's %v)."""
    if isinstance(key, str):
        return key
    if key is None:
        return "<nil>"
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        return _go_g(key)
    return str(key)


def _go_g(value: float) -> str:
    """strconv.FormatFloat(value, 'g', -1, 64): Go's %v of a float."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "0"  # (-0.0 too: the CLI hands "0")
    sign, digit_tuple, exponent = Decimal(repr(value)).normalize().as_tuple()
    digits = "".join(map(str, digit_tuple))
    point = len(digits) + int(exponent)  # digits before the decimal point
    lead = "-" if sign else ""
    if point - 1 < -4 or point - 1 >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        e = point - 1
        return f"{lead}{mantissa}e{'-' if e < 0 else '+'}{abs(e):02d}"
    if point <= 0:
        return f"{lead}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return f"{lead}{digits}{'0' * (point - len(digits))}"
    return f"{lead}{digits[:point]}.{digits[point:]}"


# ---------------------------------------------------------------- traps


def trap(node: yaml.Node, *, key: bool = False) -> str | None:
    """What is wrong with a value (or a map key) as written, when the Pulumi CLI reads it into
    something other than what it says; the message names the fix. None: no trap."""
    tag = node.tag
    if tag not in KNOWN_TAGS:
        return (
            f"{tag} is a YAML tag unknown to the Pulumi CLI, which ignores it (the value reaches the program as it "
            "is written); remove it (to keep a value secret, use `pulumi config set --secret`)"
        )
    if not isinstance(node, yaml.ScalarNode):
        return None
    text = str(node.value)
    if tag == INT:
        octal = _LEADING_ZERO_OCTAL.fullmatch(text.replace("_", ""))
        if octal is not None:
            sign, digits = octal.groups()
            as_octal, as_decimal = int(digits, 8), int(digits)
            if as_octal != as_decimal:
                minus = "-" if sign == "-" else ""
                return (
                    f"{text} is octal ({minus}{as_octal}) to the Pulumi CLI; write {minus}{as_octal} or "
                    f'{minus}{as_decimal} (or, for text, quote it: "{text}")'
                )
    if tag == TIMESTAMP:
        moment = go_timestamp(text)
        what = "a date" if len(text) <= 10 else "a time"
        return f'{text} is {what} to the Pulumi CLI, which hands the program "{moment}"; quote it: "{text}"'
    if tag == FLOAT:
        special = _SPECIAL_FLOATS.get(text)
        if special is not None and not math.isfinite(special):
            return (
                f"{text} is {'NaN' if math.isnan(special) else 'infinity'} to the Pulumi CLI, which cannot hand it to "
                'the program (`pulumi up` stops with "json: unsupported value"); write a number'
            )
    if key and tag == NULL:
        return f'a null key ({text or "empty"}) reaches the program as the text "<nil>"; write the key you mean'
    return None
