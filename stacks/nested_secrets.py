"""Secrets inside a key of the stack file: `pulumi config set --path --secret` writes a map of one
`secure:` at a config path, and Pulumi then hands the whole key to the program as a secret. The
stack keeps secrets there only where NESTED_SECRETS says (the gateway's API keys and TLS); a
value written in plain text there is refused with the command that sets it as a secret."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from kaito_aks.problems import Key, PathPart, Problem
from kaito_aks.schema import SECRET_SHOWN
from stacks.config import NESTED_SECRETS, PROJECT

# Stands in for a secret where only its presence is known (validate, render).
SECRET_PRESENT = SECRET_SHOWN


def nested_secret(path: tuple[PathPart, ...]) -> bool:
    """Whether a config path is one where a key holds a secret inside it (NESTED_SECRETS)."""
    if not path:
        return False
    inside = tuple(str(p) for p in path[1:])
    patterns = NESTED_SECRETS.get(str(path[0]), ())
    return any(len(q) == len(inside) and all(a in ("*", b) for a, b in zip(q, inside, strict=True)) for q in patterns)


def plaintext_nested_secrets(raw: Mapping[str, Any], encrypted: Collection[str] | None = None) -> list[Problem]:
    """Secrets written in plain text where a key holds them (an API key, a TLS key), refused with
    the command that sets them as secrets. `raw`: a stack file's values (a secret there is a map of
    one `secure:`), or with `encrypted` the engine's, decrypted (then a key Pulumi does not mark
    secret holds none)."""
    problems: list[Problem] = []
    for key, patterns in NESTED_SECRETS.items():
        value = raw.get(key)
        if not isinstance(value, Mapping) or (encrypted is not None and key in encrypted):
            continue
        for pattern in patterns:
            for path, found in _at_pattern(value, pattern):
                if isinstance(found, str) and found != SECRET_PRESENT:
                    where = ".".join((key, *path))
                    problems.append(
                        Problem(
                            (key, *(Key(p) for p in path)),
                            f"must be a secret: run `pulumi config set --path --secret '{PROJECT}:{where}' ...` "
                            "(plaintext ends up in the stack file)",
                            "plaintext-secret",
                        )
                    )
    return problems


def _at_pattern(value: Mapping[str, Any], pattern: tuple[str, ...]) -> list[tuple[tuple[str, ...], Any]]:
    if not pattern:
        return [((), value)]
    head, rest = pattern[0], pattern[1:]
    found: list[tuple[tuple[str, ...], Any]] = []
    keys = list(value) if head == "*" else [head] if head in value else []
    for k in keys:
        v = value[k]
        if not rest:
            found.append(((str(k),), v))
        elif isinstance(v, Mapping):
            found += [((str(k), *p), x) for p, x in _at_pattern(v, rest)]
    return found
