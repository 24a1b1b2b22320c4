"""KAITO's admission rules for a tuning Workspace's data and parameters, as values:
`data_url_error` (0.12+, api/v1beta1/workspace_validation.go validateDataSourceURL) and
`training_config_problems` (api/v1beta1/tuning_config_validation.go, 0.8.1 to 0.12.0), which
KAITO applies to the ConfigMap's training_config.yaml before it admits the Workspace."""

from __future__ import annotations

import ipaddress
import posixpath
from collections.abc import Iterator, Mapping
from typing import Any

from kaito_aks.kaito.go_url import request_uri_host
from kaito_aks.parsed import is_dict
from kaito_aks.problems import Key, Problem, did_you_mean

# ---------------------------------------------------------------- tuning input URLs (0.12+)

_METADATA_HOSTS = ("metadata.google.internal", "metadata.google", "instance-data.ec2.internal")


def _reserved_ip(hostname: str) -> bool:
    """Go's IsLoopback, IsPrivate, IsLinkLocalUnicast or IsLinkLocalMulticast of an IP literal."""
    try:
        ip = ipaddress.ip_address(hostname.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if isinstance(ip, ipaddress.IPv4Address):
        nets = ("127.0.0.0/8", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16", "224.0.0.0/24")
        return any(ip in ipaddress.ip_network(n) for n in nets)
    link_local_multicast = ip.packed[0] == 0xFF and ip.packed[1] & 0x0F == 0x02
    nets6 = ("::1/128", "fc00::/7", "fe80::/10")
    return link_local_multicast or any(ip in ipaddress.ip_network(n) for n in nets6)


def data_url_error(url: str) -> str | None:
    """KAITO 0.12's error for a tuning data URL (validateDataSourceURL), or None."""
    host = request_uri_host(url)
    if not host:
        return "invalid data source URL"
    if not url.lower().startswith(("http:", "https:")):
        return "data source URL must use HTTP or HTTPS"
    hostname = host.lower()
    if hostname == "localhost" or hostname.endswith(".localhost") or hostname in _METADATA_HOSTS:
        return "data source URL must not target a local or metadata endpoint"
    if _reserved_ip(hostname):
        return "data source URL must not target a loopback, private, or link-local address"
    return None


# ---------------------------------------------------------------- training_config.yaml

SECTIONS = ("ModelConfig", "QuantizationConfig", "LoraConfig", "TrainingArguments", "DatasetConfig", "DataCollator")
OUTPUT_BASE = "/mnt"


def _section(config: Mapping[str, Any], name: str) -> tuple[dict[Any, Any] | None, Problem | None]:
    """A section as KAITO searches it (yaml.v2 into a map): (its map, or the problem)."""
    value = config.get(name)
    if value is None or is_dict(value):
        return value, None
    where = (Key("training_config"), Key(name))
    return None, Problem.at(
        where, f"must be a map of parameters, not {value!r} (KAITO cannot search it)", "tuning-config"
    )


def training_config_problems(config: Mapping[str, Any], method: str) -> Iterator[Problem]:
    """What KAITO's webhook denies in training_config.yaml for `method` (lora, qlora); paths are
    relative to the file's top level."""
    body = config.get("training_config")
    if not is_dict(body):
        yield Problem.at(
            (Key("training_config"),),
            "required: a map of sections (KAITO: \"Expected 'training_config' key to contain a map\")",
            "tuning-config",
        )
        return
    for key in body:
        if not isinstance(key, str) or key not in SECTIONS:
            close = did_you_mean(str(key), SECTIONS)
            hint = f"did you mean {close[0]}?" if close else f"KAITO knows {', '.join(SECTIONS)}"
            yield Problem.at(
                (Key("training_config"), Key(str(key))), f"Unrecognized section (KAITO); {hint}", "tuning-config"
            )
    quantization, problem = _section(body, "QuantizationConfig")
    if problem is not None:
        yield problem
    else:
        yield from _quantization(quantization, "QuantizationConfig" in body, method)
    arguments, problem = _section(body, "TrainingArguments")
    if problem is not None:
        yield problem
    elif arguments is not None and "output_dir" in arguments:
        yield from _output_dir(arguments["output_dir"])


def _quantization(section: dict[Any, Any] | None, given: bool, method: str) -> Iterator[Problem]:
    where = (Key("training_config"), Key("QuantizationConfig"))
    flags: dict[str, bool] = {}
    for name in ("load_in_4bit", "load_in_8bit"):
        value = (section or {}).get(name)
        if value is not None and not isinstance(value, bool):
            yield Problem.at(
                (*where, Key(name)),
                f"must be true, false or null, not {value!r} (KAITO: value must be either nil or a boolean)",
                "tuning-config",
            )
            return
        flags[name] = value is True
    if flags["load_in_4bit"] and flags["load_in_8bit"]:
        yield Problem.at(where, "KAITO denies load_in_4bit and load_in_8bit both true; choose one", "tuning-config")
    elif method == "lora" and any(flags.values()):
        yield Problem.at(
            where,
            "KAITO denies load_in_4bit or load_in_8bit true with method lora (that is qlora); set them false, or use "
            "method qlora",
            "tuning-config",
        )
    elif method == "qlora" and not any(flags.values()):
        missing = "" if given else " (the section is missing)"
        yield Problem.at(
            where,
            f"method qlora needs load_in_4bit or load_in_8bit true, as KAITO checks{missing}",
            "tuning-config",
        )


def _output_dir(value: object) -> Iterator[Problem]:
    where = (Key("training_config"), Key("TrainingArguments"), Key("output_dir"))
    if not isinstance(value, str):
        yield Problem.at(where, f"must be text, not {value!r} (KAITO: output_dir is not a string)", "tuning-config")
        return
    # Go's filepath.Join then Clean: an absolute path is joined under the base too.
    clean = posixpath.normpath(OUTPUT_BASE + "/" + value) if value else OUTPUT_BASE
    if clean == OUTPUT_BASE or not clean.startswith(OUTPUT_BASE):
        yield Problem.at(
            where,
            f"must name a directory under {OUTPUT_BASE} (KAITO: Invalid output_dir specified: {value!r}, must be a "
            "directory)",
            "tuning-config",
        )
