"""The Pulumi YAML example docs/library.md shows (components/examples/yaml), run as written against the API
server: the component provider added from a local path, a model deployed through the program's
own explicit provider, the waits run, the kubeconfig kept secret; a misspelt input is refused
by name, not dropped."""

from __future__ import annotations

import shutil
from pathlib import Path

from harness import GFD_LABELS, ROOT, TOKEN, Cluster, Project, StandInKaito, copy_into

YAML_MODEL = "phi"
GPU_NODE = "aks-a100-0"
# The docs' YAML example, as it is in the repository; only the package's path is this run's.
EXAMPLE = ROOT / "components" / "examples" / "yaml" / "Pulumi.yaml"


def yaml_project(bin_dir: Path, cluster: Cluster, work: Path, provider_version: str, extra: str = "") -> Project:
    package = work / "package" / "components"
    if not package.exists():
        copy_into(ROOT / "components", package)
    project = Project(bin_dir, cluster, work / ("yaml" + ("-bad" if extra else "")), "yaml")
    text = EXAMPLE.read_text().replace("kaito-aks: ../..", f"kaito-aks: {package}")
    assert str(package) in text, "the example no longer adds the package from ../.."
    if extra:
        text = text.replace("      model: phi-4-mini-instruct\n", f"      model: phi-4-mini-instruct\n{extra}")
    (project.path / "Pulumi.yaml").write_text(text)
    version = (bin_dir / ".pulumi-language-yaml.version").read_text().strip()
    plugin = Path(project.env["PULUMI_HOME"]) / "plugins" / f"language-yaml-v{version}"
    plugin.mkdir(parents=True, exist_ok=True)
    shutil.copy2(bin_dir / "pulumi-language-yaml", plugin / "pulumi-language-yaml")
    # The waits are dynamic resources: Pulumi's Python dynamic-provider process imports them
    # from kaito_aks, as it would from a pip-installed kaito-aks.
    project.env["PYTHONPATH"] = str(package)
    project.install_kubernetes_plugin(provider_version)
    project.init()
    project.pulumi("config", "set", "--secret", "kubeconfig", stdin=cluster.kubeconfig.read_text(), quiet=True)
    project.pulumi("config", "set", "--path", "pulumi:disable-default-providers[0]", "kubernetes", quiet=True)
    return project


def test_a_yaml_program_deploys_a_model_from_the_package(
    bin_dir: Path, cluster: Cluster, work: Path, kaito: StandInKaito, kubernetes_provider: str
) -> None:
    cluster.create_gpu_node(GPU_NODE, {"agentpool": "a100", "nvidia.com/gpu.present": "true"})
    cluster.label_node(GPU_NODE, GFD_LABELS)
    project = yaml_project(bin_dir, cluster, work, kubernetes_provider)
    project.pulumi("up", "--yes", "--skip-preview")
    ws = cluster.objects("workspaces.kaito.sh")[f"{YAML_MODEL}-0"]
    assert ws["inference"]["preset"]["name"] == "phi-4-mini-instruct"
    assert ws["resource"]["labelSelector"] == {"matchLabels": {"agentpool": "a100"}}
    assert YAML_MODEL in cluster.objects("services")
    outputs = project.outputs()
    assert outputs["endpoint"] == f"http://{YAML_MODEL}.default.svc.cluster.local/v1/chat/completions"
    assert (outputs.get("gpuNodes") or {}).get("nodes") == [GPU_NODE]
    # the same type token as the Python component registers: one URN whatever the language
    assert any(r["type"] == "kaito-aks:index:KaitoModel" for r in project.state())
    state = project.pulumi("stack", "export", quiet=True).stdout
    assert TOKEN not in state, "the kubeconfig is in the state in plaintext"
    project.pulumi("destroy", "--yes", "--skip-preview", quiet=True)
    assert f"{YAML_MODEL}-0" not in cluster.objects("workspaces.kaito.sh")


def test_a_misspelt_input_is_refused_by_name(
    bin_dir: Path, cluster: Cluster, work: Path, kubernetes_provider: str
) -> None:
    project = yaml_project(bin_dir, cluster, work, kubernetes_provider, extra="      replica: 2\n")
    assert "replica: 2" in (project.path / "Pulumi.yaml").read_text()
    result = project.pulumi("preview", check=False, quiet=True)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "replica" in output, output[-2000:]
    assert "replicas" in output.lower(), output[-2000:]  # the did-you-mean
