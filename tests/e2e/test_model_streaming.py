"""KAITO 0.12's ModelMirror and ModelStreaming, the Kubernetes half, against the real engine and an
API server with KAITO 0.12.0's CRDs (the real modelmirrors.kaito.sh among them) and a stand-in for
KAITO with both gates on (`streaming_stand_ins.StandInKaito012Streaming`, which says so).

A program of the library's components deploys what a stack of `kaito-aks:defaults: 3` deploys on
the cluster for a model of KAITO's Hugging Face catalog: ModelStreaming's blob-fuse StorageClass
and its kaito-model-streamer ServiceAccount (annotated with the kubelet identity's client id), then
the model as an InferenceSet whose template carries the StorageClass and ServiceAccount
annotations. The stand-in does what KAITO does with them: it checks both, creates the ModelMirror
(named by the id's SHA-256) that the real CRD accepts, reports status.download while it
"downloads", and holds the Workspace (ModelMirrorNotReady) until the mirror is Ready. `pulumi up`
returns only after that; what `status` prints of the mirror is read from the cluster; a second
`up --expect-no-changes` changes nothing.

Not run here (the e2e has no azure-native provider and no Azure): the Azure half, the federated
credential, the blob role and the cluster's Blob CSI driver (`ModelStreamingArgs.azure_access`
false; the render tests check what the stack sends Azure: tests/test_model_streaming.py), and the
stack's `kaito.modelStreaming`, which needs cluster.aks. No download Job, CSI driver or KAITO
webhook runs."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from harness import CREATED_BY, Cluster, Project, stack_project, wait_for
from streaming_stand_ins import MIRRORS, STAND_IN_SPEED, StandInKaito012Streaming

from kaito_aks import catalog
from kaito_aks.kaito.modelmirror import read_mirror
from kaito_aks.waits.kube_client import KubeClient

NS = "streaming"
MODEL = "microsoft/Phi-4-mini-instruct"  # in KAITO 0.12's Hugging Face catalog
MIRROR = hashlib.sha256(MODEL.encode()).hexdigest()[:6]  # ModelMirrorCRName, computed here on its own
CLIENT_ID = "5f1c6a2e-0000-4000-8000-000000000e2e"  # the kubelet identity's client id (a stand-in value)
A100 = "Standard_NC24ads_A100_v4"

PROGRAM = '''"""A program of the e2e: a model of KAITO 0.12's catalog whose weights KAITO mirrors and
streams, after the Kubernetes objects ModelStreaming makes for it (its Azure side is not run here)."""
import pulumi

from kaito_aks import (
    KaitoModel,
    KaitoModelArgs,
    KubeconfigCluster,
    KubeconfigClusterArgs,
    ModelStreaming,
    ModelStreamingArgs,
    WeightsStreamingArgs,
)
from kaito_aks.model_streaming import mirrored_model_id, model_mirror_name

cluster = KubeconfigCluster("cluster", KubeconfigClusterArgs(context="e2e"))
streaming = ModelStreaming(
    "model-streaming",
    ModelStreamingArgs(namespaces=["{ns}"], kubelet_identity_client_id="{client_id}", azure_access=False),
    opts=pulumi.ResourceOptions(provider=cluster.provider),
)
phi = KaitoModel(
    "phi",
    KaitoModelArgs(
        name="phi",
        namespace="{ns}",
        kaito_version="0.12.0",
        model="{model}",
        node_provisioning="auto",
        instance_type="{a100}",
        weights_streaming=WeightsStreamingArgs(),
    ),
    opts=pulumi.ResourceOptions(provider=cluster.provider, depends_on=[streaming]),
)
pulumi.export("endpoint", phi.endpoint)
pulumi.export("modelMirror", model_mirror_name(mirrored_model_id("{model}", "0.12.0")))
'''


@pytest.fixture(scope="module")
def project(
    bin_dir: Path,
    cluster_streaming: Cluster,
    work: Path,
    kaito_streaming: StandInKaito012Streaming,
    kubernetes_provider: str,
) -> Iterator[Project]:
    cluster_streaming.kubectl("create", "namespace", NS)
    p = stack_project(bin_dir, cluster_streaming, work, "streaming", "streaming", kubernetes_provider)
    program = PROGRAM.replace("{ns}", NS).replace("{client_id}", CLIENT_ID).replace("{model}", MODEL)
    (p.path / "__main__.py").write_text(program.replace("{a100}", A100))
    p.init()
    yield p
    p.pulumi("destroy", "--yes", "--skip-preview", check=False, quiet=True)


def get(cluster: Cluster, path: str) -> dict[str, Any]:
    return dict(cluster.api("GET", path))


def mirror_downloading(cluster: Cluster) -> bool:
    found = cluster.api("GET", MIRRORS)["items"]
    return any(m["metadata"]["name"] == MIRROR and (m.get("status") or {}).get("download") for m in found)


def conditions(obj: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {
        c["type"]: (c["status"], c["reason"], c["message"]) for c in (obj.get("status") or {}).get("conditions", [])
    }


def test_a_catalog_model_waits_for_its_mirror_then_serves_and_a_second_up_changes_nothing(
    project: Project, cluster_streaming: Cluster, kaito_streaming: StandInKaito012Streaming
) -> None:
    kaito_streaming.downloading.add(MIRROR)  # the download goes on until the test has looked
    with ThreadPoolExecutor(1) as pool:
        up = pool.submit(project.pulumi, "up", "--yes", "--skip-preview", check=False, quiet=True)
        try:
            wait_for(lambda: mirror_downloading(cluster_streaming) or up.done(), "the ModelMirror's download", 180)
            assert not up.done(), up.result().stdout[-3000:] + up.result().stderr[-3000:]

            # what the program made, as KAITO's guide makes it by hand (Steps 2 and 3)
            sc = get(cluster_streaming, "/apis/storage.k8s.io/v1/storageclasses/blob-fuse")
            assert (sc["provisioner"], sc["parameters"], sc["reclaimPolicy"]) == (
                "blob.csi.azure.com",
                {"protocol": "fuse2", "skuName": "Premium_LRS"},
                "Retain",
            )
            assert "--block-cache" in sc["mountOptions"]
            sa = get(cluster_streaming, f"/api/v1/namespaces/{NS}/serviceaccounts/kaito-model-streamer")
            assert sa["metadata"]["annotations"]["azure.workload.identity/client-id"] == CLIENT_ID
            iset = get(cluster_streaming, f"/apis/kaito.sh/v1beta1/namespaces/{NS}/inferencesets/phi")
            wanted = {
                "kaito.sh/model-mirror-storage-class": "blob-fuse",
                "kaito.sh/streaming-service-account": "kaito-model-streamer",
            }
            template = iset["spec"]["template"]
            assert wanted.items() <= template["metadata"]["annotations"].items()
            assert template["inference"]["preset"]["name"] == MODEL

            # the ModelMirror KAITO made, as the real CRD stored it (nothing pruned)
            mirror = get(cluster_streaming, f"{MIRRORS}/{MIRROR}")
            disk = int(catalog.find_preset(MODEL, "0.12").model_gib + 80)  # generator.go: model files + 80 GiB
            assert mirror["spec"] == {
                "mode": "Managed",
                "source": {"registry": "huggingface", "modelID": MODEL},
                "storage": {"size": f"{disk}Gi", "storageClassName": "blob-fuse"},
                "jobNamespace": NS,
                "serviceAccountName": "kaito-model-streamer",
            }
            assert mirror["status"]["download"]["speedBytesPerSecond"] == STAND_IN_SPEED
            assert mirror["status"]["download"]["remainingSeconds"] > 0
            assert "phase" not in mirror["status"], "KAITO sets no phase while it downloads"

            # the child Workspace carries the annotations, and KAITO holds it for the weights
            (child,) = cluster_streaming.api(
                "GET", f"/apis/kaito.sh/v1beta1/namespaces/{NS}/workspaces?labelSelector={CREATED_BY}%3Dphi"
            )["items"]
            assert wanted.items() <= child["metadata"]["annotations"].items()
            held = conditions(child)
            assert held["ModelMirrorReady"] == ("False", "ModelMirrorPending", "Model download in progress")
            assert held["ResourceReady"] == ("False", "ModelMirrorNotReady", "Model download in progress")

            # what `status` prints of it meanwhile (stacks/status.py: the mirror, read from the cluster)
            reader = KubeClient.from_kubeconfig(path=str(cluster_streaming.kubeconfig), context="e2e")
            said = read_mirror(reader, MIRROR).text()
            assert said.startswith(
                f"ModelMirror {MIRROR}: Pending, downloading at {STAND_IN_SPEED / 1e6:.1f} MB/s, about "
            )
            assert said.endswith("s left"), said
            time.sleep(1)
            assert not up.done(), "pulumi up returned while the weights were still downloading"
        finally:
            kaito_streaming.downloading.discard(MIRROR)
        result = up.result(timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    returned = time.time()

    ready_at = kaito_streaming.mirror_ready_at[MIRROR]
    iset = get(cluster_streaming, f"/apis/kaito.sh/v1beta1/namespaces/{NS}/inferencesets/phi")
    key = f"{NS}/phi/{iset['metadata']['uid']}"
    assert ready_at <= kaito_streaming.ready_at[key] <= returned, "the model served before its weights were mirrored"
    mirror = get(cluster_streaming, f"{MIRRORS}/{MIRROR}")
    assert mirror["status"]["phase"] == "Ready"
    assert mirror["status"]["modelPath"] == f"/models/{MODEL}"
    assert mirror["status"]["download"] == {"speedBytesPerSecond": 0, "remainingSeconds": 0}
    (child,) = cluster_streaming.api(
        "GET", f"/apis/kaito.sh/v1beta1/namespaces/{NS}/workspaces?labelSelector={CREATED_BY}%3Dphi"
    )["items"]
    assert conditions(child)["ModelMirrorReady"] == ("True", "ModelMirrorReady", "Model download complete")
    assert project.outputs()["modelMirror"] == MIRROR, "the program names another mirror than KAITO made"
    reader = KubeClient.from_kubeconfig(path=str(cluster_streaming.kubeconfig), context="e2e")
    assert read_mirror(reader, MIRROR).text() == f"ModelMirror {MIRROR}: Ready, the weights are mirrored"

    second = project.pulumi("up", "--yes", "--skip-preview", "--expect-no-changes", check=False, quiet=True)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert set(project.preview_steps()) == {"same"}, "a second look found changes"


def test_destroy_takes_the_model_and_the_streaming_objects_and_leaves_kaitos_mirror(
    project: Project, cluster_streaming: Cluster
) -> None:
    """KAITO keeps a ModelMirror (cluster-scoped, shared by every Workspace of the model): no
    Workspace deletion removes it (workspace_gc_finalizer.go@v0.12.0)."""
    project.pulumi("destroy", "--yes", "--skip-preview", quiet=True)
    assert cluster_streaming.api("GET", f"/apis/kaito.sh/v1beta1/namespaces/{NS}/inferencesets")["items"] == []
    assert not cluster_streaming.kubectl_ok("get", "storageclass", "blob-fuse")
    assert not cluster_streaming.kubectl_ok("get", "serviceaccount", "kaito-model-streamer", "-n", NS)
    assert get(cluster_streaming, f"{MIRRORS}/{MIRROR}")["status"]["phase"] == "Ready"
