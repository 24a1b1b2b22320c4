"""Typed access to the catalogs in kaito_aks/catalog/*.yaml.

Presets, Azure GPU SKUs and per-version chart knowledge live once, as data; validation, the
components, the `models` commands and the tests all read them through this module.
"""

from __future__ import annotations

import difflib
from functools import cache
from pathlib import Path
from typing import Any, Literal, NotRequired, TypedDict, cast

import yaml
from pydantic import Field

from kaito_aks.camel import CamelModel

CATALOG_DIR = Path(__file__).parent


class Preset(CamelModel):
    """A KAITO preset model and what one serving instance of it needs."""

    name: str = ""
    family: str
    gpu_count: int
    model_gib: float = Field(alias="modelGiB")
    disk_gib: int = Field(alias="diskGiB")
    token_limit: int
    distributed: bool = False
    tuning_gib: float | None = Field(default=None, alias="tuningGiB")
    download_at_runtime: bool = False
    gated: bool = False
    bytes_per_token: int
    disallow_lo_ra: bool = Field(default=False, alias="disallowLoRA")
    disable_tensor_parallelism: bool = False
    runtimes: list[Literal["vllm", "transformers"]] = Field(default_factory=lambda: ["vllm", "transformers"])
    removed_in: str | None = None

    @property
    def supports_tuning(self) -> bool:
        return self.tuning_gib is not None


class GpuSku(CamelModel):
    """An Azure GPU VM size; gpu_mem_gib is the total GPU memory of one node."""

    name: str = ""
    gpu_count: int
    gpu_mem_gib: int = Field(alias="gpuMemGiB")
    gpu_model: str
    vendor: Literal["nvidia", "amd"] = "nvidia"
    nvme: bool = False
    removed_in: str | None = None
    unusable: str | None = None

    @property
    def gpu_mem_gib_per_gpu(self) -> float:
        return self.gpu_mem_gib / self.gpu_count


class Price(CamelModel):
    """An hourly on-demand Linux price of one VM size in one region, with where it comes from."""

    usd_per_hour: float
    effective_date: str
    source: str


class NodeProvisioner(CamelModel):
    byo: str
    auto: str


class Toleration(CamelModel):
    key: str
    operator: Literal["Exists", "Equal"]
    value: str | None = None
    effect: str | None = None


class KaitoChart(CamelModel):
    """What kaito-aks knows about one KAITO workspace chart release."""

    version: str = ""
    preset_catalog: str
    sku_catalog: str
    feature_gates: dict[str, bool]
    controller_only_gates: dict[str, bool]
    node_provisioner: NodeProvisioner | None
    replicas: Literal["workspacePerReplica", "inferenceSet"]
    inference_set_api_version: str | None
    spot_toleration: str | None
    accepts_hugging_face_ids: bool
    access_secret_on_any_preset: bool
    served_model_id: Literal["preset", "inferenceSet"]
    subchart_toggles: list[str]
    bundled_gfd_tolerations: list[Toleration]
    bundled_nfd_worker_tolerations: list[Toleration]
    value_keys: list[str]

    @property
    def minor(self) -> tuple[int, int]:
        """(major, minor): for rules a KAITO minor introduced (a later release keeps them)."""
        major, minor = _minor(self.version)[:2]
        return major, minor

    @property
    def sku_names_case_sensitive(self) -> bool:
        """KAITO matched instance types to its SKU table exactly before 0.10, ignoring case since."""
        return _minor(self.version) < (0, 10)

    @property
    def known_gates(self) -> dict[str, bool]:
        """Every gate the controller accepts, with its default."""
        return {**self.controller_only_gates, **self.feature_gates}


class RagEngineChart(CamelModel):
    """What kaito-aks knows about one KAITO ragengine chart release (catalog/ragengine_charts.yaml)."""

    version: str = ""
    api_version: Literal["kaito.sh/v1alpha1", "kaito.sh/v1beta1"]
    sku_catalog: str
    compute_required: bool
    gpu_table_only: bool
    sku_case_sensitive: bool
    inference_service_required: bool
    storage: Literal["flat", "persistentVolume"]
    vector_db: bool
    guardrails: bool
    retrieve_api: bool
    embedding_checked: bool
    dropped_selector_labels: list[str]
    value_keys: list[str]


class GpuOperatorChart(CamelModel):
    version: str = ""
    daemonset_tolerations: list[Toleration]
    nfd_worker_tolerations: list[Toleration]
    value_keys: list[str]


class GpuProvisionerChart(CamelModel):
    """What kaito-aks knows about one gpu-provisioner chart release."""

    version: str = ""
    controller_env: list[str]
    value_keys: list[str]


class GpuProvisionerSource(CamelModel):
    """Where gpu-provisioner comes from and how it signs in to Azure."""

    service_account: str
    role: str
    for_kaito: dict[str, str | None]


class ChartSource(CamelModel):
    repository: str
    chart: str
    release_name: str
    namespace: str


Fields = dict[str, Any]
"""One entry of a catalog file as written (the models above check it)."""


class _PresetsFile(TypedDict):
    presets: dict[str, Fields]
    deprecated: dict[str, str]
    versionOverrides: NotRequired[dict[str, dict[str, Fields]]]  # release -> preset (or "*") -> fields


class _SkusFile(TypedDict):
    skus: dict[str, Fields]
    unusableGpus: NotRequired[dict[str, str]]  # GPU model -> why


class _PricesFile(TypedDict):
    prices: NotRequired[dict[str, dict[str, Fields]] | None]  # region -> VM size -> price


class _ChartsFile(TypedDict):
    repository: str
    chart: str
    releaseName: str
    namespace: str
    versions: dict[str, Fields]


@cache
def _load(name: str) -> dict[str, Any]:
    """One catalog file, read and parsed once per process."""
    return yaml.safe_load((CATALOG_DIR / name).read_text())


def _presets_file() -> _PresetsFile:
    return cast(_PresetsFile, _load("presets.yaml"))


def _charts_file(name: str) -> _ChartsFile:
    return cast(_ChartsFile, _load(name))


def _chart_source(name: str) -> ChartSource:
    fields = ChartSource.model_fields
    return ChartSource.model_validate({k: v for k, v in _load(name).items() if k in fields or _snake(k) in fields})


def _snake(key: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in key)


@cache
def presets(catalog: str = "0.8") -> dict[str, Preset]:
    """Presets as a given KAITO release measures them (catalog: '0.8', '0.12')."""
    every = _all_presets(catalog)
    return {n: p for n, p in every.items() if p.removed_in is None or _minor(catalog) < _minor(p.removed_in)}


def removed_presets(catalog: str) -> dict[str, Preset]:
    """Presets an earlier KAITO release served that this one (catalog: '0.12') no longer does."""
    served = presets(catalog)
    return {n: p for n, p in _all_presets(catalog).items() if n not in served}


@cache
def _all_presets(catalog: str) -> dict[str, Preset]:
    data = _presets_file()
    overrides = data.get("versionOverrides", {}).get(catalog, {})
    every = overrides.get("*", {})
    return {
        name: Preset.model_validate({"name": name, **fields, **every, **overrides.get(name, {})})
        for name, fields in data["presets"].items()
    }


def deprecated_presets() -> dict[str, str]:
    """Preset names KAITO rejects, with the advice to give instead."""
    return dict(_presets_file()["deprecated"])


def closest_presets(name: str, catalog: str = "0.8", n: int = 3) -> list[str]:
    return difflib.get_close_matches(name, list(presets(catalog)), n=n, cutoff=0.4)


@cache
def gpu_skus(catalog: str = "0.8") -> dict[str, GpuSku]:
    """Azure GPU SKUs that a KAITO release (catalog: '0.8', '0.12') accepts."""
    out: dict[str, GpuSku] = {}
    data = cast(_SkusFile, _load("azure_gpu_skus.yaml"))
    unusable = data.get("unusableGpus", {})
    for name, fields in data["skus"].items():
        sku = GpuSku.model_validate({"name": name, **fields})
        if sku.gpu_model in unusable:
            sku = sku.model_copy(update={"unusable": unusable[sku.gpu_model]})
        if sku.removed_in is None or _minor(catalog) < _minor(sku.removed_in):
            out[name] = sku
    return out


def closest_skus(name: str, n: int = 3) -> list[str]:
    """Did-you-mean for a VM size: case-insensitive, ignoring the Standard_ prefix."""
    by_key = {k.lower().removeprefix("standard_"): k for k in all_gpu_skus()}
    key = name.lower().removeprefix("standard_")
    return [by_key[m] for m in difflib.get_close_matches(key, list(by_key), n=n, cutoff=0.6)]


@cache
def prices(region: str) -> dict[str, Price]:
    """VM size -> hourly price in `region` (kaito_aks/catalog/azure_prices.yaml); absent: unpriced."""
    table = (cast(_PricesFile, _load("azure_prices.yaml")).get("prices") or {}).get(region) or {}
    return {size: Price.model_validate(fields) for size, fields in table.items()}


def all_gpu_skus() -> dict[str, GpuSku]:
    """Every GPU SKU kaito-aks knows, whichever KAITO release still accepts it."""
    return gpu_skus("0.0")


def _minor(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def kaito_chart_source() -> ChartSource:
    return _chart_source("kaito_charts.yaml")


@cache
def kaito_charts() -> dict[str, KaitoChart]:
    """Supported KAITO releases, oldest first."""
    versions = _charts_file("kaito_charts.yaml")["versions"]
    ordered = sorted(versions, key=lambda v: tuple(int(p) for p in v.split(".")))
    return {v: KaitoChart.model_validate({"version": v, **versions[v]}) for v in ordered}


def ragengine_chart_source() -> ChartSource:
    return _chart_source("ragengine_charts.yaml")


@cache
def ragengine_charts() -> dict[str, RagEngineChart]:
    """Supported releases of KAITO's RAGEngine operator, oldest first."""
    versions = _charts_file("ragengine_charts.yaml")["versions"]
    ordered = sorted(versions, key=_minor)
    return {v: RagEngineChart.model_validate({"version": v, **versions[v]}) for v in ordered}


def gpu_operator_chart_source() -> ChartSource:
    return _chart_source("gpu_operator_charts.yaml")


@cache
def gpu_operator_charts() -> dict[str, GpuOperatorChart]:
    return {
        v: GpuOperatorChart.model_validate({"version": v, **f})
        for v, f in _charts_file("gpu_operator_charts.yaml")["versions"].items()
    }


def gpu_provisioner_chart_source() -> ChartSource:
    return _chart_source("gpu_provisioner_charts.yaml")


def gpu_provisioner_source() -> GpuProvisionerSource:
    data = _load("gpu_provisioner_charts.yaml")
    return GpuProvisionerSource.model_validate({k: data[k] for k in ("serviceAccount", "role", "forKaito")})


@cache
def gpu_provisioner_charts() -> dict[str, GpuProvisionerChart]:
    return {
        v: GpuProvisionerChart.model_validate({"version": v, **f})
        for v, f in _charts_file("gpu_provisioner_charts.yaml")["versions"].items()
    }


def gpu_provisioner_for_kaito(kaito_version: str) -> str | None:
    """The gpu-provisioner release KAITO's own install path pairs with this KAITO release
    (None: none; KAITO's provisioning runs elsewhere, e.g. in the AKS add-on's control plane)."""
    minor = ".".join(kaito_version.split(".")[:2])
    return gpu_provisioner_source().for_kaito.get(minor)


@cache
def azure_roles() -> dict[str, str]:
    """Built-in Azure role name -> role definition GUID."""
    return dict(cast(dict[str, dict[str, str]], _load("azure_roles.yaml"))["roles"])


class AksAddOn(CamelModel):
    """What AKS's AI toolchain operator add-on runs."""

    kaito_version: str
    source: str


def aks_add_on() -> AksAddOn:
    """The KAITO release the AKS add-on runs, with where Microsoft says so."""
    return AksAddOn.model_validate(_load("aks_add_on.yaml"))
