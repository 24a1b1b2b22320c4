"""The session the end-to-end tests share: the toolchain scripts/e2e-tools built, an API server
with KAITO 0.8.1's CRDs and the stand-in for its controller, and (started only for the tests that
ask for it) a second API server with KAITO 0.12.0's CRDs and a stand-in for 0.12's controllers
(InferenceSets, v1beta1 RAGEngines), a third for Karpenter mode and a fourth for KAITO with its
model mirror and streaming on. Run by `make e2e`:

    KAITO_AKS_E2E_BIN=$(scripts/e2e-tools | tail -1) .venv/bin/python -m pytest tests/e2e

Nothing here is skipped: a missing tool fails the run with the reason."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import ROOT, Cluster, StandInKaito, StandInKaito012, installed_sdk_version
from karpenter_stand_ins import StandInKaito012Karpenter, StandInKarpenter
from streaming_stand_ins import StandInKaito012Streaming

# KAITO's CRDs as the project derived them from the releases (components/tests/upstream, with
# their provenance): as on a cluster where KAITO is installed.
UPSTREAM = ROOT / "components" / "tests" / "upstream"
CRDS = UPSTREAM / "kaito-0.8.1" / "crds"
CRDS_0_12 = UPSTREAM / "kaito-0.12.0" / "crds"
# Karpenter's CRDs at the release KAITO 0.12 pins (1.12.0): NodePool, NodeClaim, NodeOverlay,
# AKSNodeClass, with their validation rules (the Go module proxy does not serve the tag; derived
# from its git tree, see the folder's provenance.yaml).
KARPENTER_CRDS = UPSTREAM / "karpenter-1.12.0" / "crds"


@pytest.fixture(scope="session")
def bin_dir() -> Path:
    given = os.environ.get("KAITO_AKS_E2E_BIN")
    if given:
        return Path(given).resolve()
    out = subprocess.run(
        [str(ROOT / "scripts" / "e2e-tools"), "--print-bin"], capture_output=True, text=True, check=True
    )
    return Path(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def work() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="kaito-aks-e2e-") as path:
        yield Path(path)


def _cluster_with(bin_dir: Path, work: Path, *crds: Path, flags: tuple[str, ...] = ()) -> Iterator[Cluster]:
    """An API server with the CRDs of each folder in `crds`, Established; its logs printed on
    failure. `flags`: more kube-apiserver flags."""
    work.mkdir(exist_ok=True)
    c = Cluster(bin_dir, work)
    try:
        c.start(*flags)
        files = sorted(f for folder in crds for f in folder.glob("*.yaml"))
        assert all(any(folder.glob("*.yaml")) for folder in crds), (
            f"no CRDs under one of {crds}: regenerate them with scripts/upstream_data.py"
        )
        c.apply(*files)
        names = [f"crd/{f.stem}" for f in files]
        c.kubectl("wait", "--for=condition=Established", "--timeout=60s", *names)
        yield c
    except BaseException:
        print(c.logs())
        raise
    finally:
        c.stop()


@pytest.fixture(scope="session")
def cluster(bin_dir: Path, work: Path) -> Iterator[Cluster]:
    yield from _cluster_with(bin_dir, work, CRDS)


@pytest.fixture(scope="session")
def kaito(cluster: Cluster) -> Iterator[StandInKaito]:
    stand_in = StandInKaito(cluster)
    stand_in.start()
    yield stand_in
    stand_in.stop()


@pytest.fixture(scope="session")
def cluster_0_12(bin_dir: Path, work: Path) -> Iterator[Cluster]:
    """A second API server, with KAITO 0.12.0's CRDs (InferenceSet and RAGEngine in v1beta1)."""
    yield from _cluster_with(bin_dir, work / "kaito-0.12.0", CRDS_0_12)


@pytest.fixture(scope="session")
def kaito_0_12(cluster_0_12: Cluster) -> Iterator[StandInKaito012]:
    stand_in = StandInKaito012(cluster_0_12)
    stand_in.start()
    yield stand_in
    stand_in.stop()


@pytest.fixture(scope="session")
def cluster_karpenter(bin_dir: Path, work: Path) -> Iterator[Cluster]:
    """A third API server, with KAITO 0.12.0's CRDs and Karpenter 1.12.0's, that authenticates
    kubelet bootstrap tokens (--enable-bootstrap-token-auth), as AKS's API server does."""
    yield from _cluster_with(
        bin_dir, work / "karpenter", CRDS_0_12, KARPENTER_CRDS, flags=("--enable-bootstrap-token-auth",)
    )


@pytest.fixture(scope="session")
def cluster_karpenter_upgrade(bin_dir: Path, work: Path) -> Iterator[Cluster]:
    """A fourth API server, with KAITO 0.12.0's CRDs and none of Karpenter's (its chart installs
    them), that authenticates kubelet bootstrap tokens: a stack's Karpenter through its life."""
    yield from _cluster_with(bin_dir, work / "karpenter-upgrade", CRDS_0_12, flags=("--enable-bootstrap-token-auth",))


@pytest.fixture(scope="session")
def karpenter(cluster_karpenter: Cluster) -> Iterator[StandInKarpenter]:
    stand_in = StandInKarpenter(cluster_karpenter)
    stand_in.start()
    yield stand_in
    stand_in.stop()


@pytest.fixture(scope="session")
def kaito_karpenter(cluster_karpenter: Cluster, karpenter: StandInKarpenter) -> Iterator[StandInKaito012Karpenter]:
    """KAITO 0.12 in Karpenter mode: it starts after Karpenter, as the stack installs them."""
    stand_in = StandInKaito012Karpenter(cluster_karpenter)
    stand_in.start()
    yield stand_in
    stand_in.stop()


@pytest.fixture(scope="session")
def cluster_streaming(bin_dir: Path, work: Path) -> Iterator[Cluster]:
    """A fourth API server, with KAITO 0.12.0's CRDs (ModelMirror among them), for KAITO with its
    ModelMirror and ModelStreaming gates on: they change what it does with every vLLM preset."""
    yield from _cluster_with(bin_dir, work / "streaming", CRDS_0_12)


@pytest.fixture(scope="session")
def kaito_streaming(cluster_streaming: Cluster) -> Iterator[StandInKaito012Streaming]:
    stand_in = StandInKaito012Streaming(cluster_streaming)
    stand_in.start()
    yield stand_in
    stand_in.stop()


@pytest.fixture(scope="session")
def kubernetes_provider() -> str:
    return installed_sdk_version("pulumi-kubernetes")


def pytest_report_header() -> list[str]:
    return [f"kaito-aks e2e: checkout {ROOT}"]
