"""Every stack-file fragment the README and the docs show is a stack `validate` accepts (review 2,
G3): a fragment is completed only with what it leaves out (a cluster, the location, the hfToken a
gated model needs), never changed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from stacks.cli import main
from tests.conftest import ROOT

# the pages' stack files; the Pulumi YAML program (example-yaml) is run by its own test
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCKS = [
    b
    for page in PAGES
    for b in re.findall(r"```yaml\n(.*?)```", page.read_text(), re.S)
    if "kaito-aks:" in b and "resources:" not in b
]


def fragments() -> list[tuple[str, str]]:
    """(title, text): a block with `# title` lines at the left edge holds one stack per title."""
    out: list[tuple[str, str]] = []
    for block in BLOCKS:
        parts = re.split(r"^# (.+)\n", block, flags=re.M)
        if len(parts) == 1:
            out.append((block.splitlines()[0].strip(), block))
        else:
            out += [(parts[i], parts[i + 1]) for i in range(1, len(parts), 2)]
    return out


def completed(text: str) -> tuple[str, bool]:
    """The fragment as a stack file, and whether it needs the hfToken secret."""
    body = text if text.startswith("config:") else "config:\n" + text
    config = yaml.safe_load(body)["config"]
    if "kaito-aks:cluster" not in config:
        auto = (config.get("kaito-aks:kaito") or {}).get("nodeProvisioning") == "auto"
        body += (
            "  kaito-aks:cluster: {aks: {resourceGroup: readme-rg, name: readme}}\n"
            if auto
            else "  kaito-aks:cluster: {kubeconfig: {context: readme}}\n"
        )
    if "azure-native:location" not in config:
        body += "  azure-native:location: eastus2\n"
    return body, "hfToken" in text and "kaito-aks:hfToken:" not in text  # (a fragment may write its own)


def test_the_readme_shows_stack_fragments():
    titles = [title for title, _ in fragments()]
    assert len(titles) >= 8, titles
    assert {"auto (Pulumi.auto.yaml)", "the add-on"} <= set(titles)


@pytest.mark.parametrize(("title", "text"), fragments(), ids=[t for t, _ in fragments()])
def test_every_readme_stack_fragment_validates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], title: str, text: str
):
    body, gated = completed(text)
    if gated:
        body += "  kaito-aks:hfToken:\n    secure: v1:readme-example-token\n"
    (tmp_path / "Pulumi.readme.yaml").write_text(body)
    code = main(["validate", "readme", "--dir", str(tmp_path)])
    out = capsys.readouterr()
    assert code == 0, f"{title}:\n{body}\n{out.out}{out.err}"


# The resource provider each Azure type the stacks create belongs to (Microsoft.Authorization
# and Microsoft.Resources are registered in every subscription). A type missing here fails the
# test below: name its provider, and the README's list.
PROVIDERS = {
    "containerservice": "Microsoft.ContainerService",
    "managedidentity": "Microsoft.ManagedIdentity",
    "network": "Microsoft.Network",
    "monitor:AzureMonitorWorkspace": "Microsoft.Monitor",
    "monitor:DataCollectionEndpoint": "Microsoft.Insights",
    "monitor:DataCollectionRule": "Microsoft.Insights",
    "monitor:DataCollectionRuleAssociation": "Microsoft.Insights",
    "authorization": None,
    "resources": None,
}


def readme_section(title: str) -> str:
    return (ROOT / "README.md").read_text().split(f"### {title}", 1)[1].split("\n### ", 1)[0]


def test_the_first_deploy_registers_every_resource_provider_the_stacks_use():
    """The README's list against every Azure type the example stacks render (the snapshots),
    and the nodes' Microsoft.Compute that AKS needs."""
    used = set()
    for path in (ROOT / "tests" / "snapshots").glob("*/azure/*.yaml"):
        kind = yaml.safe_load(path.read_text())["type"].removeprefix("azure-native:")
        module = kind.split(":")[0]
        assert kind in PROVIDERS or module in PROVIDERS, f"{kind}: which resource provider?"
        used.add(PROVIDERS.get(kind, PROVIDERS.get(module)))
    login = readme_section("2. Log in")
    script = re.search(r"for rp in (.*?); do", login, re.S)
    assert script is not None
    registered = set(script.group(1).replace("\\\n", " ").split())
    assert registered == {p for p in used if p} | {"Microsoft.Compute"}


def vcpus(vm_size: str) -> int:
    """vCPUs of an Azure size, from its name (Azure's naming convention: the number after the family)."""
    match = re.match(r"Standard_[A-Z]+(\d+)", vm_size)
    assert match is not None, vm_size
    return int(match.group(1))


def test_the_first_deploy_names_the_quota_of_every_pool_of_dev():
    config = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"]
    system = config["kaito-aks:cluster"]["aks"]["systemPool"]
    pools = [(system["vmSize"], system["count"])]
    pools += [(p["vmSize"], p["count"]) for p in config["kaito-aks:gpuNodePools"] + config["kaito-aks:cpuNodePools"]]
    by_size: dict[str, int] = {}
    for size, count in pools:
        by_size[size] = by_size.get(size, 0) + count
    login = " ".join(readme_section("2. Log in").split())
    words = {1: "one", 2: "two", 3: "three", 4: "four"}
    for size, count in by_size.items():
        assert f"{words[count]} `{size}` ({count * vcpus(size)} vCPUs of the" in login, size
    assert f"{sum(n * vcpus(s) for s, n in by_size.items())} regional vCPUs in all" in login


def test_a_copy_of_dev_made_as_step_4_says_validates_without_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    text = (ROOT / "Pulumi.dev.yaml").read_text().replace("kaito-dev", "team")
    text = text.replace("config:\n", "config:\n  kaito-aks:defaults: 3\n", 1)
    for name in ("phi-4-mini", "tiny-cpu", "docs-rag"):
        text = text.replace(f"    - name: {name}\n", f"    - name: {name}\n      namespace: llm\n")
    (tmp_path / "Pulumi.mine.yaml").write_text(text)
    assert main(["validate", "mine", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "warning" not in out, out
    assert "mine: ok" in out


def test_a_secret_placeholder_lets_validate_run_without_the_pulumi_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    placeholder = re.search(r"```yaml\n(  kaito-aks:hfToken:\n    secure: v1:\w+\n)```", readme_section("4. A stack"))
    assert placeholder is not None
    (tmp_path / "Pulumi.gated.yaml").write_text(
        "config:\n  kaito-aks:cluster: {kubeconfig: {context: c}}\n"
        "  kaito-aks:workspaces:\n    - {name: llama, model: llama-3.1-8b-instruct}\n" + placeholder.group(1)
    )
    assert main(["validate", "gated", "--dir", str(tmp_path)]) == 0, capsys.readouterr().out
