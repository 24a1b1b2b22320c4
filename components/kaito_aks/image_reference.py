"""Image references as github.com/distribution/reference v0.6.0 parses them (`ParseDockerRef`):
KAITO's webhook parses adapter and tuning images so (api/v1beta1/workspace_validation.go,
"Unable to parse input image reference"), and container runtimes every image. The grammar is
the library's (regexp.go, normalize.go); digests as opencontainers/go-digest validates them."""

from __future__ import annotations

import re

_ALPHANUMERIC = r"[a-z0-9]+"
_SEPARATOR = r"(?:[._]|__|[-]+)"
_PATH_COMPONENT = rf"{_ALPHANUMERIC}(?:{_SEPARATOR}{_ALPHANUMERIC})*"
_REMOTE_NAME = rf"{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_HOST = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[(?:[a-fA-F0-9:]+)\])"
_DOMAIN_AND_PORT = rf"{_HOST}(?::[0-9]+)?"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][0-9a-fA-F]{32,}"
_REFERENCE = re.compile(rf"((?:{_DOMAIN_AND_PORT}/)?{_REMOTE_NAME})(?::({_TAG}))?(?:@({_DIGEST}))?", re.ASCII)
_NAME = re.compile(rf"(?:({_DOMAIN_AND_PORT})/)?({_REMOTE_NAME})", re.ASCII)
_IDENTIFIER = re.compile(r"[a-f0-9]{64}")
REPOSITORY_NAME_MAX = 255
# The digest algorithms a Go binary with crypto/sha256 and crypto/sha512 linked has: hex length.
_DIGEST_HEX = {"sha256": 64, "sha384": 96, "sha512": 128}


def _split_docker_domain(name: str) -> tuple[str, str]:
    domain, slash, remote = name.partition("/")
    if not slash:
        domain, remote = "docker.io", name
    elif domain == "index.docker.io":
        domain = "docker.io"
    elif domain != "localhost" and not any(c in domain for c in ".:") and domain.lower() == domain:
        domain, remote = "docker.io", name
    if domain == "docker.io" and "/" not in remote:
        remote = "library/" + remote
    return domain, remote


def _digest_problem(digest: str) -> str | None:
    algorithm, _, encoded = digest.partition(":")
    size = _DIGEST_HEX.get(algorithm)
    if size is None:
        return "unsupported digest algorithm"
    if len(encoded) != size:
        return "invalid checksum digest length"
    return None if re.fullmatch(r"[a-f0-9]+", encoded) else "invalid checksum digest format"


def parse_error(ref: str) -> str | None:
    """The error ParseDockerRef gives for `ref`, or None when it parses."""
    if _IDENTIFIER.fullmatch(ref):
        return f"invalid repository name ({ref}), cannot specify 64-byte hexadecimal strings"
    domain, remainder = _split_docker_domain(ref)
    remote = remainder.split(":", 1)[0]
    if remote.lower() != remote:
        return f"invalid reference format: repository name ({remote}) must be lowercase"
    full = f"{domain}/{remainder}"
    match = _REFERENCE.fullmatch(full)
    if match is None:
        if _REFERENCE.fullmatch(full.lower()):
            return "repository name must be lowercase"
        return "invalid reference format"
    name = _NAME.fullmatch(match[1])
    if name is not None and len(name[2]) > REPOSITORY_NAME_MAX:
        return f"repository name must not be more than {REPOSITORY_NAME_MAX} characters"
    return _digest_problem(match[3]) if match[3] else None


def image_problem(ref: str) -> str | None:
    """What is wrong with an image reference, for `schema.Check`."""
    error = parse_error(ref)
    return (
        None if error is None else f"{ref!r} is not an image reference: {error} (e.g. myacr.azurecr.io/adapters/sql:1)"
    )
