#!/usr/bin/env python3
"""Derive, from upstream files at a release tag, the facts the tests check kaito-aks against.

The project keeps these facts in the repository (components/tests/upstream/<project>-<version>/), so a plain
clone runs every test; this script is how they are made and refreshed. It reads upstream files
only and writes plain data: no upstream prose (descriptions are stripped) and no code.

    # from a git mirror or clone of the upstream repository, at a tag
    python scripts/upstream_data.py kaito --git <repo> --tag v0.8.1
    # from a directory holding the upstream files at their repository paths (a checkout at
    # the tag), or a subset of them (e.g. ../shared/reference/kaito/v0.8.1); give the commit
    python scripts/upstream_data.py kaito --dir <dir> --tag v0.8.1 --commit d56734a...
    python scripts/upstream_data.py gpu-operator --git <repo> --tag v25.3.4
    # KAITO bundles NVIDIA's gpu-feature-discovery chart, which NVIDIA publishes from the
    # nvidia-device-plugin chart source (same values.yaml and dependencies)
    python scripts/upstream_data.py nvidia-device-plugin --git <k8s-device-plugin repo> --tag v0.17.4
    # the node provisioner KAITO's auto-provisioning mode drives on AKS
    python scripts/upstream_data.py gpu-provisioner --git <gpu-provisioner repo> --tag v0.4.3
    # the CRDs of the serving pieces, from each release's Go module (the module proxy and
    # checksum database, through `go mod download`): gateway-api, istio-api, keda, authorino,
    # authorino-operator, prometheus-operator
    python scripts/upstream_data.py gateway-api --go-module --tag v1.4.1
    # the charts whose values the gateway sets: GAIE's body-based router (its Go module) and istiod
    python scripts/upstream_data.py body-based-routing --go-module --tag v1.3.0
    python scripts/upstream_data.py istiod --git <istio repo> --tag 1.29.6
    # self-hosted Azure Karpenter, KAITO's node provisioner from 0.11 (nodeProvisioner: karpenter)
    python scripts/upstream_data.py karpenter --git <karpenter-provider-azure repo> --tag v1.12.0
    # the charts whose pods' requests the capacity budget counts (catalog/pod_requests.yaml)
    python scripts/upstream_data.py keda-chart --git <kedacore/charts repo> --tag v2.20.2
    python scripts/upstream_data.py keda-kaito-scaler --git <keda-kaito-scaler repo> --tag v0.6.2
    python scripts/upstream_data.py node-feature-discovery --git <node-feature-discovery repo> --tag v0.17.3
    python scripts/upstream_data.py local-csi-driver --git <local-csi-driver repo> --tag v0.3.0
    python scripts/upstream_data.py llm-d-router --git <llm-d-router repo> --tag v0.9.0
    # --check: compare what the sources give with what is committed, write nothing (exit 1 on drift)

What each project yields (files are skipped when the source has no input for them, e.g. a
subset directory has no Go sources):

    provenance.yaml     repository, tag, commit, and the sha256 of every source file read
    chart.yaml          the chart's name, version, appVersion and dependencies
    chart-values.yaml   every value path of the chart's values.yaml with its type and default
    crds/<name>.yaml    KAITO's CRDs (and the gateway extension's its chart ships) as applied to a
                        cluster, descriptions stripped; for a Go module project, its CRDs
    flux2/chart-values.yaml, flux2/chart.yaml   the flux2 chart KAITO bundles for its gateway extension
    ragengine/chart.yaml, ragengine/chart-values.yaml   the same for KAITO's ragengine chart
    presets.yaml        KAITO's preset table: supported_models.yaml and the model catalog (0.11+)
    preset-definitions.yaml  the numbers in the presets' Go definitions (before 0.11)
    model-catalog.yaml  every model of the Hugging Face model catalog (0.11+): licence and the
                        numbers KAITO sizes it by (model_catalog.yaml)
    catalog-rules.yaml  what KAITO's code does with a catalog name (0.11+): the legacy preset
                        names it maps to catalog ids, the models it serves with Transformers, and
                        the models it fine-tunes, with their tuning GPU memory
    skus.yaml           KAITO's Azure GPU SKU table (pkg/sku/azure_sku_handler.go)
    feature-gates.yaml  the feature gates KAITO's controller knows, with their defaults
    service-account.yaml  gpu-provisioner: the service account its controller runs as
    azure-calls.yaml    gpu-provisioner: the Azure SDK clients its code builds and the methods of its
                        agent pool client (the ARM calls its identity must be allowed)
    pod-security.yaml   KAITO: the pod fields its code sets that Pod Security Admission levels
                        judge (by file), and the models whose inference pods mount host paths
    crds/<name>.yaml    Karpenter: its four CRDs (NodePool, NodeClaim, NodeOverlay, AKSNodeClass)
                        as applied to a cluster, descriptions stripped, CEL rules kept
    controller-env.yaml Karpenter: the environment variables its controller reads, and which of
                        them it refuses to start without
    controller-resource-env.yaml  Karpenter: the variables its chart derives from the controller
                        container's own resources (resourceFieldRef), by the resource each reads
    crd-chart.yaml      Karpenter: its karpenter-crd chart (the CRDs as templates, which Helm
                        upgrades), and the CRD each template holds
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import re
import subprocess
import sys
import tarfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "components" / "tests" / "upstream"
REPOSITORIES = {
    "kaito": "https://github.com/kaito-project/kaito",
    "gpu-operator": "https://github.com/NVIDIA/gpu-operator",
    "nvidia-device-plugin": "https://github.com/NVIDIA/k8s-device-plugin",
    "gpu-provisioner": "https://github.com/Azure/gpu-provisioner",
    "gateway-api": "https://github.com/kubernetes-sigs/gateway-api",
    "istio-api": "https://github.com/istio/api",
    "keda": "https://github.com/kedacore/keda",
    "authorino": "https://github.com/Kuadrant/authorino",
    "authorino-operator": "https://github.com/Kuadrant/authorino-operator",
    "prometheus-operator": "https://github.com/prometheus-operator/prometheus-operator",
    "body-based-routing": "https://github.com/kubernetes-sigs/gateway-api-inference-extension",
    "istiod": "https://github.com/istio/istio",
    "karpenter": "https://github.com/Azure/karpenter-provider-azure",
    "keda-chart": "https://github.com/kedacore/charts",
    "keda-kaito-scaler": "https://github.com/kaito-project/keda-kaito-scaler",
    "node-feature-discovery": "https://github.com/kubernetes-sigs/node-feature-discovery",
    "local-csi-driver": "https://github.com/Azure/local-csi-driver",
    "llm-d-router": "https://github.com/llm-d/llm-d-router",
}


# ---------------------------------------------------------------------------------- sources


@dataclass
class Source:
    """Upstream files at one tag: from a git repository (`git show tag:path`) or a directory.
    Every file read is remembered with its sha256 for the provenance file."""

    tag: str
    commit: str
    git: Path | None = None
    directory: Path | None = None
    read_files: dict[str, str] = field(default_factory=dict)

    def read(self, *candidates: str) -> tuple[str, str] | None:
        """(upstream path, text) of the first candidate that exists. Candidates are upstream
        repository paths; a directory source may also hold a file at a shorter path (the part
        after `|`), as ../shared/reference does for the GPU Operator chart."""
        for candidate in candidates:
            upstream, _, short = candidate.partition("|")
            data = self._read(upstream) or (self._read(short) if short else None)
            if data is not None:
                self.read_files[upstream] = hashlib.sha256(data).hexdigest()
                return upstream, data.decode()
        return None

    def read_bytes(self, path: str) -> bytes | None:
        """A binary file (a bundled chart archive) at its upstream path, remembered like `read`."""
        data = self._read(path)
        if data is not None:
            self.read_files[path] = hashlib.sha256(data).hexdigest()
        return data

    def listdir(self, path: str) -> list[str]:
        if self.git is not None:
            out = _git(self.git, "ls-tree", "-r", "--name-only", self.tag, "--", path, check=False)
            return sorted(out.splitlines())
        assert self.directory is not None
        base = self.directory / path
        return (
            sorted(str(p.relative_to(self.directory)) for p in base.rglob("*") if p.is_file()) if base.is_dir() else []
        )

    def _read(self, path: str) -> bytes | None:
        if self.git is not None:
            result = subprocess.run(
                ["git", "-C", str(self.git), "show", f"{self.tag}:{path}"], capture_output=True, check=False
            )
            return result.stdout if result.returncode == 0 else None
        assert self.directory is not None
        p = self.directory / path
        return p.read_bytes() if p.is_file() else None


def _git(repo: Path, *args: str, check: bool = True) -> str:
    result = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)
    if check and result.returncode != 0:
        raise SystemExit(f"git {' '.join(args)} failed in {repo}: {result.stderr.strip()}")
    return result.stdout


# ---------------------------------------------------------------------------------- helpers


def strip_descriptions(schema: Any) -> Any:
    """An OpenAPI schema without its prose: `description` of every schema node is dropped; a
    property that happens to be called `description` is kept."""
    if isinstance(schema, list):
        return [strip_descriptions(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "description" and isinstance(value, str):
            continue
        if key in ("properties", "patternProperties", "definitions") and isinstance(value, dict):
            out[key] = {name: strip_descriptions(sub) for name, sub in value.items()}
        else:
            out[key] = strip_descriptions(value)
    return out


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, list):
        return "list"
    return "map"


def value_paths(values: Any, prefix: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Every leaf of a chart's values (an empty map and a list are leaves) as {path, type, default}."""
    if isinstance(values, dict) and values:
        out = []
        for key, value in values.items():
            out += value_paths(value, (*prefix, str(key)))
        return out
    return [{"path": list(prefix), "type": type_name(values), "default": values}]


def chart_facts(chart_yaml: str) -> dict[str, Any]:
    chart = yaml.safe_load(chart_yaml)
    return {
        "name": chart["name"],
        "version": str(chart["version"]),
        "appVersion": str(chart.get("appVersion", "")),
        "dependencies": [
            {k: d[k] for k in ("name", "version", "repository", "condition") if k in d}
            for d in chart.get("dependencies") or []
        ],
    }


def quantity_gib(text: str) -> float:
    """A Kubernetes quantity in GiB ("13.44Gi", "90Gi", "512Mi")."""
    m = re.fullmatch(r"([0-9.]+)(Gi|Mi|Ti)?", text.strip())
    if m is None:
        raise ValueError(f"not a quantity: {text!r}")
    scale = {"Gi": 1.0, "Mi": 1 / 1024, "Ti": 1024.0, None: 1 / 1024**3}[m.group(2)]
    return round(float(m.group(1)) * scale, 4)


# ---------------------------------------------------------------------------------- KAITO

KAITO_CRDS = {
    "workspaces.kaito.sh": (
        "charts/kaito/workspace/crds/kaito.sh_workspaces.yaml",
        "config/crd/bases/kaito.sh_workspaces.yaml",
    ),
    "inferencesets.kaito.sh": (
        "charts/kaito/workspace/crds/kaito.sh_inferencesets.yaml",
        "config/crd/bases/kaito.sh_inferencesets.yaml",
    ),
    # The Gateway API Inference Extension's CRDs KAITO's chart ships in crds/ (0.8 to 0.12,
    # bundle-version v1.0.1): Helm installs them with KAITO's first install.
    "inferencepools.inference.networking.k8s.io": (
        "charts/kaito/workspace/crds/inference.networking.k8s.io_inferencepools.yaml",
    ),
    "inferenceobjectives.inference.networking.x-k8s.io": (
        "charts/kaito/workspace/crds/inference.networking.x-k8s.io_inferenceobjectives.yaml",
    ),
    # KAITO's ModelMirror (0.11+, cluster-scoped): what its workspace controller makes for each
    # streaming model (the workspace chart's templates/ carry the same file)
    "modelmirrors.kaito.sh": ("config/crd/bases/kaito.sh_modelmirrors.yaml",),
    # the ragengine chart's CRD: under its crds/ up to 0.9.0, a template since 0.9.1 (identical
    # to config/crd/bases, which the reference folders hold)
    "ragengines.kaito.sh": (
        "charts/kaito/ragengine/crds/kaito.sh_ragengines.yaml",
        "config/crd/bases/kaito.sh_ragengines.yaml",
    ),
}
KAITO_VALUES = "charts/kaito/workspace/values.yaml"
KAITO_CHART = "charts/kaito/workspace/Chart.yaml"
# KAITO's second operator, the RAGEngine controller: its own chart beside the workspace chart
RAGENGINE_VALUES = "charts/kaito/ragengine/values.yaml"
RAGENGINE_CHART = "charts/kaito/ragengine/Chart.yaml"
MODELS = "presets/workspace/models"


def crd_manifest(text: str) -> dict[str, Any]:
    crd = yaml.safe_load(text)
    spec = dict(crd["spec"])
    spec["versions"] = [
        {**v, "schema": {"openAPIV3Schema": strip_descriptions(v["schema"]["openAPIV3Schema"])}} if "schema" in v else v
        for v in spec["versions"]
    ]
    spec["versions"] = [
        {
            **v,
            "additionalPrinterColumns": [
                {k: c[k] for k in c if k != "description"} for c in v.get("additionalPrinterColumns", [])
            ],
        }
        if "additionalPrinterColumns" in v
        else v
        for v in spec["versions"]
    ]
    metadata: dict[str, Any] = {"name": crd["metadata"]["name"]}
    approved = (crd["metadata"].get("annotations") or {}).get(API_APPROVED)
    if approved is not None:  # the API server refuses a CRD of a *.k8s.io group without it
        metadata["annotations"] = {API_APPROVED: approved}
    return {"apiVersion": crd["apiVersion"], "kind": crd["kind"], "metadata": metadata, "spec": spec}


API_APPROVED = "api-approved.kubernetes.io"


def go_string_consts(text: str) -> dict[str, str]:
    """`Name = "value"` and `Name = Other + "-suffix"` constants of a Go file."""
    consts: dict[str, str] = {}
    for name, expr in re.findall(r"^\s*([A-Z][A-Za-z0-9_]*)\s*=\s*(.+?)\s*$", text, re.M):
        parts = [p.strip() for p in expr.split("+")]
        value = ""
        for part in parts:
            if part.startswith('"') and part.endswith('"'):
                value += part[1:-1]
            elif part in consts:
                value += consts[part]
            else:
                value = None  # type: ignore[assignment]
                break
        if value is not None:
            consts[name] = value
    return consts


def go_func_bodies(text: str, method: str) -> dict[str, str]:
    """Receiver type -> body of `func (*T) method(...)`, found by brace matching."""
    out = {}
    for m in re.finditer(rf"func \((?:\w+\s+)?\*?(\w+)\) {method}\([^)]*\)[^{{]*\{{", text):
        depth, i = 1, m.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        out[m.group(1)] = text[m.end() : i - 1]
    return out


def go_method_bodies(text: str, receiver: str) -> dict[str, str]:
    """Method name -> body of every `func (p *receiver) Name(...)`, found by brace matching."""
    out = {}
    for m in re.finditer(rf"func \((?:\w+\s+)?\*?{receiver}\) (\w+)\([^)]*\)[^{{]*\{{", text):
        depth, i = 1, m.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        out[m.group(1)] = text[m.end() : i - 1]
    return out


def go_model_definitions(text: str) -> dict[str, dict[str, Any]]:
    """Preset name -> the numbers of its Go definition (KAITO before 0.11)."""
    text = re.sub(r"^\s*//.*$", "", text, flags=re.M)  # commented-out fields are not facts
    consts = go_string_consts(text)
    inference = go_func_bodies(text, "GetInferenceParameters")
    tuning = go_func_bodies(text, "GetTuningParameters")
    distributed = go_func_bodies(text, "SupportDistributedInference")
    tunable = go_func_bodies(text, "SupportTuning")
    # The name a type is registered under (plugin.Registration{Name: C, Instance: &v}, var v T):
    # KAITO serves that name with T's parameters, whatever metadata T reads (0.6's deepseekV3
    # reads deepseek-r1-0528's).
    types = dict(re.findall(r"^var (\w+)\s+(\w+)\s*$", text, re.M))
    registered = {
        types[var]: consts[const]
        for const, var in re.findall(r"Name:\s*(\w+),\s*Instance:\s*&(\w+)", text)
        if var in types and const in consts
    }
    presets: dict[str, dict[str, Any]] = {}
    for receiver, body in inference.items():
        name_ref = re.search(r"metadata\.MustGet\((\w+)\)", body)
        if name_ref is None:
            continue
        name = registered.get(receiver, consts[name_ref.group(1)])
        entry: dict[str, Any] = {
            "gpuCount": int(_go_field(body, "GPUCountRequirement", str)),
            **_memory_fields(body),
            "diskGiB": quantity_gib(_go_field(body, "DiskStorageRequirement", str)),
            "bytesPerToken": _go_field(body, "BytesPerToken", int, default=None),
            "tokenLimit": _go_field(body, "ModelTokenLimit", int, default=None),
            "disallowLoRA": _go_field(body, "DisallowLoRA", bool, default=False),
            "disableTensorParallelism": _go_field(body, "DisableTensorParallelism", bool, default=False),
            "distributed": "return true" in distributed.get(receiver, ""),
        }
        tuning_body = tuning.get(receiver, "")
        if "return true" in tunable.get(receiver, "") and "PresetParam{" in tuning_body:
            per_gpu = re.search(r"TuningPerGPUMemoryRequirement:\s*map\[string\]int\{([^}]*)\}", tuning_body)
            entry["tuning"] = {
                **_memory_fields(tuning_body),
                "gpuCount": int(_go_field(tuning_body, "GPUCountRequirement", str)),
                "perGpuMemoryGiB": {k: int(v) for k, v in re.findall(r'"(\w+)":\s*(\d+)', per_gpu.group(1))}
                if per_gpu
                else {},
            }
        presets[name] = entry
    return presets


def _memory_fields(body: str) -> dict[str, float]:
    """What a preset needs of GPU memory: the weights' size (TotalSafeTensorFileSize, 0.8+), or
    before that the total and per-GPU memory KAITO required (TotalGPUMemoryRequirement,
    PerGPUMemoryRequirement, up to 0.7)."""
    size = _go_field(body, "TotalSafeTensorFileSize", str, default=None)
    if size is not None:
        return {"modelGiB": quantity_gib(size)}
    out = {"totalGpuMemoryGiB": quantity_gib(_go_field(body, "TotalGPUMemoryRequirement", str))}
    per_gpu = _go_field(body, "PerGPUMemoryRequirement", str, default=None)
    if per_gpu is not None:
        out["perGpuMemoryGiB"] = quantity_gib(per_gpu)
    return out


def _go_field(body: str, name: str, kind: type, default: Any = ...) -> Any:
    m = re.search(rf"\b{name}:\s*([^,\n]+),", body)
    if m is None:
        if default is ...:
            raise ValueError(f"field {name} not found")
        return default
    raw = m.group(1).strip()
    if kind is str:
        return raw.strip('"')
    if kind is bool:
        return raw == "true"
    return kind(raw)


def kaito_presets(src: Source) -> dict[str, Any] | None:
    found = src.read(f"{MODELS}/supported_models.yaml")
    if found is None:
        return None
    supported = yaml.safe_load(found[1])["models"]
    catalog = src.read(f"{MODELS}/model_catalog.yaml")
    by_hf_id = {}
    if catalog is not None:
        for m in yaml.safe_load(catalog[1])["models"]:
            by_hf_id[m["name"].lower()] = {
                "modelGiB": quantity_gib(m["modelFileSize"]),
                "tokenLimit": m.get("modelTokenLimit"),
                "hiddenSize": m.get("hiddenSize"),
                "numHiddenLayers": m.get("numHiddenLayers"),
                "numAttentionHeads": m.get("numAttentionHeads"),
                "numKeyValueHeads": m.get("numKeyValueHeads"),
                "architectures": m.get("architectures"),
            }
    presets = {}
    for m in supported:
        if m["name"] == "base":
            continue
        hf = re.match(r"https://huggingface\.co/([^/]+/[^/]+)", str(m.get("version", "")))
        entry: dict[str, Any] = {
            "type": m.get("type"),
            "runtime": m.get("runtime"),
            "huggingFaceId": hf.group(1) if hf else None,
            "downloadAtRuntime": bool(m.get("downloadAtRuntime")),
            "downloadAuthRequired": bool(m.get("downloadAuthRequired")),
            "deprecated": bool(m.get("deprecated")),
        }
        if hf and hf.group(1).lower() in by_hf_id:
            entry["catalog"] = by_hf_id[hf.group(1).lower()]
        presets[m["name"]] = entry
    return {"presets": presets}


def kaito_preset_definitions(src: Source) -> dict[str, Any] | None:
    """The numbers in the presets' Go definitions (presets/workspace/models/<family>/model.go),
    which KAITO sized presets by before its model catalog (0.11)."""
    definitions: dict[str, dict[str, Any]] = {}
    for path in src.listdir(MODELS):
        if path.endswith("/model.go"):
            got = src.read(path)
            if got is not None:
                definitions.update(go_model_definitions(got[1]))
    return {"presets": dict(sorted(definitions.items()))} if definitions else None


def kaito_skus(src: Source) -> dict[str, Any] | None:
    found = src.read("pkg/sku/azure_sku_handler.go")
    if found is None:
        return None
    skus = {}
    for line in found[1].splitlines():
        line = line.strip()
        if not line.startswith('{SKU: "'):
            continue
        fields = dict(re.findall(r'(\w+):\s*("[^"]*"|resource\.MustParse\("[^"]*"\)|[0-9.]+|true|false)', line))
        name = fields.pop("SKU").strip('"')
        mem = (
            fields.get("GPUMemGiB")
            or fields.get("GPUMemGB")
            or re.sub(r'resource\.MustParse\("([^"]*)"\)', r"\1", fields.get("GPUMem", ""))
        )
        skus[name] = {
            "gpuCount": int(fields["GPUCount"]),
            "gpuMemGiB": quantity_gib(mem) if mem.endswith("i") else int(mem),
            "gpuModel": fields["GPUModel"].strip('"'),
            "nvme": fields.get("NVMeDiskEnabled") == "true",
            **(
                {"cudaComputeCapability": float(fields["CUDAComputeCapability"])}
                if "CUDAComputeCapability" in fields
                else {}
            ),
        }
    return {"skus": skus}


# The catalog fields KAITO sizes a model by (presets/workspace/generator: loadFromCatalog and
# calculateKVCacheTokenSize read these and nothing else), with the licence.
CATALOG_FIELDS = (
    "license",
    "modelFileSize",
    "modelTokenLimit",
    "hiddenSize",
    "numHiddenLayers",
    "numAttentionHeads",
    "numKeyValueHeads",
    "headDim",
    "kvLoraRank",
    "qkRopeHeadDim",
    "quantMethod",
    "quantBits",
    "architectures",
)


def kaito_model_catalog(src: Source) -> dict[str, Any] | None:
    """Every model of KAITO's Hugging Face model catalog, by its id as the catalog writes it."""
    found = src.read(f"{MODELS}/model_catalog.yaml")
    if found is None:
        return None
    models = {}
    for m in yaml.safe_load(found[1])["models"]:
        models[m["name"]] = {k: m[k] for k in CATALOG_FIELDS if m.get(k) not in (None, "", 0)}
    return {"models": models}


def _go_map_body(text: str, var: str) -> str:
    """The body of `var <var> = map[...]...{ ... }`, by brace matching, comments removed."""
    text = re.sub(r"^\s*//.*$", "", text, flags=re.M)
    m = re.search(rf"\bvar {var}\s*=\s*map\[[^\]]*\][^{{]*\{{", text)
    if m is None:
        raise SystemExit(f"no map {var}")
    depth, i = 1, m.end()
    while depth:
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
    return text[m.end() : i - 1]


def _go_map_entries(body: str) -> dict[str, str]:
    """Top-level `"key": { ... }` entries of a Go map literal's body."""
    out: dict[str, str] = {}
    for m in re.finditer(r'^\t"([^"]+)":\s*\{', body, re.M):
        depth, i = 1, m.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(body[i], 0)
            i += 1
        out[m.group(1)] = body[m.end() : i - 1]
    return out


def kaito_catalog_rules(src: Source) -> dict[str, Any] | None:
    """What KAITO's code does with a catalog name (0.11+): a legacy preset name is lower-cased
    and mapped to a catalog id (pkg/utils/plugin LegacyBuiltinToCatalog); a model is served by
    the Transformers runtime when its short name (the id's last segment, lower case) has a base
    command in TransformerInferenceParameters, and is fine-tuned when it is a key of
    TransformerTuningParameters (with that entry's TotalSafeTensorFileSize as tuning memory)."""
    if src.read(f"{MODELS}/model_catalog.yaml") is None:
        return None  # before the catalog: presets are Go definitions (preset-definitions.yaml)
    plugin = src.read("pkg/utils/plugin/plugin.go")
    inference = src.read(f"{MODELS}/transformer_runtime_inference_parameters.go")
    tuning = src.read(f"{MODELS}/transformer_runtime_tuning_parameters.go")
    if plugin is None or inference is None or tuning is None:
        return None  # a folder with the catalog but not the Go sources (e.g. ../shared/reference)
    legacy = dict(re.findall(r'"([^"]+)":\s*"([^"]+)"', _go_map_body(plugin[1], "LegacyBuiltinToCatalog")))
    transformers = [
        name
        for name, body in _go_map_entries(_go_map_body(inference[1], "TransformerInferenceParameters")).items()
        if re.search(r'BaseCommand:\s*("[^"]+"|\w+)', body)
    ]
    tunable = {
        name: {"modelGiB": quantity_gib(_go_field(body, "TotalSafeTensorFileSize", str))}
        for name, body in _go_map_entries(_go_map_body(tuning[1], "TransformerTuningParameters")).items()
    }
    return {"legacyAliases": legacy, "transformers": transformers, "tuning": tunable}


def kaito_feature_gates(src: Source) -> dict[str, Any] | None:
    gates = src.read("pkg/featuregates/featuregates.go")
    consts = src.read("pkg/utils/consts/consts.go")
    if gates is None or consts is None:
        return None
    names = go_string_consts(consts[1])
    table = re.search(r"FeatureGates = map\[string\]bool\{(.*?)\n\t\}", gates[1], re.S)
    if table is None:
        raise SystemExit("pkg/featuregates/featuregates.go: no FeatureGates table")
    return {
        "featureGates": {names[n]: v == "true" for n, v in re.findall(r"consts\.(\w+):\s*(true|false)", table.group(1))}
    }


# Pod fields the Pod Security Standards judge (kubernetes.io/docs/concepts/security/pod-security-standards):
# KAITO's code setting none of them is what lets its pods run under the baseline level.
POD_SECURITY_FIELDS = ("SecurityContext", "Privileged", "HostNetwork", "HostPID", "HostIPC", "HostPort", "HostPath")
INTERFACE = "pkg/model/interface.go"
PRESET_INFERENCES = "pkg/workspace/inference/preset_inferences.go"


def _go_sources(src: Source, *roots: str) -> list[str]:
    """The non-test Go files under `roots` (test doubles under pkg/fake left out)."""
    return [
        p
        for root in roots
        for p in src.listdir(root)
        if p.endswith(".go") and not p.endswith("_test.go") and "/fake/" not in p
    ]


def kaito_pod_security(src: Source) -> dict[str, Any] | None:
    """Where KAITO's code (pkg/) sets a pod field the Pod Security Standards judge, by field and
    file; and the models whose inference pods 0.12 gives the node's CUDA toolkit as a hostPath
    volume (RequiresCUDAToolkit: the architectures of RequiresDeepGEMM and the names of
    RequiresFlashInfer, pkg/model/interface.go), with the node path (preset_inferences.go)."""
    files = _go_sources(src, "pkg")
    if not files:
        return None
    fields: dict[str, list[str]] = {}
    for path in files:
        found = src.read(path)
        assert found is not None
        for name in POD_SECURITY_FIELDS:
            if re.search(rf"\b{name}:|\.{name}\s*=[^=]", found[1]):
                fields.setdefault(name, []).append(path)
    data: dict[str, Any] = {"podFields": {name: fields.get(name, []) for name in POD_SECURITY_FIELDS}}
    interface = src.read(INTERFACE)
    inferences = src.read(PRESET_INFERENCES)
    bodies = go_method_bodies(interface[1], "PresetParam") if interface else {}
    if "RequiresCUDAToolkit" in bodies and inferences is not None:
        path = re.search(r'defaultCudaHomePath\s*=\s*"([^"]+)"', inferences[1])
        data["cudaToolkitHostPath"] = {
            "path": path[1] if path else None,
            "architectures": re.findall(r'"(\w+)"', bodies.get("RequiresDeepGEMM", "")),
            "presetNames": re.findall(r'"([\w.-]+)"', bodies.get("RequiresFlashInfer", "")),
        }
    return data


def derive_kaito(src: Source) -> dict[str, Any]:
    files: dict[str, Any] = {}
    for name, candidates in KAITO_CRDS.items():
        found = src.read(*candidates)
        if found is not None:
            files[f"crds/{name}.yaml"] = crd_manifest(found[1])
    values = src.read(KAITO_VALUES)
    if values is not None:
        files["chart-values.yaml"] = {"values": value_paths(yaml.safe_load(values[1]))}
    chart = src.read(KAITO_CHART)
    if chart is not None:
        files["chart.yaml"] = chart_facts(chart[1])
    rag_values = src.read(RAGENGINE_VALUES)
    if rag_values is not None:
        files["ragengine/chart-values.yaml"] = {"values": value_paths(yaml.safe_load(rag_values[1]))}
    rag_chart = src.read(RAGENGINE_CHART)
    if rag_chart is not None:
        files["ragengine/chart.yaml"] = chart_facts(rag_chart[1])
    for name, derive in (
        ("presets.yaml", kaito_presets),
        ("preset-definitions.yaml", kaito_preset_definitions),
        ("skus.yaml", kaito_skus),
        ("model-catalog.yaml", kaito_model_catalog),
        ("catalog-rules.yaml", kaito_catalog_rules),
    ):
        data = derive(src)
        if data is not None:
            files[name] = data
    gates = kaito_feature_gates(src)
    if gates is not None:
        files["feature-gates.yaml"] = gates
    pod_security = kaito_pod_security(src)
    if pod_security is not None:
        files["pod-security.yaml"] = pod_security
    files.update(bundled_chart(src, KAITO_SUBCHARTS, "flux2"))
    return files


KAITO_SUBCHARTS = "charts/kaito/workspace/charts"


def bundled_chart(src: Source, charts_dir: str, name: str) -> dict[str, Any]:
    """A subchart bundled as an archive (charts/<name>-<version>.tgz): its values and Chart.yaml,
    under <name>/ (KAITO bundles flux2 for its gateway extension)."""
    archives = [f for f in src.listdir(charts_dir) if re.fullmatch(rf"{re.escape(charts_dir)}/{name}-[\w.]+\.tgz", f)]
    if len(archives) != 1:
        return {}
    data = src.read_bytes(archives[0])
    if data is None:
        return {}
    files: dict[str, Any] = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        for member, out in ((f"{name}/values.yaml", "chart-values.yaml"), (f"{name}/Chart.yaml", "chart.yaml")):
            extracted = archive.extractfile(member)
            if extracted is None:
                continue
            text = extracted.read().decode()
            files[f"{name}/{out}"] = (
                {"values": value_paths(yaml.safe_load(text))} if out == "chart-values.yaml" else chart_facts(text)
            )
    return files


# ---------------------------------------------------------------------------------- charts


def chart_deriver(chart_dir: str) -> Callable[[Source], dict[str, Any]]:
    """A Helm chart's values and Chart.yaml; a directory source may hold them at its top."""

    def derive(src: Source) -> dict[str, Any]:
        files: dict[str, Any] = {}
        values = src.read(f"{chart_dir}/values.yaml|values.yaml")
        if values is not None:
            files["chart-values.yaml"] = {"values": value_paths(yaml.safe_load(values[1]))}
        chart = src.read(f"{chart_dir}/Chart.yaml|Chart.yaml")
        if chart is not None:
            files["chart.yaml"] = chart_facts(chart[1])
        return files

    return derive


GPU_PROVISIONER_CHART = "charts/gpu-provisioner"


def derive_gpu_provisioner(src: Source) -> dict[str, Any]:
    """The chart, and the service account its controller runs as: the template fixes the name
    (no value sets it), and a workload identity's federated credential must name it exactly."""
    files = chart_deriver(GPU_PROVISIONER_CHART)(src)
    found = src.read(f"{GPU_PROVISIONER_CHART}/templates/serviceaccount.yaml")
    if found is not None:
        text = found[1]
        name = re.search(r"^kind: ServiceAccount\nmetadata:\n  name: ([\w.-]+)$", text, re.M)
        annotations = re.findall(r"^    ([\w./-]+): \{\{ \.Values\.([\w.]+) \}\}$", text, re.M)
        files["service-account.yaml"] = {
            "name": name[1] if name else None,
            "namespace": "the release namespace" if "namespace: {{ .Release.Namespace }}" in text else None,
            "annotationsFromValues": {key: value for key, value in annotations},
        }
    calls = gpu_provisioner_azure_calls(src)
    if calls is not None:
        files["azure-calls.yaml"] = calls
    return files


AZURE_CLIENT = "pkg/providers/instance/azure_client.go"


def gpu_provisioner_azure_calls(src: Source) -> dict[str, Any] | None:
    """The Azure SDK clients gpu-provisioner's code builds (every `arm<pkg>.New<X>Client(` in its
    non-test Go files under pkg/ and cmd/), and the methods of its AgentPoolsAPI interface (the
    only calls it makes through that client): what its identity's role must allow."""
    files = _go_sources(src, "pkg", "cmd")
    if not files:
        return None
    clients: dict[str, list[str]] = {}
    for path in files:
        found = src.read(path)
        assert found is not None
        for client in re.findall(r"\b(arm\w+\.New\w+Client)\(", found[1]):
            clients.setdefault(client, []).append(path)
    interface = src.read(AZURE_CLIENT)
    methods: list[str] = []
    if interface is not None:
        body = re.search(r"type AgentPoolsAPI interface \{(.*?)\n\}", interface[1], re.S)
        methods = re.findall(r"^\s*(\w+)\(", body[1], re.M) if body else []
    return {"clients": clients, "agentPoolsApi": methods}


KARPENTER_CHART = "charts/karpenter"
KARPENTER_CRDS = "pkg/apis/crds"  # charts/karpenter/crds/* are symlinks to these
KARPENTER_OPTIONS = "pkg/operator/options/options.go"
KARPENTER_VALIDATION = "pkg/operator/options/options_validation.go"
KARPENTER_AUTH = "pkg/auth/config.go"
KARPENTER_DEPLOYMENT = "charts/karpenter/templates/deployment.yaml"
KARPENTER_CRD_CHART = "charts/karpenter-crd"  # the CRDs as Helm templates, which `helm upgrade` upgrades


def derive_karpenter(src: Source) -> dict[str, Any]:
    """The chart, its CRDs and the controller's environment: what it reads (each flag of
    options.go falls back to the environment variable of its upper-cased name, pkg/auth/config.go
    reads its own) and what it refuses to start without (validateRequiredFields; a subscription
    for the Azure client)."""
    files = chart_deriver(KARPENTER_CHART)(src)
    for path in src.listdir(KARPENTER_CRDS):
        found = src.read(path) if path.endswith(".yaml") else None
        if found is not None:
            crd = crd_manifest(found[1])
            files[f"crds/{crd['metadata']['name']}.yaml"] = crd
    options, validation, auth = src.read(KARPENTER_OPTIONS), src.read(KARPENTER_VALIDATION), src.read(KARPENTER_AUTH)
    if options is not None and validation is not None and auth is not None:
        flags = dict(re.findall(r'fs\.\w+\(&o\.\w+, "([a-z0-9-]+)", env\.WithDefault\w+\("([A-Z0-9_]+)"', options[1]))
        reads = set(re.findall(r'WithDefault\w+\("([A-Z0-9_]+)"', options[1]))
        reads |= set(re.findall(r'os\.Getenv\("([A-Z0-9_]+)"\)', auth[1]))
        body = re.search(r"func \(o \*Options\) validateRequiredFields\(\) error \{(.*?)\n\}", validation[1], re.S)
        required = [flags[f] for f in re.findall(r'missing field, ([a-z0-9-]+)"', body.group(1) if body else "")]
        if re.search(r'\{cfg\.SubscriptionID, "subscription ID"\}', auth[1]):
            required.append("AZURE_SUBSCRIPTION_ID")
        files["controller-env.yaml"] = {"reads": sorted(reads), "required": required}
    deployment = src.read(KARPENTER_DEPLOYMENT)
    if deployment is not None:
        # the controller's environment the chart derives from its own resources (resourceFieldRef)
        derived = re.findall(
            r"- name: ([A-Z_]+)\n\s+valueFrom:\n\s+resourceFieldRef:\n(?:\s+\w+: .*\n)*?\s+resource: ([a-z.]+)",
            deployment[1],
        )
        files["controller-resource-env.yaml"] = dict(derived)
    crd_chart = src.read(f"{KARPENTER_CRD_CHART}/Chart.yaml")
    if crd_chart is not None:
        templates: list[dict[str, Any]] = []
        for path in src.listdir(f"{KARPENTER_CRD_CHART}/templates"):
            found = src.read(path) if path.endswith(".yaml") else None
            if found is not None:
                crd = crd_manifest(found[1])
                name = crd["metadata"]["name"]
                templates.append(
                    {
                        "crd": name,
                        # the template is the CRD alone (no Helm expression in it) ...
                        "templated": "{{" in found[1],
                        # ... and the same CRD the karpenter chart's crds/ folder installs
                        "sameAsChartCrd": files.get(f"crds/{name}.yaml") == crd,
                    }
                )
        files["crd-chart.yaml"] = {**chart_facts(crd_chart[1]), "templates": sorted(templates, key=lambda t: t["crd"])}
    return files


# ---------------------------------------------------------------------------------- CRDs of Go modules

# The CRDs the serving objects are checked against (and the e2e API server installs), from the Go
# module of each project's release: the module proxy serves it, the checksum database vouches for
# it (go mod download), and it holds the CRDs the release's charts and manifests install.
#   project: (module, [(file, CRD names kept (all when empty), JSON patches applied)])
GO_MODULE_CRDS: dict[str, tuple[str, list[tuple[str, tuple[str, ...], tuple[str, ...]]]]] = {
    "gateway-api": (
        "sigs.k8s.io/gateway-api",
        [
            (f"config/crd/standard/gateway.networking.k8s.io_{kind}.yaml", (), ())
            for kind in ("gatewayclasses", "gateways", "httproutes", "referencegrants")
        ],
    ),
    # Istio's CRDs in one file (= its base chart's files/crd-all.gen.yaml): the three our objects use
    "istio-api": (
        "istio.io/api",
        [
            (
                "kubernetes/customresourcedefinitions.gen.yaml",
                (
                    "destinationrules.networking.istio.io",
                    "authorizationpolicies.security.istio.io",
                    "envoyfilters.networking.istio.io",
                ),
                (),
            )
        ],
    ),
    "keda": ("github.com/kedacore/keda/v2", [("config/crd/bases/keda.sh_scaledobjects.yaml", (), ())]),
    # the AuthConfig CRD as its kustomization applies it (with the oneOf patch the operator chart's copy has)
    "authorino": (
        "github.com/kuadrant/authorino",
        [
            (
                "install/crd/authorino.kuadrant.io_authconfigs.yaml",
                (),
                ("install/crd/patches/oneof_in_authconfigs.yaml",),
            )
        ],
    ),
    "authorino-operator": (
        "github.com/kuadrant/authorino-operator",
        [("config/crd/bases/operator.authorino.kuadrant.io_authorinos.yaml", (), ())],
    ),
    # kube-prometheus-stack 88.5.3 runs prometheus-operator v0.93.1
    "prometheus-operator": (
        "github.com/prometheus-operator/prometheus-operator",
        [("example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml", (), ())],
    ),
}
# AKS's managed Prometheus reads the same ServiceMonitor in its own group ("the same ... except for
# a change in the group name", learn.microsoft.com/azure/azure-monitor/containers/prometheus-metrics-scrape-crd);
# its CRD's repository (Azure/prometheus-collector) is not a module the proxy serves, so it is
# derived from prometheus-operator's by renaming the group, and its provenance says so.
RENAMED_GROUPS = {"prometheus-operator": {"monitoring.coreos.com": "azmonitoring.coreos.com"}}


def json_patch(doc: Any, patch: list[dict[str, Any]]) -> Any:
    """RFC 6902 `add` and `replace` (what kustomize patches of CRDs use)."""
    for op in patch:
        if op["op"] not in ("add", "replace"):
            raise SystemExit(f"unsupported JSON patch op {op['op']!r}")
        *parents, leaf = [part.replace("~1", "/").replace("~0", "~") for part in op["path"].split("/")[1:]]
        node = doc
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if isinstance(node, list):
            node.insert(len(node) if leaf == "-" else int(leaf), op["value"])
        else:
            node[leaf] = op["value"]
    return doc


def go_module_deriver(project: str) -> Callable[[Source], dict[str, Any]]:
    _, files = GO_MODULE_CRDS[project]

    def derive(src: Source) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for path, keep, patches in files:
            found = src.read(path)
            if found is None:
                continue
            for doc in yaml.safe_load_all(found[1]):
                if not doc or doc.get("kind") != "CustomResourceDefinition":
                    continue
                if keep and doc["metadata"]["name"] not in keep:
                    continue
                for patch_path in patches:
                    patch = src.read(patch_path)
                    if patch is None:
                        raise SystemExit(f"{patch_path}: missing (it patches {path})")
                    doc = json_patch(doc, yaml.safe_load(patch[1]))
                crd = crd_manifest(yaml.safe_dump(doc))
                out[f"crds/{crd['metadata']['name']}.yaml"] = crd
                for old, new in RENAMED_GROUPS.get(project, {}).items():
                    if crd["spec"]["group"] == old:
                        renamed = json.loads(json.dumps(crd))
                        renamed["spec"]["group"] = new
                        renamed["metadata"]["name"] = crd["metadata"]["name"].replace(old, new)
                        out[f"crds/{renamed['metadata']['name']}.yaml"] = renamed
        return out

    return derive


# Projects read from a Go module that are charts, not CRDs: GAIE's body-based router (the values
# the gateway sets must be the chart's).
GO_MODULE_CHARTS = {
    "body-based-routing": ("sigs.k8s.io/gateway-api-inference-extension", "config/charts/body-based-routing")
}


def go_module_of(project: str) -> str | None:
    if project in GO_MODULE_CRDS:
        return GO_MODULE_CRDS[project][0]
    return GO_MODULE_CHARTS[project][0] if project in GO_MODULE_CHARTS else None


def go_module_source(project: str, tag: str) -> tuple[Source, dict[str, Any]]:
    """The project's module at `tag`, downloaded through the Go module proxy and verified against
    the checksum database by `go mod download` (into the Go module cache), as a directory source;
    and what the download says of it (its go.sum hash, its origin when the proxy names it)."""
    module = go_module_of(project)
    assert module is not None
    result = subprocess.run(
        ["go", "mod", "download", "-json", f"{module}@{tag}"], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise SystemExit(f"go mod download {module}@{tag} failed: {result.stdout or result.stderr}")
    info = json.loads(result.stdout)
    facts = {"module": module, "goSum": info["Sum"], "origin": (info.get("Origin") or {}).get("Hash")}
    return Source(tag=tag, commit=info["Sum"], directory=Path(info["Dir"])), facts


PROJECTS: dict[str, Callable[[Source], dict[str, Any]]] = {
    "kaito": derive_kaito,
    "gpu-operator": chart_deriver("deployments/gpu-operator"),
    "nvidia-device-plugin": chart_deriver("deployments/helm/nvidia-device-plugin"),
    "gpu-provisioner": derive_gpu_provisioner,
    **{project: go_module_deriver(project) for project in GO_MODULE_CRDS},
    **{project: chart_deriver(path) for project, (_, path) in GO_MODULE_CHARTS.items()},
    # istiod's chart: the values the gateway sets on it
    "istiod": chart_deriver("manifests/charts/istio-control/istio-discovery"),
    "karpenter": derive_karpenter,
    # the charts whose pods the capacity budget counts (kaito_aks.capacity, catalog/pod_requests.yaml):
    # KEDA's and keda-kaito-scaler's, the NFD the GPU Operator and KAITO's GFD subchart bundle, the
    # local CSI driver KAITO bundles, and the router library KAITO's endpoint picker is rendered from
    "keda-chart": chart_deriver("keda"),
    "keda-kaito-scaler": chart_deriver("charts/keda-kaito-scaler"),
    "node-feature-discovery": chart_deriver("deployment/helm/node-feature-discovery"),
    "local-csi-driver": chart_deriver("charts/latest"),
    "llm-d-router": chart_deriver("config/charts/routerlib"),
}


# ---------------------------------------------------------------------------------- output


def dump(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False, width=120, allow_unicode=True)


def provenance(project: str, src: Source, version: str, module: dict[str, Any] | None = None) -> dict[str, Any]:
    """Where the data comes from. For a Go module, `commit` is its go.sum hash (h1:, what the
    checksum database verified), `origin` the commit the proxy names when it does."""
    facts: dict[str, Any] = {
        "project": project,
        "repository": REPOSITORIES.get(project) or f"https://proxy.golang.org/{(module or {}).get('module')}",
        "tag": src.tag,
        "version": version,
        "commit": src.commit,
    }
    if module is not None:
        facts |= {"module": module["module"], "origin": module["origin"]}
        renamed = RENAMED_GROUPS.get(project)
        if renamed:
            facts["derived"] = {
                f"crds/*.{new}.yaml": f"the {old} CRD with its group renamed to {new} (its own repository is not a "
                "module the proxy serves)"
                for old, new in renamed.items()
            }
    return facts | {
        "derivedBy": "scripts/upstream_data.py",
        "sources": [{"path": p, "sha256": h} for p, h in sorted(src.read_files.items())],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("project", choices=list(PROJECTS))
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--git", type=Path, help="a git repository (mirror or clone) of the upstream project")
    where.add_argument("--dir", type=Path, help="upstream files at the tag, at their repository paths")
    where.add_argument(
        "--go-module",
        action="store_true",
        help="the project's Go module at the tag, through the Go module proxy (go mod download; projects: "
        + ", ".join(GO_MODULE_CRDS)
        + ")",
    )
    parser.add_argument("--tag", required=True, help="the release tag, e.g. v0.8.1")
    parser.add_argument("--commit", help="the tag's commit (read from the repository with --git)")
    parser.add_argument("--out", type=Path, default=OUT, help=f"where the data goes (default: {OUT})")
    parser.add_argument("--check", action="store_true", help="compare with the committed data; write nothing")
    args = parser.parse_args(argv)

    module = None
    if args.go_module:
        if go_module_of(args.project) is None:
            raise SystemExit(
                f"--go-module: {args.project} is not one of {', '.join([*GO_MODULE_CRDS, *GO_MODULE_CHARTS])}"
            )
        src, module = go_module_source(args.project, args.tag)
    elif args.git is not None:
        commit = _git(args.git, "rev-parse", f"{args.tag}^{{commit}}").strip()
        if args.commit and not commit.startswith(args.commit):
            raise SystemExit(f"--commit {args.commit} is not {args.tag} ({commit})")
        src = Source(tag=args.tag, commit=commit, git=args.git)
    else:
        if not args.commit:
            raise SystemExit("--dir needs --commit (the commit of the tag the files come from)")
        src = Source(tag=args.tag, commit=args.commit, directory=args.dir)

    version = args.tag.removeprefix("v") if args.project in ("kaito", "karpenter") else args.tag
    files = PROJECTS[args.project](src)
    if not files:
        raise SystemExit(f"no {args.project} upstream files found in {args.git or args.dir} at {args.tag}")
    target = args.out / f"{args.project}-{version}"
    rendered = {path: dump(data) for path, data in files.items()}

    if args.check:
        return check(target, rendered, provenance(args.project, src, version, module))
    rendered["provenance.yaml"] = dump(provenance(args.project, src, version, module))
    for path, text in rendered.items():
        out = target / path
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
    print(f"{target.relative_to(ROOT) if target.is_relative_to(ROOT) else target}: {', '.join(sorted(rendered))}")
    return 0


def check(target: Path, rendered: dict[str, str], prov: dict[str, Any]) -> int:
    """What this source gives must equal what is committed, file by file; the committed
    provenance must name the same commit and the same sha256 for each source file read."""
    drift = []
    for path, text in rendered.items():
        committed = target / path
        if not committed.exists():
            drift.append(f"{path}: not committed")
        elif committed.read_text() != text:
            drift.append(f"{path}: differs from the committed file (regenerate it)")
    committed_prov = (
        yaml.safe_load((target / "provenance.yaml").read_text()) if (target / "provenance.yaml").exists() else {}
    )
    if committed_prov.get("commit") != prov["commit"]:
        drift.append(f"provenance.yaml: commit {committed_prov.get('commit')} != {prov['commit']}")
    recorded = {s["path"]: s["sha256"] for s in committed_prov.get("sources", [])}
    for s in prov["sources"]:
        if recorded.get(s["path"]) != s["sha256"]:
            drift.append(f"provenance.yaml: {s['path']} sha256 {recorded.get(s['path'])} != {s['sha256']}")
    for line in drift:
        print(f"{target.name}: {line}", file=sys.stderr)
    if not drift:
        print(f"{target.name}: {len(rendered)} file(s) and {len(prov['sources'])} source hash(es) match")
    return 1 if drift else 0


if __name__ == "__main__":
    sys.exit(main())
