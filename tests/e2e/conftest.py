"""The session the end-to-end tests share: the toolchain scripts/e2e-tools built, one API server
with KAITO's CRDs, and the stand-in for KAITO's controller. Run by `make e2e`:

    KAITO_AKS_E2E_BIN=$(scripts/e2e-tools | tail -1) .venv/bin/python -m pytest tests/e2e

Nothing here is skipped: a missing tool fails the run with the reason."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import ROOT, Cluster, StandInKaito, installed_sdk_version

# KAITO's CRDs as the project derived them from the release (components/tests/upstream, with
# its provenance): as on a cluster where KAITO is installed.
CRDS = ROOT / "components" / "tests" / "upstream" / "kaito-0.8.1" / "crds"


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


@pytest.fixture(scope="session")
def cluster(bin_dir: Path, work: Path) -> Iterator[Cluster]:
    c = Cluster(bin_dir, work)
    try:
        c.start()
        files = sorted(CRDS.glob("*.yaml"))
        assert files, f"no KAITO CRDs under {CRDS}: regenerate them with scripts/upstream_data.py"
        c.apply(*files)
        c.kubectl(
            "wait",
            "--for=condition=Established",
            "--timeout=60s",
            "crd/workspaces.kaito.sh",
            "crd/inferencesets.kaito.sh",
        )
        yield c
    except BaseException:
        print(c.logs())
        raise
    finally:
        c.stop()


@pytest.fixture(scope="session")
def kaito(cluster: Cluster) -> Iterator[StandInKaito]:
    stand_in = StandInKaito(cluster)
    stand_in.start()
    yield stand_in
    stand_in.stop()


@pytest.fixture(scope="session")
def kubernetes_provider() -> str:
    return installed_sdk_version("pulumi-kubernetes")


def pytest_report_header() -> list[str]:
    return [f"kaito-aks e2e: checkout {ROOT}"]
