"""Typed access to the catalogs in kaito_aks/catalog/*.yaml.

Presets, Azure GPU SKUs and per-version chart knowledge live once, as data; validation, the
components, the `models` commands and the tests all read them through this module.
"""

from __future__ import annotations

import difflib
from functools import cache
from pathlib import Path
from typing import Any, Literal, NotRequired, TypedDict, TypeVar, cast

import yaml
from pydantic import BaseModel, Field

from kaito_aks.camel import CamelModel
from kaito_aks.catalog import generator

CATALOG_DIR = Path(__file__).parent


class Preset(CamelModel):
    """A model KAITO serves (a preset, or from 0.11 a model of its Hugging Face catalog) and what
    one serving instance of it needs, as one KAITO release measures it."""

    name: str = ""
    family: str
    hugging_face_id: str | None = Field(default=None, alias="huggingFace")
    license: str | None = None
    gpu_count: int
    model_gib: float = Field(alias="modelGiB")
    per_gpu_gib: float = Field(default=0, alias="perGpuGiB")
    disk_gib: int = Field(alias="diskGiB")
    token_limit: int | None = None  # None: not known (KAITO checks no context window then)
    distributed: bool = False
    tuning_gib: float | None = Field(default=None, alias="tuningGiB")
    download_at_runtime: bool = False
    gated: bool = False
    # KAITO's webhook itself asks for a modelAccessSecret (supported_models.yaml downloadAuthRequired,
    # read by the Go presets of 0.8; from 0.11 a catalog model never sets it: KAITO admits it)
    auth_required: bool = Field(default=False, alias="downloadAuthRequired")
    bytes_per_token: int = 0  # 0: not known (releases without the vLLM estimator)
    disallow_lo_ra: bool = Field(default=False, alias="disallowLoRA")
    disable_tensor_parallelism: bool = False
    runtimes: list[Literal["vllm", "transformers"]] = Field(default_factory=lambda: ["vllm", "transformers"])
    added_in: str | None = None
    removed_in: str | None = None

    @property
    def supports_tuning(self) -> bool:
        return self.tuning_gib is not None


class CatalogModel(CamelModel):
    """One model of KAITO's Hugging Face model catalog, with the numbers KAITO sizes it by."""

    id: str = ""
    since: str
    license: str | None = None
    model_file_size: str  # "642.14Gi"
    model_token_limit: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int = 0
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0

    @property
    def model_gib(self) -> float:
        return float(self.model_file_size.removesuffix("Gi"))


class CatalogCode(CamelModel):
    """What one KAITO release's code does with a catalog name (hugging_face_models.yaml)."""

    legacy_aliases: dict[str, str]  # short preset name -> catalog id, lower case
    transformers: list[str]  # short names the Transformers runtime serves
    tuning: dict[str, float]  # short names KAITO fine-tunes -> tuning GPU memory, GiB


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
    compute_capability: float | None = None  # CUDA's, for NVIDIA GPUs

    @property
    def gpu_mem_gib_per_gpu(self) -> float:
        return self.gpu_mem_gib / self.gpu_count


class Price(CamelModel):
    """An hourly on-demand Linux price of one VM size in one region, with where it comes from."""

    usd_per_hour: float
    effective_date: str
    source: str


class NodeProvisioner(CamelModel):
    """The chart's `nodeProvisioner` value per mode: byo, auto (gpu-provisioner), karpenter."""

    byo: str
    auto: str
    karpenter: str


class ComputeCapabilityRule(CamelModel):
    """KAITO's SKU table keeps only GPUs of at least this CUDA compute capability (`source`: where
    its code says so, at the release's tag)."""

    at_least: float
    source: str


class Toleration(CamelModel):
    key: str
    operator: Literal["Exists", "Equal"]
    value: str | None = None
    effect: str | None = None


class EndpointPicker(CamelModel):
    """The endpoint picker KAITO runs beside each InferencePool: its Service and how to reach it."""

    suffix: str
    name_max: int  # the chart truncates the pool name to this many characters before the suffix
    port: int
    tls: Literal["disable", "simple"]  # plaintext, or TLS with a certificate nobody can check
    pod_label: str  # the label key its pods carry (value: its Service's name)


class ServingSupport(CamelModel):
    """What this program serves through one gateway and autoscales on one KAITO release."""

    gate: str
    inference_pool_api_version: str
    pool_suffix: str
    max_routed_name: int
    endpoint_picker: EndpointPicker
    keda_kaito_scaler: str


class KaitoChart(CamelModel):
    """What kaito-aks knows about one KAITO release: its workspace chart, and the rules and
    arithmetic its controller and webhook apply to Workspaces."""

    version: str = ""
    helm_install: bool = True
    installed_by: str | None = None  # who installs it when this program does not (helm_install false)
    preset_catalog: str
    sku_catalog: str
    feature_gates: dict[str, bool]
    controller_only_gates: dict[str, bool]
    node_provisioner: NodeProvisioner | None
    node_classes: dict[str, str] = Field(default_factory=dict[str, str])  # a model's choice -> AKSNodeClass name
    node_class_allow_list: bool = False  # its webhook refuses other node-class-name values
    min_compute_capability: ComputeCapabilityRule | None = None
    node_provisioning_modes: list[Literal["byo", "auto"]] = Field(default_factory=lambda: ["byo", "auto"])
    default_instance_type: str | None = None  # the CRD's instanceType default, when it sizes by it
    replicas: Literal["workspacePerReplica", "inferenceSet"]
    inference_set_api_version: str | None
    spot_toleration: str | None
    accepts_hugging_face_ids: bool
    access_secret_on_any_preset: bool
    secret_for_every_download: bool = False
    tuning_needs_instance_type: bool = True
    served_model_id: Literal["preset", "createdByLabel", "inferenceSet"]
    # KAITO copies a Workspace's inferenceset.kaito.sh/created-by label onto its pods (from 0.8:
    # manifests.go 0.8.0:118-123); before, its pods carry only kaito.sh/workspace
    pod_group_label: bool = True
    subchart_toggles: list[str]
    bundled_gfd_tolerations: list[Toleration]
    bundled_nfd_worker_tolerations: list[Toleration]
    value_keys: list[str]
    gaie_gate_values: dict[str, Any] = Field(default_factory=dict[str, Any])  # dotted path -> value
    serving: ServingSupport | None = None

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
    agent_pool_actions: dict[str, str]  # its client's method -> the Azure action it needs
    for_kaito: dict[str, str | None]

    @property
    def actions(self) -> list[str]:
        """The Azure actions its identity's custom role allows (each once, sorted)."""
        return sorted(set(self.agent_pool_actions.values()))


class HostPathModels(CamelModel):
    """The models whose inference pods one KAITO release gives a hostPath volume."""

    path: str
    why: str
    architectures: list[str]
    preset_names: list[str]
    models: list[str]  # catalog ids, lower case


class PodSecurity(CamelModel):
    """Pod Security Admission levels for the namespaces a stack creates, and the KAITO releases
    (by minor) whose pods some models need more than baseline for."""

    levels: dict[Literal["enforce", "warn", "audit"], Literal["privileged", "baseline", "restricted"]]
    host_path: dict[str, HostPathModels]


class KarpenterChart(CamelModel):
    """What kaito-aks knows about one self-hosted Azure Karpenter chart release."""

    version: str = ""
    crds: list[str]
    controller_env: list[str]
    value_keys: list[str]


class KarpenterSource(CamelModel):
    """How Karpenter runs for KAITO: its service account, its Azure roles, the release per KAITO
    minor, the chart of its CRDs and its controller's resources."""

    service_account: str
    roles: list[str]
    subnet_role: str
    for_kaito: dict[str, str | None]
    crd_chart: str
    crd_release_name: str
    controller_resources: dict[str, dict[str, str]]


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
    computeCapability: NotRequired[dict[str, float]]  # GPU model -> CUDA compute capability
    unusableGpus: NotRequired[dict[str, str]]  # GPU model -> why
    retiredSizes: NotRequired[dict[str, str]]  # VM size -> Azure's retirement notice


class _PricesFile(TypedDict):
    prices: NotRequired[dict[str, dict[str, Fields]] | None]  # region -> VM size -> price


class _ChartsFile(TypedDict):
    repository: str
    chart: str
    releaseName: str
    namespace: str
    versions: dict[str, Fields]
    notYetSupported: NotRequired[dict[str, str]]  # minor -> why


class _HuggingFaceFile(TypedDict):
    releases: dict[str, Fields]  # KAITO minor -> CatalogCode
    gated: dict[str, str]  # Hugging Face id -> evidence
    models: dict[str, Fields]  # Hugging Face id -> CatalogModel


@cache
def load_catalog(name: str) -> dict[str, Any]:
    """One catalog file, read and parsed once per process."""
    return yaml.safe_load((CATALOG_DIR / name).read_text())


def _presets_file() -> _PresetsFile:
    return cast(_PresetsFile, load_catalog("presets.yaml"))


def _charts_file(name: str) -> _ChartsFile:
    return cast(_ChartsFile, load_catalog(name))


_Chart = TypeVar("_Chart", bound=BaseModel)


def _charts(name: str, model: type[_Chart]) -> dict[str, _Chart]:
    """The releases of one chart's catalog file (`<chart>_charts.yaml`), oldest first."""
    versions = _charts_file(name)["versions"]
    ordered = sorted(versions, key=lambda v: _minor(v.removeprefix("v")))
    return {v: model.model_validate({"version": v, **versions[v]}) for v in ordered}


def _for_kaito(name: str, kaito_version: str) -> str | None:
    """The release of a chart (`<chart>_charts.yaml` forKaito) KAITO's own install pairs with a
    KAITO release, by its minor (None: none)."""
    minor = ".".join(kaito_version.split(".")[:2])
    paired: dict[str, str] = load_catalog(name).get("forKaito") or {}
    return paired.get(minor)


def _chart_source(name: str) -> ChartSource:
    fields = ChartSource.model_fields
    return ChartSource.model_validate(
        {k: v for k, v in load_catalog(name).items() if k in fields or _snake(k) in fields}
    )


def _snake(key: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in key)


@cache
def presets(catalog: str = "0.8") -> dict[str, Preset]:
    """The short preset names a KAITO release serves (catalog: '0.6', '0.8', '0.11', '0.12'), as
    it measures them: from 0.11 each is the catalog model it is a legacy alias of."""
    return {n: p for n, p in _all_presets(catalog).items() if _served(p, catalog)}


def removed_presets(catalog: str) -> dict[str, Preset]:
    """Presets an earlier KAITO release served that this one (catalog: '0.12') no longer does."""
    return {
        n: p
        for n, p in _all_presets(catalog).items()
        if p.removed_in is not None and _minor(catalog) >= _minor(p.removed_in)
    }


def _served(p: Preset | CatalogModel, catalog: str) -> bool:
    since = p.since if isinstance(p, CatalogModel) else p.added_in
    removed = None if isinstance(p, CatalogModel) else p.removed_in
    return (since is None or _minor(catalog) >= _minor(since)) and (
        removed is None or _minor(catalog) < _minor(removed)
    )


@cache
def _all_presets(catalog: str) -> dict[str, Preset]:
    data = _presets_file()
    overrides = data.get("versionOverrides", {}).get(catalog, {})
    every = overrides.get("*", {})
    out: dict[str, Preset] = {}
    code = catalog_code(catalog)
    for name, fields in data["presets"].items():
        preset = Preset.model_validate({"name": name, **fields, **every, **overrides.get(name, {})})
        alias = code.legacy_aliases.get(name) if code is not None else None
        if alias is not None and alias in _catalog_by_lower(catalog):
            # a legacy alias: KAITO serves the catalog model under this name
            model = _catalog_by_lower(catalog)[alias]
            preset = _catalog_preset(model, code, name=name, family=preset.family) if code else preset
        facts = {"gated": _is_gated(preset.hugging_face_id), "license": _license(preset.hugging_face_id)}
        out[name] = preset.model_copy(update=facts)
    return out


def deprecated_presets(catalog: str = "0.8") -> dict[str, str]:
    """Preset names a KAITO release rejects as deprecated, with the advice to give instead."""
    served = presets(catalog)
    return {n: advice for n, advice in _presets_file()["deprecated"].items() if n not in served}


def closest_presets(name: str, catalog: str = "0.8", n: int = 3) -> list[str]:
    """Did-you-mean among what a release serves: its presets and, from 0.11, its catalog ids."""
    names = [*presets(catalog), *catalog_models(catalog)]
    by_lower = {c.lower(): c for c in names}
    return [by_lower[m] for m in difflib.get_close_matches(name.lower(), list(by_lower), n=n, cutoff=0.4)]


# ---------------------------------------------------------------- the Hugging Face model catalog


def _hugging_face_file() -> _HuggingFaceFile:
    return cast(_HuggingFaceFile, load_catalog("hugging_face_models.yaml"))


@cache
def catalog_code(catalog: str) -> CatalogCode | None:
    """What a KAITO release's code does with catalog names; None: the release has no catalog."""
    fields = _hugging_face_file()["releases"].get(catalog)
    return None if fields is None else CatalogCode.model_validate(fields)


@cache
def catalog_models(catalog: str) -> dict[str, Preset]:
    """Every model of a release's Hugging Face model catalog (0.11+; empty before), by its id as
    the catalog writes it, sized by KAITO's arithmetic from the catalog's numbers."""
    code = catalog_code(catalog)
    if code is None:
        return {}
    return {
        m.id: _catalog_preset(m, code, name=m.id, family=m.id.split("/")[0])
        for m in _catalog_by_lower(catalog).values()
    }


@cache
def _catalog_by_lower(catalog: str) -> dict[str, CatalogModel]:
    if catalog_code(catalog) is None:
        return {}
    models = (CatalogModel.model_validate({"id": i, **f}) for i, f in _hugging_face_file()["models"].items())
    return {m.id.lower(): m for m in models if _served(m, catalog)}


def _catalog_preset(model: CatalogModel, code: CatalogCode, *, name: str, family: str) -> Preset:
    """A catalog model as KAITO's vLLMCompatibleModel serves it (presets/workspace/models/
    vllm_model.go): downloaded at start-up, any number of nodes, one GPU at least, Transformers
    and tuning by its short name."""
    short = generator.short_name(model.id)
    return Preset.model_validate(
        {
            "name": name,
            "family": family,
            "huggingFace": model.id,
            "license": model.license,
            "gpuCount": 1,
            "modelGiB": model.model_gib,
            "diskGiB": generator.disk_gib(model.model_gib),
            "tokenLimit": model.model_token_limit,
            "distributed": True,
            "tuningGiB": _tuning_gib(short, code),
            "downloadAtRuntime": True,
            "gated": _is_gated(model.id),
            "bytesPerToken": generator.kv_cache_bytes_per_token(
                hidden_size=model.hidden_size,
                layers=model.num_hidden_layers,
                heads=model.num_attention_heads,
                kv_heads=model.num_key_value_heads,
                head_dim=model.head_dim,
                kv_lora_rank=model.kv_lora_rank,
                qk_rope_head_dim=model.qk_rope_head_dim,
            ),
            "runtimes": ["vllm", "transformers"] if short in code.transformers else ["vllm"],
            "addedIn": model.since,
        }
    )


def _tuning_gib(short: str, code: CatalogCode) -> float | None:
    """The GPU memory KAITO's tuning of `short` needs, when KAITO can tune it. Its tuning
    parameters read the model's metadata from supported_models.yaml by the short name (MustGet,
    presets/workspace/models/vllm_model.go 0.11.0:247, 0.12.0:260), which lists the legacy preset
    names only: mistral-7b-v0.3, tunable by the table, is there as mistral-7b, so its tuning job
    panics the controller after the webhook admitted it."""
    return code.tuning.get(short) if short in code.legacy_aliases else None


def find_preset(name: str, catalog: str) -> Preset | None:
    """What a KAITO release serves under `name`, as it resolves names: a preset exactly; from
    0.11 also a legacy preset name or a catalog id in any letter case (KAITO lower-cases both).
    None: nothing it can size offline (a Hugging Face id outside the catalog is sized by KAITO
    from Hugging Face at admission)."""
    found = presets(catalog).get(name)
    if found is not None or catalog_code(catalog) is None:
        return found
    lower = name.lower()
    found = presets(catalog).get(lower)
    if found is not None:
        return found
    model = _catalog_by_lower(catalog).get(lower)
    return None if model is None else catalog_models(catalog)[model.id]


def legacy_names(catalog: str) -> dict[str, str]:
    """Catalog id (lower case) -> the legacy preset name KAITO maps to it (0.11+)."""
    code = catalog_code(catalog)
    return {} if code is None else {hf: short for short, hf in code.legacy_aliases.items()}


@cache
def gated_models() -> dict[str, str]:
    """Hugging Face id (lower case) -> why its repository needs a token."""
    return {hf.lower(): why for hf, why in _hugging_face_file()["gated"].items()}


def _is_gated(hugging_face_id: str | None) -> bool:
    return hugging_face_id is not None and hugging_face_id.lower() in gated_models()


@cache
def _licenses() -> dict[str, str]:
    """Hugging Face id (lower case) -> its licence, as KAITO's catalog records it."""
    return {hf.lower(): f["license"] for hf, f in _hugging_face_file()["models"].items() if f.get("license")}


def _license(hugging_face_id: str | None) -> str | None:
    return None if hugging_face_id is None else _licenses().get(hugging_face_id.lower())


@cache
def gpu_skus(catalog: str = "0.8") -> dict[str, GpuSku]:
    """Azure GPU SKUs that a KAITO release (catalog: '0.8', '0.12') accepts."""
    out: dict[str, GpuSku] = {}
    data = cast(_SkusFile, load_catalog("azure_gpu_skus.yaml"))
    unusable = data.get("unusableGpus", {})
    retired = data.get("retiredSizes", {})
    capability = data.get("computeCapability", {})
    for name, fields in data["skus"].items():
        sku = GpuSku.model_validate({"name": name, **fields})
        if sku.gpu_model in capability:
            sku = sku.model_copy(update={"compute_capability": capability[sku.gpu_model]})
        if sku.gpu_model in unusable:
            sku = sku.model_copy(update={"unusable": unusable[sku.gpu_model]})
        if name in retired:
            sku = sku.model_copy(update={"unusable": retired[name]})
        if sku.removed_in is None or _minor(catalog) < _minor(sku.removed_in):
            out[name] = sku
    return out


def dropped_sku(size: str, catalog: str, version: str) -> str | None:
    """Why KAITO `version` (its SKU catalog `catalog`) refuses an NVIDIA size an earlier release
    listed, with the nearest size it takes, or None (a size it lists, or one it never knew)."""
    sku = all_gpu_skus().get(size)
    if sku is None or size in gpu_skus(catalog) or sku.removed_in is None:
        return None
    chart = kaito_charts().get(version)
    rule = chart.min_compute_capability if chart is not None else None
    if rule is not None and sku.compute_capability is not None and sku.compute_capability < rule.at_least:
        why = (
            f"its SKU table keeps only GPUs of CUDA compute capability {rule.at_least} or newer (KAITO v{version} "
            f"{rule.source}), and the {sku.gpu_model.removeprefix('NVIDIA ')}'s is {sku.compute_capability}"
        )
    else:
        why = f"its SKU table dropped the size in {sku.removed_in}"
    nearest = nearest_usable_sku(sku, catalog)
    instead = (
        f"; the nearest size it takes: {nearest.name} ({nearest.gpu_count}x {nearest.gpu_model}, "
        f"{nearest.gpu_mem_gib} GiB)"
        if nearest is not None
        else "; choose a size it lists"
    )
    return f"KAITO {version} no longer supports {sku.gpu_model} ({size}): {why}{instead}"


def nearest_usable_sku(sku: GpuSku, catalog: str) -> GpuSku | None:
    """The NVIDIA size a KAITO release (its SKU catalog) takes that comes closest to `sku` from
    above: at least its GPU memory per node, the least memory, then the fewest GPUs."""
    usable = [
        s
        for s in gpu_skus(catalog).values()
        if s.vendor == "nvidia" and not s.unusable and s.gpu_mem_gib >= sku.gpu_mem_gib
    ]
    return min(usable, key=lambda s: (s.gpu_mem_gib, s.gpu_count, s.name), default=None)


def usable_gpu_skus() -> list[str]:
    """The GPU sizes KAITO's pods can run on: NVIDIA, and not retired or otherwise unusable."""
    return [k for k, sku in all_gpu_skus().items() if sku.vendor == "nvidia" and not sku.unusable]


def closest_skus(name: str, n: int = 3) -> list[str]:
    """Did-you-mean for a VM size: case-insensitive, ignoring the Standard_ prefix; only sizes
    that can serve (NVIDIA, not retired), since any other would only lead to a second refusal."""
    by_key = {k.lower().removeprefix("standard_"): k for k in usable_gpu_skus()}
    key = name.lower().removeprefix("standard_")
    return [by_key[m] for m in difflib.get_close_matches(key, list(by_key), n=n, cutoff=0.6)]


@cache
def prices(region: str) -> dict[str, Price]:
    """VM size -> hourly price in `region` (kaito_aks/catalog/azure_prices.yaml); absent: unpriced."""
    table = (cast(_PricesFile, load_catalog("azure_prices.yaml")).get("prices") or {}).get(region) or {}
    return {size: Price.model_validate(fields) for size, fields in table.items()}


def all_gpu_skus() -> dict[str, GpuSku]:
    """Every GPU SKU kaito-aks knows, whichever KAITO release still accepts it."""
    return gpu_skus("0.0")


def _minor(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def kubernetes_minor(version: str) -> tuple[int, ...]:
    """A Kubernetes version's (MAJOR, MINOR), for ordering: "1.34.2" -> (1, 34)."""
    return _minor(".".join(version.split(".")[:2]))


def kaito_chart_source() -> ChartSource:
    return _chart_source("kaito_charts.yaml")


@cache
def kaito_charts() -> dict[str, KaitoChart]:
    """Supported KAITO releases, oldest first (including ones this program does not install:
    `helm_install` false)."""
    return _charts("kaito_charts.yaml", KaitoChart)


def installable_kaito_versions() -> list[str]:
    """The KAITO releases this program installs with Helm, oldest first."""
    return [v for v, c in kaito_charts().items() if c.helm_install]


def unsupported_kaito_version(version: str, *, install: bool = False) -> str | None:
    """Why KAITO `version` cannot be used, or None: the one rule every component and the stack
    apply. `install`: this program is to install it (KaitoOperator), not only create Workspaces
    for it. The message names the supported versions (and which of them this program installs)."""
    charts = kaito_charts()
    chart = charts.get(version)
    installable = installable_kaito_versions()
    if chart is not None and (chart.helm_install or not install):
        return None
    if chart is not None:
        return f"KAITO {version} is what {chart.installed_by} runs; this program installs {either(installable)}"
    # one message whoever asks (the operator and the models of one stack say it once)
    listing = ", ".join(f"{v} ({c.installed_by}'s)" if not c.helm_install else v for v, c in charts.items())
    minor = ".".join(version.split(".")[:2])
    upcoming = _charts_file("kaito_charts.yaml").get("notYetSupported", {}).get(minor)
    if upcoming is not None:
        return f"KAITO {version} is not supported yet ({upcoming}); use one of: {listing}"
    return f"KAITO {version} is not supported; use one of: {listing}"


def either(items: list[str]) -> str:
    """ "a", "a or b", "a, b or c"."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} or {items[-1]}"


def ragengine_chart_source() -> ChartSource:
    return _chart_source("ragengine_charts.yaml")


@cache
def ragengine_charts() -> dict[str, RagEngineChart]:
    """Supported releases of KAITO's RAGEngine operator, oldest first."""
    return _charts("ragengine_charts.yaml", RagEngineChart)


def gpu_operator_chart_source() -> ChartSource:
    return _chart_source("gpu_operator_charts.yaml")


@cache
def gpu_operator_charts() -> dict[str, GpuOperatorChart]:
    return _charts("gpu_operator_charts.yaml", GpuOperatorChart)


def gpu_provisioner_chart_source() -> ChartSource:
    return _chart_source("gpu_provisioner_charts.yaml")


def gpu_provisioner_source() -> GpuProvisionerSource:
    data = load_catalog("gpu_provisioner_charts.yaml")
    return GpuProvisionerSource.model_validate({k: data[k] for k in ("serviceAccount", "agentPoolActions", "forKaito")})


@cache
def gpu_provisioner_charts() -> dict[str, GpuProvisionerChart]:
    return _charts("gpu_provisioner_charts.yaml", GpuProvisionerChart)


def gpu_provisioner_for_kaito(kaito_version: str) -> str | None:
    """The gpu-provisioner release KAITO's own install path pairs with this KAITO release
    (None: none; KAITO's provisioning runs elsewhere, e.g. in the AKS add-on's control plane)."""
    return _for_kaito("gpu_provisioner_charts.yaml", kaito_version)


def karpenter_chart_source() -> ChartSource:
    return _chart_source("karpenter_charts.yaml")


def karpenter_source() -> KarpenterSource:
    data = load_catalog("karpenter_charts.yaml")
    keys = ("serviceAccount", "roles", "subnetRole", "forKaito", "crdChart", "crdReleaseName", "controllerResources")
    return KarpenterSource.model_validate({k: data[k] for k in keys})


@cache
def karpenter_charts() -> dict[str, KarpenterChart]:
    return _charts("karpenter_charts.yaml", KarpenterChart)


def karpenter_for_kaito(kaito_version: str) -> str | None:
    """The Karpenter release KAITO's own install pins for this KAITO release (None: the release
    has no Karpenter mode)."""
    return _for_kaito("karpenter_charts.yaml", kaito_version)


@cache
def azure_roles() -> dict[str, str]:
    """Built-in Azure role name -> role definition GUID."""
    return dict(cast(dict[str, dict[str, str]], load_catalog("azure_roles.yaml"))["roles"])


def too_broad_roles() -> dict[str, str]:
    """The built-in roles no workload should hold (they write, or grant, everything in their
    scope), by name -> GUID."""
    roles = azure_roles()
    return {name: roles[name] for name in cast(list[str], load_catalog("azure_roles.yaml")["tooBroad"])}


@cache
def pod_security() -> PodSecurity:
    return PodSecurity.model_validate(load_catalog("pod_security.yaml"))


# What the AKS add-on runs (catalog/aks_add_on.py) and the serving pins (gateway,
# authentication, autoscaling, metrics: catalog/serving.py), one catalog with the rest
# (imported last: they read the KAITO charts above).
from kaito_aks.catalog.aks_add_on import AksAddOn, aks_add_on  # noqa: E402
from kaito_aks.catalog.serving import (  # noqa: E402
    AuthorinoPin,
    BodyBasedRoutingPin,
    GatewayApiCrds,
    HelmChartPin,
    IstioPin,
    KedaPin,
    PrometheusOperatorPin,
    ScalerSource,
    ServingCharts,
    serving_charts,
    serving_refusal,
    vllm_metrics,
)

__all__ = [
    "AksAddOn",
    "AuthorinoPin",
    "BodyBasedRoutingPin",
    "GatewayApiCrds",
    "HelmChartPin",
    "IstioPin",
    "KedaPin",
    "PrometheusOperatorPin",
    "ScalerSource",
    "ServingCharts",
    "aks_add_on",
    "serving_charts",
    "serving_refusal",
    "vllm_metrics",
]
