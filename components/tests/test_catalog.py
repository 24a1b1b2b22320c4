"""The catalogs against KAITO's and the GPU Operator's own data at each supported release
(tests/upstream/, derived from the upstream files by scripts/upstream_data.py): drift fails."""

from __future__ import annotations

import pytest

import upstream_facts
from kaito_aks import catalog
from kaito_aks.catalog import generator
from upstream_facts import capacity_folders, kaito, serving_folders

KAITO_VERSIONS = list(catalog.kaito_charts())
GPU_OPERATOR_VERSIONS = list(catalog.gpu_operator_charts())
GPU_PROVISIONER_VERSIONS = list(catalog.gpu_provisioner_charts())
KARPENTER_VERSIONS = list(catalog.karpenter_charts())


def test_every_supported_version_has_upstream_data():
    for version in KAITO_VERSIONS:
        provenance = upstream_facts.load("kaito", version, "provenance.yaml")
        assert provenance["tag"] == f"v{version}"
        assert len(provenance["commit"]) == 40
        assert provenance["sources"], version
    for version in GPU_OPERATOR_VERSIONS:
        assert upstream_facts.load("gpu-operator", version, "provenance.yaml")["tag"] == version


def test_upstream_folders_are_all_for_supported_versions():
    """A folder nobody checks against is stale data."""
    wanted = {f"kaito-{v}" for v in KAITO_VERSIONS} | {f"gpu-operator-{v}" for v in GPU_OPERATOR_VERSIONS}
    wanted |= {f"nvidia-device-plugin-v{gfd['version']}" for v in KAITO_VERSIONS if (gfd := _bundled_gfd(v))}
    wanted |= {f"gpu-provisioner-v{v}" for v in GPU_PROVISIONER_VERSIONS}
    wanted |= set(serving_folders().values())
    wanted |= {f"karpenter-{v}" for v in KARPENTER_VERSIONS}
    wanted |= capacity_folders()  # (the capacity budget's pod requests: components/tests/test_capacity.py)
    present = {p.name for p in upstream_facts.UPSTREAM.iterdir() if p.is_dir()}
    assert present == wanted


def _bundled_gfd(version: str) -> dict | None:
    """The gpu-feature-discovery chart KAITO bundles (NVIDIA publishes it from the
    nvidia-device-plugin chart source); None before 0.8 (no BYO mode)."""
    deps = upstream_facts.chart("kaito", version)["dependencies"]
    return next((d for d in deps if d["name"] == "gpu-feature-discovery"), None)


def _has_catalog(version: str) -> bool:
    return (upstream_facts.folder("kaito", version) / "model-catalog.yaml").exists()


@pytest.mark.parametrize("version", KAITO_VERSIONS)
def test_preset_names_and_download_flags_match_supported_models(version):
    chart = catalog.kaito_charts()[version]
    real = kaito(version, "presets")["presets"]
    served = {n for n, m in real.items() if not m["deprecated"]}
    if _has_catalog(version):
        # 0.11+: a short preset name serves only through the model catalog (the falcon presets,
        # still listed in supported_models.yaml, have no entry there and are refused)
        served = {n for n in served if "catalog" in real[n]}
        assert set(catalog.removed_presets(chart.preset_catalog)) - {"phi-2"} == {
            n for n, m in real.items() if not m["deprecated"] and "catalog" not in m
        }
    assert set(catalog.presets(chart.preset_catalog)) == served
    assert set(catalog.deprecated_presets(chart.preset_catalog)) == {n for n, m in real.items() if m["deprecated"]}
    for name, preset in catalog.presets(chart.preset_catalog).items():
        assert preset.hugging_face_id == real[name]["huggingFaceId"], name
        if real[name]["downloadAuthRequired"]:  # KAITO's own flag; the Hugging Face side may gate more
            assert preset.gated, name
        if not _has_catalog(version):  # the Go presets' flag, which the webhook reads (0.11+: the catalog's, never set)
            assert preset.auth_required == real[name]["downloadAuthRequired"], name
        else:
            assert not preset.auth_required, name
        if _has_catalog(version):  # vLLMCompatibleModel: DownloadAtRuntime is always true
            assert preset.download_at_runtime, name
        else:
            assert preset.download_at_runtime == real[name]["downloadAtRuntime"], name


def test_gated_models_are_catalog_ids_or_presets_with_evidence():
    known = {p.hugging_face_id.lower() for p in catalog.presets("0.8").values() if p.hugging_face_id}
    known |= {m.lower() for m in catalog.catalog_models("0.12")}
    assert set(catalog.gated_models()) <= known
    assert all(why for why in catalog.gated_models().values())
    for version in KAITO_VERSIONS:  # everything KAITO itself flags is gated here
        for name, m in kaito(version, "presets")["presets"].items():
            if m["downloadAuthRequired"]:
                assert m["huggingFaceId"].lower() in catalog.gated_models(), (version, name)


@pytest.mark.parametrize("version", [v for v in KAITO_VERSIONS if not _has_catalog(v)])
def test_preset_requirements_match_kaitos_go_definitions(version):
    """Before the catalog (0.6, 0.8) presets are Go definitions: 0.8 sizes by the weights'
    size, 0.6 by a total and a per-GPU GPU memory requirement."""
    chart = catalog.kaito_charts()[version]
    real = kaito(version, "preset-definitions")["presets"]
    presets = catalog.presets(chart.preset_catalog)
    for name, p in presets.items():
        d = real[name]
        assert p.gpu_count == d["gpuCount"], name
        assert p.model_gib == pytest.approx(d.get("modelGiB", d.get("totalGpuMemoryGiB"))), name
        assert p.per_gpu_gib == pytest.approx(d.get("perGpuMemoryGiB", 0)), name
        assert p.distributed == d["distributed"], name
        if d["bytesPerToken"] is not None:
            assert p.bytes_per_token == d["bytesPerToken"], name
        assert p.disallow_lo_ra == d["disallowLoRA"], name
        assert p.disable_tensor_parallelism == d["disableTensorParallelism"], name
        if d["tokenLimit"] is not None:
            assert p.token_limit == d["tokenLimit"], name
        assert p.supports_tuning == ("tuning" in d), name
        if p.supports_tuning:
            tuning = d["tuning"]
            assert p.tuning_gib == pytest.approx(tuning.get("modelGiB", tuning.get("totalGpuMemoryGiB"))), name
    assert set(presets) <= set(real)


CATALOG_VERSIONS = [v for v in KAITO_VERSIONS if _has_catalog(v)]
KAITO_CATALOG_FIELDS = (
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
)


@pytest.mark.parametrize("version", CATALOG_VERSIONS)
def test_hugging_face_models_are_kaitos_model_catalog(version):
    """Every model of KAITO's model_catalog.yaml, and no other, with the numbers KAITO sizes it by."""
    release = catalog.kaito_charts()[version].preset_catalog
    real = kaito(version, "model-catalog")["models"]
    ours = catalog.catalog_models(release)
    assert set(ours) == set(real)
    raw = catalog._hugging_face_file()["models"]  # pyright: ignore[reportPrivateUsage]
    for model_id, fields in real.items():
        assert {k: raw[model_id].get(k) for k in KAITO_CATALOG_FIELDS} == {
            k: fields.get(k) for k in KAITO_CATALOG_FIELDS
        }, model_id
        preset = ours[model_id]
        assert preset.model_gib == float(fields["modelFileSize"].removesuffix("Gi"))
        assert preset.token_limit == fields["modelTokenLimit"]
        assert preset.license == fields["license"]
    # `since`: the first release whose catalog has the model
    earlier = [v for v in CATALOG_VERSIONS if _minor(v) < _minor(version)]
    before = catalog.catalog_models(catalog.kaito_charts()[earlier[-1]].preset_catalog) if earlier else {}
    for model_id, preset in ours.items():
        assert preset.added_in is not None, model_id
        assert _minor(preset.added_in) <= _minor(release), model_id
        if earlier:
            assert preset.added_in == (before[model_id].added_in if model_id in before else release), model_id


def _minor(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


@pytest.mark.parametrize("version", CATALOG_VERSIONS)
def test_catalog_code_is_kaitos(version):
    """Legacy names, the Transformers runtime and tuning, as KAITO's code has them."""
    release = catalog.kaito_charts()[version].preset_catalog
    real = kaito(version, "catalog-rules")
    code = catalog.catalog_code(release)
    assert code is not None
    assert code.legacy_aliases == real["legacyAliases"]
    assert code.transformers == real["transformers"]
    assert code.tuning == {k: v["modelGiB"] for k, v in real["tuning"].items()}
    # KAITO's tuning reads the model's metadata from supported_models.yaml by the short name
    # (MustGet): a tunable short name missing there panics the controller, so it is not tunable.
    metadata = set(kaito(version, "presets")["presets"])
    for model in catalog.catalog_models(release).values():
        short = generator.short_name(model.name)
        if short in code.tuning:
            assert model.supports_tuning == (short in metadata), model.name
    presets = catalog.presets(release)
    assert set(presets) == set(code.legacy_aliases)  # a short name serves only as a legacy alias
    for name, preset in presets.items():
        assert preset.hugging_face_id is not None
        assert preset.hugging_face_id.lower() == code.legacy_aliases[name], name
        assert catalog.find_preset(preset.hugging_face_id, release) == preset.model_copy(
            update={"name": preset.hugging_face_id, "family": preset.hugging_face_id.split("/")[0]}
        )


@pytest.mark.parametrize(
    ("model_id", "bytes_per_token", "disk_gib", "runtimes"),
    [
        # KAITO's Go arithmetic, run on the catalog entries (research notes, Part 1a)
        ("deepseek-ai/DeepSeek-V3.2", 70272, 722, ["vllm"]),  # MLA
        ("Qwen/Qwen3.5-2B", 49152, 84, ["vllm"]),  # GQA, headDim from hiddenSize / heads
        ("openai/gpt-oss-20b", 49152, 105, ["vllm", "transformers"]),
        ("openai/gpt-oss-120b", 73728, 201, ["vllm", "transformers"]),
        ("google/gemma-3-4b-it", 139264, 88, ["vllm", "transformers"]),
        ("google/gemma-3-27b-it", 507904, 131, ["vllm", "transformers"]),
        ("google/gemma-4-E2B-it", 35840, None, ["vllm"]),  # MQA
        ("mistralai/Mistral-Small-4-119B-2603", 23040, None, ["vllm"]),  # MLA
        ("deepseek-ai/DeepSeek-V4-Flash-0731", 88064, None, ["vllm"]),  # one KV head, headDim 512
        ("mistralai/Mistral-Large-3-675B-Instruct-2512", 70272, None, ["vllm"]),  # the Transformers key never matches
        ("Qwen/Qwen2.5-Coder-7B-Instruct", 57344, None, ["vllm", "transformers"]),
    ],
)
def test_catalog_models_are_sized_by_kaitos_arithmetic(model_id, bytes_per_token, disk_gib, runtimes):
    preset = catalog.catalog_models("0.12")[model_id]
    assert preset.bytes_per_token == bytes_per_token
    if disk_gib is not None:
        assert preset.disk_gib == disk_gib
    assert preset.runtimes == runtimes
    assert preset.distributed
    assert preset.download_at_runtime
    assert preset.gpu_count == 1


def test_names_resolve_as_kaito_resolves_them():
    """0.11+: legacy names and catalog ids in any letter case (KAITO lower-cases both); 0.8:
    exact preset names only."""
    assert catalog.find_preset("Phi-4", "0.12") == catalog.presets("0.12")["phi-4"]
    assert (
        catalog.find_preset("deepseek-ai/deepseek-v3.2", "0.12")
        == catalog.catalog_models("0.12")["deepseek-ai/DeepSeek-V3.2"]
    )
    assert catalog.find_preset("deepseek-ai/DeepSeek-V3.2", "0.11") is None  # 0.12's catalog only
    assert catalog.find_preset("Phi-4", "0.8") is None
    assert catalog.find_preset("microsoft/phi-4", "0.8") is None
    assert catalog.find_preset("foo/NotAModel", "0.12") is None
    assert catalog.find_preset("falcon-7b", "0.12") is None
    assert catalog.find_preset("phi-2", "0.6") is not None
    tuning = {n for n, p in catalog.presets("0.12").items() if p.supports_tuning}
    # mistral-7b: 0.12 tunes it as mistral-7b-v0.3, which its model metadata lacks (the controller panics)
    dropped = {"falcon-7b", "falcon-40b", "mistral-7b"}
    assert tuning == {n for n, p in catalog.presets("0.8").items() if p.supports_tuning} - dropped


@pytest.mark.parametrize("version", KAITO_VERSIONS)
def test_sku_table_matches_kaitos_azure_sku_handler(version):
    chart = catalog.kaito_charts()[version]
    real = kaito(version, "skus")["skus"]
    ours = catalog.gpu_skus(chart.sku_catalog)
    assert set(ours) == set(real)
    for name, sku in ours.items():
        r = real[name]
        assert (sku.gpu_count, sku.gpu_mem_gib, sku.gpu_model, sku.nvme) == (
            r["gpuCount"],
            r["gpuMemGiB"],
            r["gpuModel"],
            r["nvme"],
        ), name


@pytest.mark.parametrize("version", KAITO_VERSIONS)
def test_kaito_chart_table_matches_the_charts_values(version):
    chart = catalog.kaito_charts()[version]
    values = upstream_facts.chart_values("kaito", version)
    # 0.6's chart writes its one gate as the string "true"
    assert chart.feature_gates == {k: v in (True, "true") for k, v in values["featureGates"].items()}
    assert chart.known_gates == kaito(version, "feature-gates")["featureGates"]  # what the controller parses
    assert chart.value_keys == list(values)
    assert (chart.node_provisioner is not None) == ("nodeProvisioner" in values)
    if chart.node_provisioner is not None:
        assert chart.node_provisioner.auto == values["nodeProvisioner"]
    if chart.spot_toleration:
        section, key = chart.spot_toleration.split(".")
        assert key in values[section]
    for toggle in chart.subchart_toggles:  # a value or a dependency condition of the bundled chart
        subchart, _, key = toggle.partition(".")
        if subchart == "flux2":  # the gateway extension's Flux, bundled as an archive (its values derived)
            node = upstream_facts.chart_values("kaito", version, "flux2")
            for part in key.split(".")[:-1]:
                node = node.get(part, {})
            assert key.split(".")[-1] in node, toggle
            continue
        assert subchart == "gpu-feature-discovery", toggle
        bundled = _bundled_gfd(version)
        assert bundled is not None
        gfd = f"v{bundled['version']}"
        conditions = {
            c
            for d in upstream_facts.chart("nvidia-device-plugin", gfd)["dependencies"]
            for c in d["condition"].split(",")
        }
        node = upstream_facts.chart_values("nvidia-device-plugin", gfd)
        for part in key.split(".")[:-1]:
            node = node.get(part, {}) if isinstance(node, dict) else {}
        assert key in conditions or key.split(".")[-1] in node, toggle
    facts = upstream_facts.chart("kaito", version)
    assert facts["version"] == version
    bundled = _bundled_gfd(version)
    assert ("byo" in chart.node_provisioning_modes) == (bundled is not None)
    if bundled is not None:  # why KAITO's GFD exists only in BYO
        assert bundled["condition"] == "featureGates.disableNodeAutoProvisioning"
    crd = upstream_facts.crd(version, "workspaces.kaito.sh")  # the v1beta1 instanceType default, if any
    (v1beta1,) = (v for v in crd["spec"]["versions"] if v["name"] == "v1beta1")
    resource = v1beta1["schema"]["openAPIV3Schema"]["properties"]["resource"]["properties"]
    assert resource["instanceType"].get("default") == chart.default_instance_type, version


def test_kaito_releases_this_program_does_not_install_say_who_does():
    for version, chart in catalog.kaito_charts().items():
        assert chart.helm_install == (chart.installed_by is None), version
        assert (catalog.unsupported_kaito_version(version, install=True) is None) == chart.helm_install
        assert catalog.unsupported_kaito_version(version) is None
    assert catalog.installable_kaito_versions() == ["0.8.0", "0.8.1", "0.11.0", "0.12.0"]
    assert catalog.unsupported_kaito_version("0.6.0", install=True) == (
        "KAITO 0.6.0 is what the AKS add-on runs; this program installs 0.8.0, 0.8.1, 0.11.0 or 0.12.0"
    )


def test_the_add_on_release_follows_the_kubernetes_minor_as_microsoft_lists_it():
    """supported-kubernetes-versions.md's component tables: 1.33 ai-toolchain-operator 0.4.5,
    1.34 0.6.0 (review 2 B4)."""
    add_on = catalog.aks_add_on()
    assert add_on.by_kubernetes_minor == {"1.33": "0.4.5", "1.34": "0.6.0"}
    for words in ("Kubernetes 1.34 lists ai-toolchain-operator 0.6.0", "1.33 lists ai-toolchain-operator 0.4.5"):
        assert words in " ".join(add_on.source.split())
    assert add_on.kaito_version == "0.6.0"  # the newest statement
    assert [add_on.kaito_on(v) for v in ("1.33", "1.33.9", "1.34.1", "1.35", None, "1.32")] == [
        "0.4.5",
        "0.4.5",
        "0.6.0",
        "0.6.0",
        "0.6.0",
        None,
    ]
    assert add_on.kaito_version in catalog.kaito_charts()


# ---------------------------------------------------------------- gpu-provisioner


@pytest.mark.parametrize("version", GPU_PROVISIONER_VERSIONS)
def test_gpu_provisioner_chart_facts_match_its_chart(version):
    chart = catalog.gpu_provisioner_charts()[version]
    assert upstream_facts.chart("gpu-provisioner", f"v{version}")["version"] == version
    values = upstream_facts.chart_values("gpu-provisioner", f"v{version}")
    assert chart.value_keys == list(values)
    # the release replaces the chart's env list: it must set every entry the chart lists
    assert chart.controller_env == [e["name"] for e in values["controller"]["env"]]
    account = upstream_facts.load("gpu-provisioner", f"v{version}", "service-account.yaml")
    assert catalog.gpu_provisioner_source().service_account == account["name"]
    assert account["annotationsFromValues"] == {
        "azure.workload.identity/client-id": "workloadIdentity.clientId",
        "azure.workload.identity/tenant-id": "workloadIdentity.tenantId",
    }


def test_gpu_provisioner_pairs_name_supported_releases():
    pairs = catalog.gpu_provisioner_source().for_kaito
    assert {v for v in pairs.values() if v is not None} <= set(GPU_PROVISIONER_VERSIONS)
    minors = {".".join(v.split(".")[:2]) for v in KAITO_VERSIONS}
    assert minors <= set(pairs), "every supported KAITO minor says which gpu-provisioner goes with it"


def test_role_names_are_azure_built_in_role_ids():
    roles = catalog.azure_roles()
    assert roles["Contributor"] == "b24988ac-6180-42a0-ab88-20f7382dd24c"
    assert set(catalog.too_broad_roles()) == {"Contributor", "Owner", "User Access Administrator"}


# ---------------------------------------------------------------- Karpenter


@pytest.mark.parametrize("version", KARPENTER_VERSIONS)
def test_karpenter_chart_facts_match_its_chart_and_controller(version):
    chart = catalog.karpenter_charts()[version]
    provenance = upstream_facts.load("karpenter", version, "provenance.yaml")
    assert provenance["tag"] == f"v{version}"
    assert len(provenance["commit"]) == 40
    values = upstream_facts.chart_values("karpenter", version)
    assert chart.value_keys == list(values)
    assert values["controller"]["env"] == []  # the release's env list is all there is
    assert values["settings"]["featureGates"]["staticCapacity"] is False  # so the release turns it on
    env = upstream_facts.load("karpenter", version, "controller-env.yaml")
    # every variable the release sets is one the controller reads, and it sets every one it requires
    assert set(chart.controller_env) <= set(env["reads"]), set(chart.controller_env) - set(env["reads"])
    assert set(env["required"]) <= set(chart.controller_env)
    assert env["required"] == [
        "CLUSTER_ENDPOINT",
        "CLUSTER_NAME",
        "KUBELET_BOOTSTRAP_TOKEN",
        "SSH_PUBLIC_KEY",
        "VNET_SUBNET_ID",
        "AZURE_NODE_RESOURCE_GROUP",
        "AZURE_SUBSCRIPTION_ID",
    ]


@pytest.mark.parametrize("version", KARPENTER_VERSIONS)
def test_karpenters_crds_come_from_its_crd_chart_which_holds_what_the_crds_folder_does(version):
    chart, source = catalog.karpenter_charts()[version], catalog.karpenter_source()
    crd_chart = upstream_facts.load("karpenter", version, "crd-chart.yaml")
    assert (crd_chart["name"], crd_chart["version"]) == (source.crd_chart, version)
    assert chart.crds == [t["crd"] for t in crd_chart["templates"]]
    # each template is the CRD alone, the same the karpenter chart's crds/ folder installs: handing
    # the existing ones to the chart changes nothing in them
    assert all(t["sameAsChartCrd"] and not t["templated"] for t in crd_chart["templates"])
    assert sorted(chart.crds) == sorted(
        p.stem for p in (upstream_facts.folder("karpenter", version) / "crds").glob("*.yaml")
    )


@pytest.mark.parametrize("version", KARPENTER_VERSIONS)
def test_karpenters_controller_resources_are_what_the_chart_reads_them_from(version):
    resources = catalog.karpenter_source().controller_resources
    assert upstream_facts.chart_values("karpenter", version)["controller"]["resources"] == {}  # BestEffort by default
    # the chart hands the controller its CPU request and memory limit (resourceFieldRef): set both
    derived = upstream_facts.load("karpenter", version, "controller-resource-env.yaml")
    assert derived == {"CPU_REQUESTS": "requests.cpu", "MEMORY_LIMIT": "limits.memory"}
    for path in derived.values():
        kind, resource = path.split(".")
        assert resources[kind][resource]
    assert resources == {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}


def test_karpenter_pairs_and_roles():
    source = catalog.karpenter_source()
    for minor, version in source.for_kaito.items():
        chart = next((c for v, c in catalog.kaito_charts().items() if v.startswith(minor + ".")), None)
        assert chart is not None, minor
        # a Karpenter release exactly for the KAITO minors with a Karpenter mode
        assert (version is not None) == (chart.node_provisioner is not None), minor
        assert version is None or version in KARPENTER_VERSIONS
    roles = catalog.azure_roles()
    assert set(source.roles) | {source.subnet_role} <= set(roles)
    assert "Contributor" not in source.roles
    assert "Owner" not in source.roles


@pytest.mark.parametrize("version", KARPENTER_VERSIONS)
def test_karpenters_nodepool_crd_allows_the_placement_scope_kaito_requires(version):
    """KAITO 0.11 and 0.12 put karpenter.azure.com/placement-scope on every NodePool; the CRD's
    CEL rule lists the karpenter.azure.com keys it allows."""
    crd = upstream_facts.load("karpenter", version, "crds/nodepools.karpenter.sh.yaml")
    assert "karpenter.azure.com/placement-scope" in str(crd)
    served = {v["name"] for v in crd["spec"]["versions"] if v["served"]}
    assert served == {"v1"}
    classes = upstream_facts.load("karpenter", version, "crds/aksnodeclasses.karpenter.azure.com.yaml")
    storage = [v["name"] for v in classes["spec"]["versions"] if v["storage"]]
    assert storage == ["v1beta1"]


@pytest.mark.parametrize("version", [v for v, c in catalog.kaito_charts().items() if c.node_provisioner])
def test_kaito_node_classes_are_the_charts(version):
    chart = catalog.kaito_charts()[version]
    values = upstream_facts.chart_values("kaito", version)
    azure = values["karpenterProviders"][values["karpenterProvider"]]
    assert list(chart.node_classes.values()) == [c["name"] for c in azure["nodeClasses"]]
    assert azure["nodeClasses"][0].get("default") is True  # ubuntu, the first: KAITO's default
    assert azure["nodeClasses"][0]["spec"]["imageFamily"].startswith("Ubuntu")
    assert azure["nodeClasses"][1]["spec"]["imageFamily"] == "AzureLinux"
    assert chart.node_provisioner is not None
    assert chart.node_provisioner.karpenter == "karpenter"


def test_kaito_0_12_dropped_exactly_the_gpus_below_compute_capability_8():
    """The SKUs 0.11's table lists and 0.12's does not are those below 0.12's minimum, each with
    its capability as 0.11's table records it; the catalog's capabilities agree."""
    rule = catalog.kaito_charts()["0.12.0"].min_compute_capability
    assert rule is not None
    assert rule.at_least == 8.0
    old, new = kaito("0.11.0", "skus")["skus"], kaito("0.12.0", "skus")["skus"]
    dropped = set(old) - set(new)
    assert dropped == {
        "Standard_NC4as_T4_v3",
        "Standard_NC8as_T4_v3",
        "Standard_NC16as_T4_v3",
        "Standard_NC64as_T4_v3",
        "Standard_NV12s_v3",
        "Standard_NV24s_v3",
        "Standard_NV48s_v3",
    }
    assert all(old[s]["cudaComputeCapability"] < rule.at_least for s in dropped)
    assert all(s.get("cudaComputeCapability", 9.9) >= rule.at_least for s in new.values())
    ours = catalog.all_gpu_skus()
    for name, sku in {**old, **new}.items():
        if "cudaComputeCapability" in sku:
            assert ours[name].compute_capability == sku["cudaComputeCapability"], name


RAGENGINE_VERSIONS = list(catalog.ragengine_charts())


def test_the_ragengine_operator_ships_with_every_installable_kaito_release():
    # the AKS add-on's 0.6.0 is not installed here, and has no RAG operator of ours
    assert catalog.installable_kaito_versions() == RAGENGINE_VERSIONS  # both oldest first
    source = catalog.ragengine_chart_source()
    assert source.repository == catalog.kaito_chart_source().repository  # published side by side
    # both charts create ConfigMap kaito-logging-config: never the same namespace
    assert source.namespace != catalog.kaito_chart_source().namespace


@pytest.mark.parametrize("version", catalog.installable_kaito_versions())
def test_ragengine_chart_table_matches_the_chart_and_the_crd(version):
    chart = catalog.ragengine_charts()[version]  # every release this program installs
    facts = upstream_facts.chart("kaito", version, "ragengine")
    assert (facts["name"], facts["version"]) == ("ragengine", version)
    assert chart.value_keys == list(upstream_facts.chart_values("kaito", version, "ragengine"))
    crd = upstream_facts.crd(version, "ragengines.kaito.sh")
    versions = {v["name"]: v for v in crd["spec"]["versions"]}
    emitted = versions[chart.api_version.split("/")[1]]
    assert emitted["storage"] is True  # the version KAITO keeps
    assert emitted["served"] is True
    spec = emitted["schema"]["openAPIV3Schema"]["properties"]["spec"]
    storage = spec["properties"]["storage"]["properties"]
    assert chart.inference_service_required == ("inferenceService" in spec["required"])
    assert chart.vector_db == ("vectorDB" in storage)
    assert chart.guardrails == ("guardrails" in spec["properties"])
    assert chart.storage == ("flat" if "persistentVolumeClaim" in storage else "persistentVolume")
    assert set(catalog.gpu_skus(chart.sku_catalog)) == set(kaito(version, "skus")["skus"])


def test_the_kubernetes_fields_kaito_decodes_strictly_are_complete():
    """catalog/kube_fields.yaml (scripts/kube_fields.py) defines every type its fields name."""
    from kaito_aks import kube_json

    scalars = {"string", "bool", "int32", "int64", "quantity", "intOrString", "time", "any"}
    for name, fields in kube_json.types().items():
        for field, kind in fields.items():
            base = kind.removeprefix("[]").removeprefix("map[string]").removeprefix("[]")
            assert base in scalars or base in kube_json.types(), (name, field, kind)
    assert len(kube_json.types()["VolumeSource"]) == 30
    assert set(kube_json.types()["ResourceRequirements"]) == {"limits", "requests", "claims"}


@pytest.mark.parametrize("version", KAITO_VERSIONS)
def test_kaito_pods_need_at_most_baseline_but_the_hostpath_models_of_the_catalog(version: str):
    """Pod Security: KAITO's code sets none of the pod fields baseline judges but hostPath, and
    the models its 0.12 pods mount the node's CUDA toolkit for are the catalog's list."""
    facts = upstream_facts.load("kaito", version, "pod-security.yaml")
    assert {f: paths for f, paths in facts["podFields"].items() if f != "HostPath" and paths} == {}
    minor = ".".join(version.split(".")[:2])
    listed = catalog.pod_security().host_path.get(minor)
    if not facts["podFields"]["HostPath"]:
        assert listed is None
        return
    assert listed is not None
    derived = facts["cudaToolkitHostPath"]
    assert (listed.path, listed.architectures, listed.preset_names) == (
        derived["path"],
        derived["architectures"],
        derived["presetNames"],
    )
    models = upstream_facts.load("kaito", version, "model-catalog.yaml")["models"]
    wanted = {
        model_id.lower()
        for model_id, m in models.items()
        if set(m.get("architectures") or []) & set(derived["architectures"])
        or model_id.rsplit("/", 1)[-1].lower() in derived["presetNames"]
    }
    assert set(listed.models) == wanted
    assert catalog.pod_security().levels == {"enforce": "baseline", "warn": "restricted", "audit": "restricted"}
