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
    return body, "hfToken" in text


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
