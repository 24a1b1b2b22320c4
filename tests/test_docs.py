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


def test_the_pages_that_list_the_components_list_every_one_the_schema_has():
    """docs/library.md said "all ten components" and components/README.md left out three; the
    count and the lists come from components/schema.json."""
    import json

    tokens = sorted(json.loads((ROOT / "components" / "schema.json").read_text())["resources"])
    names = [t.rsplit(":", 1)[1] for t in tokens]
    library = (ROOT / "docs" / "library.md").read_text()
    assert f"with all {len(tokens)}\ncomponents" in library or f"with all {len(tokens)} components" in library
    table = library.split("## The components", 1)[1].split("\n\n", 2)[1]
    assert sorted(re.findall(r"^\| `\w+` \| `(kaito-aks:index:\w+)`", table, re.M)) == tokens
    package_page = (ROOT / "components" / "README.md").read_text().split("## Install", 1)[0]
    assert [n for n in names if f"`{n}`" not in package_page] == []


def test_the_development_layout_names_every_package_and_example():
    layout = (ROOT / "docs" / "development.md").read_text().split("## Layout", 1)[1].split("## ", 1)[0]
    packages = [p.name for p in (ROOT / "components" / "kaito_aks").iterdir() if (p / "__init__.py").is_file()]
    assert [p for p in packages if f"{p}/" not in layout] == []
    from stacks import declared

    listed = re.search(r"Pulumi\.\{([\w,]+)\}\.yaml", layout)
    assert listed is not None
    assert listed.group(1).split(",") == sorted(declared.read(ROOT).examples)


VERSION_LIST = re.compile(r"\b\d+\.\d+\.\d+(?:,\s+(?:and\s+|or\s+)?\d+\.\d+\.\d+|\s+(?:and|or)\s+\d+\.\d+\.\d+){2,}")


def test_every_list_of_kaito_releases_is_the_catalogs():
    """Supported KAITO versions were listed three ways (0.8.0 accepted, never documented): a list
    of releases in the docs is every one the catalog supports, or every one this program installs
    (the table of docs/stacks.md#kaito-versions says which is which)."""
    from kaito_aks import catalog

    charts = catalog.kaito_charts()
    every = sorted(charts, key=lambda v: tuple(map(int, v.split("."))))
    installed = [v for v in every if charts[v].helm_install]
    found = 0
    for page in PAGES:
        for listed in VERSION_LIST.findall(page.read_text()):
            versions = sorted(set(re.findall(r"\d+\.\d+\.\d+", listed)), key=lambda v: tuple(map(int, v.split("."))))
            if not set(versions) <= set(every) | {"3.259.0"}:
                continue  # (not KAITO's: another tool's versions)
            found += 1
            assert versions in (every, installed), f"{page.name}: {listed}"
    assert found >= 4
    table = (ROOT / "docs" / "stacks.md").read_text().split("## KAITO versions", 1)[1].split("## ", 1)[0]
    rows = re.findall(r"^\| ([\d., ]+) \|", table, re.M)
    assert sorted((v for row in rows for v in row.split(", ")), key=lambda v: tuple(map(int, v.split(".")))) == every


def commands(prefix: str) -> list[tuple[str, str, bool]]:
    """(page, command line, whether in a shell block) of every `prefix ...` in the pages' shell
    blocks and code spans, a continued line joined, `[optional]` usage brackets and `...` dropped,
    a `<placeholder>` kept as one word."""
    found = []
    for page in PAGES:
        text = page.read_text()
        lines: list[tuple[str, bool]] = []
        for lang, body in re.findall(r"^```(\w*)\n(.*?)^```", text, re.M | re.S):
            if lang in ("", "bash", "sh", "shell"):
                lines += [(line, True) for line in body.replace("\\\n", " ").splitlines()]
        lines += [(span, False) for span in CODE.findall(FENCE.sub("", text))]
        for line, block in lines:
            line = line.strip("`").strip()
            at = line.find(prefix)
            if at >= 0:
                line = re.sub(r"<([\w .:/-]+)>", lambda m: m.group(1).replace(" ", "-"), line[at:])
                found.append((page.name, line.replace("[", "").replace("]", "").replace("...", ""), block))
    return found


def shell_words(line: str) -> list[str]:
    """The words of one command, up to a redirection, pipe or the next command."""
    import shlex

    lexer = shlex.shlex(line, posix=True, punctuation_chars="|&;<>")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    words = []
    for word in lexer:
        if word and set(word) <= set("|&;<>"):
            break
        words.append(word)
    return words


# `pulumi config set`'s flags (pulumi 3.259 `pulumi config set --help`), and whether each takes a value.
PULUMI_CONFIG_SET_FLAGS = {
    "--secret": False, "--plaintext": False, "--path": False, "--non-interactive": False,
    "--stack": True, "-s": True, "--type": True, "--config-file": True, "--cwd": True, "-C": True,
}  # fmt: skip


def pulumi_config_set_problem(words: list[str]) -> str | None:
    """What cobra makes of `pulumi config set <words>`: flags until `--`, then arguments only; a
    key and at most one value."""
    arguments: list[str] = []
    rest = iter(words)
    for word in rest:
        if word == "--":
            arguments += list(rest)
            break
        flag = word.split("=", 1)[0]
        if word.startswith("-") and flag not in PULUMI_CONFIG_SET_FLAGS:
            return f"{word}: not a flag of pulumi config set"
        if word.startswith("-") and PULUMI_CONFIG_SET_FLAGS[flag] and "=" not in word:
            next(rest, None)
        elif not word.startswith("-"):
            arguments.append(word)
    if not 1 <= len(arguments) <= 2:
        return f"takes a key and a value, not {len(arguments)} arguments: {arguments}"
    return None


def test_every_pulumi_config_set_in_the_docs_is_one_the_cli_takes():
    """docs/ci.md wrote `... kubeconfig -- "$(cat kubeconfig.ci)" --stack <stack>`: after `--`
    the Pulumi CLI reads `--stack` as a third argument, and refuses the command."""
    # (a code span that is a mention, `pulumi config set --secret`, names no key)
    found = [(page, line) for page, line, block in commands("pulumi config set") if block or len(shell_words(line)) > 4]
    assert len(found) >= 5
    problems = [
        f"{page}: {line}: {why}" for page, line in found if (why := pulumi_config_set_problem(shell_words(line)[3:]))
    ]
    assert problems == []
    wrong = shell_words('pulumi config set --secret kubeconfig -- "$(cat kubeconfig.ci)" --stack dev')
    assert pulumi_config_set_problem(wrong[3:]) == (
        "takes a key and a value, not 4 arguments: ['kubeconfig', '$(cat kubeconfig.ci)', '--stack', 'dev']"
    )


def test_every_python_m_stacks_command_in_the_docs_parses_as_the_cli_parses_it():
    from stacks.cli import command_line

    found = commands("-m stacks ")
    assert len(found) >= 10
    problems = []
    for page, line, _ in found:
        words = shell_words(line)[2:]
        try:
            command_line().parse_args(words)
        except SystemExit:
            problems.append(f"{page}: {line}")
    assert problems == []
