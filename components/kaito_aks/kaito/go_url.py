"""Go's `net/url.ParseRequestURI` (Go 1.26, the toolchain KAITO 0.12 is built with; 0.8.1's Go
1.24 accepts everything 1.26 does), which KAITO's ragengine webhook runs on the URLs it is
given (api/<version>/ragengine_validation.go: "URL input error: %v"). The same text passes or
fails here as there, so a URL is refused before anything is registered, not at admission.

It accepts an absolute URI (scheme:..., e.g. http://host:port/path, and even an opaque
mailto:x) or an absolute path (/v1/...), and refuses relative references, control
characters, a bad port, a bad host character and a bad %-escape. It does not ask for http(s)
nor for a host: the rules that need them say so themselves (`request_uri_host` gives it).
"""

from __future__ import annotations

import ipaddress
import re
import string

_ALPHA = frozenset((string.ascii_letters).encode())
_SCHEME_REST = frozenset((string.ascii_letters + string.digits + "+-.").encode())
_HEX = frozenset(string.hexdigits.encode())
_DIGITS = frozenset(string.digits.encode())
# ASCII bytes a host may hold as themselves (net/url shouldEscape(c, encodeHost) is false).
_HOST_OK = frozenset((string.ascii_letters + string.digits + "-_.~!$&'()*+,;=:[]<>\"").encode())
# What userinfo may hold (net/url validUserinfo; non-ASCII is refused too).
_USERINFO_OK = frozenset((string.ascii_letters + string.digits + "-._:~!$&'()*+,;=%@").encode())


def parse_request_uri(raw: str) -> str | None:
    """What Go's url.ParseRequestURI(raw) fails with (its error, without the `parse "..."`
    prefix), or None when it parses."""
    return _parse(raw)[0]


def request_uri_host(raw: str) -> str | None:
    """The host Go's url.ParseRequestURI(raw) finds (URL.Hostname(): no port nor brackets,
    %-escapes decoded), "" for a URL without one, None when it refuses the URL."""
    error, host = _parse(raw)
    return None if error else host


def _parse(raw: str) -> tuple[str | None, str]:
    """(ParseRequestURI's error or None, the hostname)."""
    data = raw.encode()
    if any(b < 0x20 or b == 0x7F for b in data):
        return "net/url: invalid control character in URL", ""
    if data == b"":
        return "empty url", ""
    if data == b"*":
        return None, ""
    scheme, rest, error = _scheme(data)
    if error:
        return error, ""
    # the query goes (a lone trailing "?" too)
    rest = rest[:-1] if rest.endswith(b"?") and rest.count(b"?") == 1 else rest.split(b"?", 1)[0]
    if not rest.startswith(b"/"):
        return (None if scheme else "invalid URI for request"), ""
    host = b""
    if scheme and rest.startswith(b"//"):
        authority = rest[2:]
        slash = authority.find(b"/")
        authority, rest = (authority[:slash], authority[slash:]) if slash >= 0 else (authority, b"")
        error, host = _authority(scheme.lower(), authority)
        if error:
            return error, ""
    return _unescape(rest, "path"), _decoded(host)


def _scheme(raw: bytes) -> tuple[bytes, bytes, str | None]:
    for i, c in enumerate(raw):
        if c in _ALPHA:
            continue
        if c in _SCHEME_REST:
            if i == 0:
                return b"", raw, None
            continue
        if c == ord(":"):
            if i == 0:
                return b"", b"", "missing protocol scheme"
            return raw[:i], raw[i + 1 :], None
        return b"", raw, None
    return b"", raw, None


def _authority(scheme: bytes, authority: bytes) -> tuple[str | None, bytes]:
    """(the error, the hostname as written)."""
    at = authority.rfind(b"@")
    error, host = _host(scheme, authority[at + 1 :] if at >= 0 else authority)
    if error or at < 0:
        return error, host
    userinfo = authority[:at]
    if any(c not in _USERINFO_OK for c in userinfo):
        return "net/url: invalid userinfo", host
    for part in userinfo.split(b":", 1):
        error = _unescape(part, "userinfo")
        if error:
            return error, host
    return None, host


def _host(scheme: bytes, host: bytes) -> tuple[str | None, bytes]:
    """(the error, the hostname without brackets and port, a zone's %25 as %25)."""
    bracket = host.rfind(b"[")
    if bracket > 0:
        return "invalid IP-literal", b""
    if bracket == 0:
        close = host.rfind(b"]")
        if close < 0:
            return "missing ']' in host", b""
        port = host[close + 1 :]
        if not _valid_port(port):
            return f'invalid port "{_text(port)}" after host', b""
        name = host[1:close]
        zone = name.find(b"%25")
        error = (
            _unescape(name[:zone], "host") or _unescape(name[zone:], "zone") if zone >= 0 else _unescape(name, "host")
        )
        if error:
            return error, b""
        literal = name[:zone] + b"%" + name[zone + 3 :] if zone >= 0 else name
        try:
            address = ipaddress.ip_address(literal.decode())
        except (ValueError, UnicodeDecodeError) as err:
            return f"invalid host: {err}", b""
        return ("invalid IP-literal" if address.version == 4 else None), name
    colon = host.find(b":")
    if colon >= 0:
        last = host.rfind(b":")
        if last != colon and scheme not in (b"http", b"https"):
            colon = last  # only http(s) URLs refuse a second colon in the host
        if not _valid_port(host[colon:]):
            return f'invalid port "{_text(host[colon:])}" after host', b""
        host = host[:colon]
    return _unescape(host, "host"), host


def _valid_port(port: bytes) -> bool:
    return port == b"" or (port[:1] == b":" and all(c in _DIGITS for c in port[1:]))


def _unescape(text: bytes, mode: str) -> str | None:
    hostlike = mode in ("host", "zone")
    i = 0
    while i < len(text):
        c = text[i]
        if c == ord("%"):
            escape = text[i : i + 3]
            if len(escape) < 3 or escape[1] not in _HEX or escape[2] not in _HEX:
                return f'invalid URL escape "{_text(escape)}"'
            value = int(escape[1:].decode(), 16)
            # in a host, %-encoding is only for non-ASCII bytes (RFC 3986 §3.2.2); a zone may
            # escape only what a host may hold (and spaces)
            if mode == "host" and value < 0x80 and escape != b"%25":
                return f'invalid URL escape "{_text(escape)}"'
            if mode == "zone" and escape != b"%25" and value != 0x20 and (value >= 0x80 or value not in _HOST_OK):
                return f'invalid URL escape "{_text(escape)}"'
            i += 3
            continue
        if hostlike and c < 0x80 and c not in _HOST_OK:
            return f'invalid character "{_text(bytes([c]))}" in host name'
        i += 1
    return None


def _decoded(text: bytes) -> str:
    """%-escapes decoded (they were checked), as URL.Hostname() gives them."""
    return re.sub(rb"%([0-9A-Fa-f]{2})", lambda m: bytes([int(m[1], 16)]), text).decode(errors="backslashreplace")


def _text(data: bytes) -> str:
    return data.decode(errors="backslashreplace")
