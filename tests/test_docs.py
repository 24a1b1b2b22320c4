"""The README and the pages under docs/ hold together: every relative link names a file of the
repository, and every #anchor a heading (or an explicit <a id>) of the page it points to, as
GitHub renders them. The package's page (components/README.md) is held to the same."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import ROOT

PAGES = [ROOT / "README.md", ROOT / "components" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^```.*?^```", re.M | re.S)
CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^()\s]+)\)")
HEADING = re.compile(r"^#{1,6} +(.+?) *#*$", re.M)
EXPLICIT = re.compile(r"<a id=\"([^\"]+)\"")
FENCE_BODY = re.compile(r"^```[a-z]*\n(.*?)^```", re.M | re.S)


def prose(text: str) -> str:
    """The page without its code: links inside code are not links."""
    return CODE.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: link text kept, markup and punctuation dropped, lowercase,
    spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = page.read_text()
    seen: dict[str, int] = {}
    found = set(EXPLICIT.findall(text))
    for heading in HEADING.findall(FENCE.sub("", text)):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    broken = []
    for target in LINK.findall(prose(page.read_text())):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...
            continue
        path, _, anchor = target.partition("#")
        where = (page.parent / path).resolve() if path else page
        if not where.exists() or root.resolve() not in [where, *where.parents]:
            broken.append(f"{target}: no such file in the repository")
        elif anchor and where.suffix == ".md" and anchor not in anchors(where):
            broken.append(f"{target}: {where.name} has no heading #{anchor}")
    return broken


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_relative_link_and_anchor_resolves(page: Path):
    assert broken_links(page) == []


def test_the_docs_have_links_to_check():
    assert len(LINK.findall(prose((ROOT / "README.md").read_text()))) >= 20


def test_a_broken_link_or_anchor_is_found(tmp_path: Path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "b.md").write_text('# B page\n\n## Step 1: `make` it\n\n<a id="kept"></a>\n')
    page = tmp_path / "README.md"
    page.write_text(
        "[ok](docs/b.md#step-1-make-it) [ok](docs/b.md#kept) [ok](#top) [web](https://example.com/x)\n"
        "[gone](docs/c.md) [no anchor](docs/b.md#step-2) [outside](../elsewhere.md)\n"
        "`[in code](docs/nothing.md)`\n\n# Top\n"
    )
    (tmp_path.parent / "elsewhere.md").write_text("")
    assert broken_links(page, tmp_path) == [
        "docs/c.md: no such file in the repository",
        "docs/b.md#step-2: b.md has no heading #step-2",
        "../elsewhere.md: no such file in the repository",
    ]


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("After `pulumi up`: what the models are doing (`status`)", "after-pulumi-up-what-the-models-are-doing-status"),
        (
            "YAML (and TypeScript, Go, C#, Java): the component provider",
            "yaml-and-typescript-go-c-java-the-component-provider",
        ),
        ("KAITO's admission rules, release by release", "kaitos-admission-rules-release-by-release"),
        ("Models from Hugging Face (KAITO 0.11+)", "models-from-hugging-face-kaito-011"),
        ("1. Install the tools", "1-install-the-tools"),
    ],
)
def test_anchors_are_githubs(heading: str, anchor: str):
    assert slug(heading) == anchor


def test_a_link_that_names_a_config_section_lands_on_it():
    """serving.md's gateway, autoscaling and metrics links all landed at the top of the
    reference; each section has its anchor (configuration.md#workspaces-autoscale)."""
    reference = ROOT / "docs" / "configuration.md"
    sections = anchors(reference)
    assert {"gateway", "autoscaling", "metrics", "workspaces", "workspaces-autoscale", "cluster-aks"} <= sections
    unanchored = []
    for page in PAGES:
        for text, target in re.findall(r"\[([^\]]+)\]\(([^)#\s]*configuration\.md)\)", prose(page.read_text())):
            if text.strip("`").replace("[]", "").replace(".", "-").lower() in sections:
                unanchored.append(f"{page.name}: [{text}]({target})")
    assert unanchored == []


def test_the_reference_says_every_wait_default():
    from kaito_aks.model.spec import READY_TIMEOUT_MINUTES

    text = (ROOT / "docs" / "configuration.md").read_text()
    byo, auto = READY_TIMEOUT_MINUTES["byo"], READY_TIMEOUT_MINUTES["auto"]
    assert f"Default: {byo} minutes, {auto} with nodeProvisioning auto" in text  # kaito.readyTimeoutMinutes
    assert f"default: kaito.readyTimeoutMinutes ({byo} minutes, {auto} with nodeProvisioning auto)" in text


def test_installing_from_git_is_a_command_that_runs_as_written():
    """No `<owner>` to fill in: the URL is the clone's own origin, pinned to its commit."""
    readme = (ROOT / "components" / "README.md").read_text()
    installs = [line for line in FENCE_BODY.findall(readme) for line in line.splitlines() if "install" in line]
    assert installs
    assert not [line for line in installs if re.search(r"<[a-z ]+>", line)]
    assert "<this repository>" not in (ROOT / "components" / "pyproject.toml").read_text()
