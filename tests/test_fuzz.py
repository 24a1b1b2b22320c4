"""A seeded generator of realistic mistakes over this repository's stack files (wrong types at
every key, typos, unknown and missing keys, out-of-range numbers, odd strings, YAML tricks, bad
bytes, keys outside the namespace, misplaced secrets, and the scalar forms, tags, merge keys and
bare keys whose reading the Pulumi CLI decides, written raw), fed to `validate` and `render`.
Each mistake must get a clean answer: no traceback, no hang, bounded memory, every error naming
the file and its line or a config path, and no secret in any output. The seed and the count are
fixed, so a failure reproduces; `FUZZ_CASES` and `FUZZ_SEED` run more."""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import re
import resource
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from stacks.cli import main
from stacks.stackfile import Yaml12Loader
from tests.conftest import EXAMPLES, ROOT

SEED = int(os.environ.get("FUZZ_SEED", "19"))
CASES = int(os.environ.get("FUZZ_CASES", "200"))
RENDER_EVERY = 5  # render is slower (the whole program under mocks): every fifth case
SECRET = "hf_FUZZ_not_a_real_token_51"
HANG_SECONDS = 20
# A problem line: "  [<file>:<line>: ]<config path>: <message>"; a file-level error: "<stack>: <file>:<line>: ..."
PROBLEM_LINE = re.compile(
    r'^  (Pulumi\.fuzz\.yaml:\d+: )?("?[A-Za-z_][\w\-:./"]*"?)(\[\d+\]|\.[\w\-:./"]+|\."[^"]+")*: \S'
)
FILE_ERROR = re.compile(r"^fuzz: (not rendered: )?Pulumi\.fuzz\.yaml:\d+: \S")
# A trap (a form the CLI reads otherwise than it says) is said at its line.
TRAP_LINE = re.compile(r"^  Pulumi\.fuzz\.yaml:\d+: \S.* to the Pulumi CLI")

ODD_VALUES: list[Any] = [
    123, -1, 0, 1.5, 1e9, 2**63, float("inf"), "", "text", "yes", True, None, [], {}, ["x"], {"x": 1},
    "x" * 5000, "a\tb", "ünïcode", "1.30",
]  # fmt: skip


def leaves(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(node, dict):
        for k, v in node.items():
            yield from leaves(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from leaves(v, (*path, i))


def get(node: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        node = node[p]
    return node


def typo(rng: random.Random, word: str) -> str:
    if len(word) < 2:
        return word + "x"
    i = rng.randrange(len(word) - 1)
    return rng.choice(
        [
            word[:i] + word[i + 1 :],
            word[:i] + word[i + 1] + word[i] + word[i + 2 :],
            word.lower(),
            word + "s",
            word.upper(),
        ]
    )


def data_mutation(rng: random.Random, config: dict[str, Any]) -> None:
    """One realistic mistake in the parsed config."""
    ours = [k for k in config if k.startswith("kaito-aks:")]
    if not ours:
        return
    key = rng.choice(ours)
    paths = [p for p in leaves(config[key], (key,)) if len(p) > 1] or [(key,)]
    path = rng.choice(paths)
    parent = get(config, path[:-1])
    last = path[-1]
    kind = rng.randrange(7)
    if kind <= 2:  # a wrong value where a right one was
        parent[last] = rng.choice(ODD_VALUES)
    elif kind == 3 and isinstance(last, str):  # a misspelt key
        parent[typo(rng, last)] = parent.pop(last)
    elif kind == 4 and isinstance(parent, dict):  # an unknown key
        parent[rng.choice(["bogus", "preferredNodes", "count", "instance", "matchLabels", "spec"])] = rng.choice(
            ODD_VALUES
        )
    elif kind == 5 and isinstance(parent, dict):  # a key left out
        parent.pop(last)
    else:  # a number at its limits
        parent[last] = rng.choice([0, -5, 10**7, 10**12, 1e309, 0.5])


# Written raw, where yaml.safe_dump would quote them: numbers, dates, nulls and tags as yaml.v3
# reads them (stacks/pulumi_yaml.py), traps among them.
RAW_VALUES = [
    "010", "017", "0_10", "007", "08", "1_000", "1__0", "0b101", "-0b11", "-0x1", "+0x1F", "0o17", "1.", "1.0",
    "1e3", ".5", "1e400", "9223372036854775808", "123456789012345678901234567890", "2024-06-01", "2001-1-1",
    "2001-12-14T21:59:43Z", "2001-12-14 21:59:43", "2001-02-30", ".inf", "-.Inf", ".nan", "~", "null", "",
    "!!str 010", "!!int 010", "!!float 1", "!!binary aGVsbG8=", "!!timestamp 2001-12-14", "!secret hf_x",
    "!!set {a, b}", "!!omap [a: 1, b: 2]", "!!python/object:os.system x", "yes", "True", "_1",
]  # fmt: skip
RAW_KEYS = ["010", "8", "1.", "1.5", "true", "null", "~", "2024-06-01", "0x1F", "<<"]
# Read otherwise than they say: refused wherever the file is read (the CLI refuses .inf and .nan).
TRAPS = {
    "010", "017", "0_10", "!!int 010", "2024-06-01", "2001-1-1", "2001-12-14T21:59:43Z", "2001-12-14 21:59:43",
    "!!timestamp 2001-12-14", ".inf", "-.Inf", ".nan", "!secret hf_x", "!!python/object:os.system x",
}  # fmt: skip
FORMS = ROOT / "tests" / "data" / "cli_forms.yaml"
RECORDED = ROOT / "tests" / "data" / "cli_forms.json"


def raw_mutation(rng: random.Random, config: dict[str, Any]) -> dict[str, str]:
    """A value or key written in one of yaml.v3's forms, a map merged (`<<`), or a key written
    without its namespace. Returns what to write raw in place of each sentinel after dumping."""
    ours = [k for k in config if k.startswith("kaito-aks:")]
    if not ours:  # an earlier mistake took them all (a stack of few keys, each written without its namespace)
        return {}
    key = rng.choice(ours)
    kind = rng.randrange(4)
    if kind == 2:
        config[key.split(":", 1)[1]] = config.pop(key)  # the CLI reads it as kaito-aks:<key>
        return {}
    paths = [p for p in leaves(config[key], (key,)) if len(p) > 1] or [(key,)]
    path = rng.choice(paths)
    parent, last = get(config, path[:-1]), path[-1]
    sentinel = f"RAW{rng.randrange(10**6)}X"
    if kind == 0:
        parent[last] = sentinel
        return {sentinel: rng.choice(RAW_VALUES)}
    if kind == 1 and isinstance(parent, dict):
        parent[sentinel] = parent.pop(last)
        return {sentinel: rng.choice(RAW_KEYS)}
    maps = [p for p in leaves(config[key], (key,)) if isinstance(get(config, p), dict) and len(p) > 1]
    if not maps:
        return {}
    target = rng.choice(maps)
    holder, at, merged = get(config, target[:-1]), target[-1], get(config, target)
    override = {k: "other" for k in list(merged)[:1]}
    if isinstance(holder, list):  # a second entry merged from the first: PyYAML writes &id / *id
        holder.append({"MERGEX": merged, **override})
    else:
        holder[at] = {"MERGEX": dict(merged), **override}
    return {"MERGEX": "<<"}


def namespace_mistake(rng: random.Random, config: dict[str, Any]) -> None:
    ours = [k for k in config if k.startswith("kaito-aks:")]
    if not ours:  # an earlier mistake took them all
        return
    key = rng.choice(ours)
    config[rng.choice(["kaito:", "kaitoaks:", "Kaito-aks:", "kaito_aks:"]) + key.split(":", 1)[1]] = config.pop(key)


def secret_mistake(rng: random.Random, config: dict[str, Any]) -> None:
    if rng.random() < 0.5:
        config["kaito-aks:hfToken"] = SECRET  # in plaintext: must be refused, never echoed
    else:
        ours = [k for k in config if k.startswith("kaito-aks:") and not k.endswith(("hfToken", "kubeconfig"))]
        if ours:
            config[rng.choice(ours)] = {"secure": "v1:abc:" + SECRET}


def text_trick(rng: random.Random, text: str) -> bytes:
    """YAML tricks and bad bytes on the file as written."""
    lines = text.splitlines(keepends=True)
    kind = rng.randrange(9)
    if kind == 0:  # a key written twice
        candidates = [i for i, line in enumerate(lines) if re.match(r"\s+[\w-]+:", line)]
        i = rng.choice(candidates)
        lines.insert(i + 1, lines[i])
    elif kind == 1:
        lines.append("  kaito-aks:gpuOperator: &r [*r]\n")
    elif kind == 2:
        bomb = "".join(f"  x{i}: &x{i} [{', '.join([f'*x{i - 1}'] * 9)}]\n" for i in range(1, 9))
        lines.append("  x0: &x0 [a, b, c, d, e, f, g, h, i]\n" + bomb)
    elif kind == 3:
        depth = rng.choice([45, 300, 2000])
        lines.append("  kaito-aks:workspaces: " + "[" * depth + "]" * depth + "\n")
    elif kind == 4:
        i = rng.randrange(len(lines))
        return (
            ("".join(lines[:i])).encode() + rng.choice([b"\xff", b"\xc3\x28", b"\x80abc"]) + "".join(lines[i:]).encode()
        )
    elif kind == 5:
        i = rng.randrange(len(lines))
        lines[i] = lines[i].rstrip("\n") + rng.choice(["\x00", "\x07", "\x1b[31m"]) + "\n"
    elif kind == 6:
        i = rng.randrange(1, len(lines))
        lines[i] = "\t" + lines[i]
    elif kind == 7:
        return "".join(lines)[: rng.randrange(1, max(2, len(text)))].encode()
    else:
        return ("\ufeff" + "".join(lines)).encode()
    return "".join(lines).encode()


def cases() -> list[tuple[str, bytes]]:
    rng = random.Random(SEED)
    stacks = {name: (ROOT / f"Pulumi.{name}.yaml").read_text() for name in EXAMPLES}
    out: list[tuple[str, bytes]] = []
    for n in range(CASES):
        name = rng.choice(sorted(stacks))
        text = stacks[name]
        choice = rng.random()
        if choice < 0.2:
            out.append((f"{n}:{name}:text", text_trick(rng, text)))
            continue
        document = yaml.load(text, Loader=Yaml12Loader)
        config = document["config"]
        if choice < 0.4:
            raw: dict[str, str] = {}
            for _ in range(rng.choice([1, 1, 2, 3])):
                raw.update(raw_mutation(rng, config))
            dumped = yaml.safe_dump(document, allow_unicode=True)
            for sentinel, written in raw.items():
                dumped = dumped.replace(sentinel, written)
            out.append((f"{n}:{name}:raw_mutation", dumped.encode()))
            continue
        mutate: Callable[[random.Random, dict[str, Any]], None]
        mutate = namespace_mistake if choice < 0.5 else secret_mistake if choice < 0.6 else data_mutation
        for _ in range(rng.choice([1, 1, 2, 3])):
            mutate(rng, config)
        out.append((f"{n}:{name}:{mutate.__name__}", yaml.safe_dump(document, allow_unicode=True).encode()))
    return out


def test_the_generator_never_chooses_from_nothing() -> None:
    """A stack of one key of the project's, written without its namespace by a first mistake: the
    next mistake finds none of the project's keys and makes none (it raised IndexError when a
    user's stack file shifted the seeded cases onto the add-on stack)."""
    emptied = 0
    for seed in range(40):
        rng = random.Random(seed)
        config: dict[str, Any] = {"kaito-aks:cluster": {"kubeconfig": {"context": "c"}}}
        for mutate in (raw_mutation, raw_mutation, raw_mutation, data_mutation, namespace_mistake):
            mutate(rng, config)
        emptied += not any(k.startswith("kaito-aks:") for k in config)
    assert emptied  # the case the guard is for was reached


@contextlib.contextmanager
def hang_guard(seconds: int) -> Iterator[None]:
    def stop(*_: object) -> None:
        raise TimeoutError(f"no answer after {seconds} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def answer(command: str, directory: Path) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    extra = ["--out", str(directory / "out")] if command == "render" else []
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), hang_guard(HANG_SECONDS):
        code = main([command, "fuzz", "--dir", str(directory), *extra])
    return code, out.getvalue() + err.getvalue()


def judge(
    all_cases: list[tuple[str, bytes]], directory: Path, respond: Callable[[str, Path], tuple[int, str]] = answer
) -> list[str]:
    """What is wrong with the answers to the cases (empty: every one was clean)."""
    problems: list[str] = []
    for n, (label, data) in enumerate(all_cases):
        (directory / "Pulumi.fuzz.yaml").write_bytes(data)
        for command in ("validate", "render") if n % RENDER_EVERY == 0 else ("validate",):
            try:
                code, printed = respond(command, directory)
            except Exception as err:  # a traceback is the failure this test is for
                problems.append(f"{label} {command}: {type(err).__name__}: {err}")
                continue
            if SECRET in printed:
                problems.append(f"{label} {command}: printed the secret")
            if code == 0:
                continue
            lines = printed.splitlines()
            named = [line for line in lines if PROBLEM_LINE.match(line) or FILE_ERROR.match(line)]
            unnamed = [line for line in lines if line.startswith("  ") and not PROBLEM_LINE.match(line)]
            unnamed += [line for line in lines if "to the Pulumi CLI" in line and not TRAP_LINE.match(line)]
            if not named or unnamed:
                problems.append(f"{label} {command}: an error without a path: {(unnamed or lines)[:2]}")
    return problems


def test_every_mistake_gets_a_clean_answer(tmp_path: Path) -> None:
    memory_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    problems = judge(cases(), tmp_path)
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - memory_before) / 1024
    assert not problems, "\n".join(problems[:20])
    assert grown_mib < 500, f"memory grew {grown_mib:.0f} MiB over the cases"


def test_the_judge_catches_a_traceback_a_leak_and_an_error_without_a_path(tmp_path: Path) -> None:
    replies = iter(
        [
            KeyError("workspaces"),
            (1, f"fuzz: 1 problem(s)\n  kaito-aks:hfToken: {SECRET} must be a secret"),
            (1, "fuzz: 1 problem(s)\n  something went wrong"),
        ]
    )

    def respond(command: str, directory: Path) -> tuple[int, str]:
        reply = next(replies)
        if isinstance(reply, Exception):
            raise reply
        return reply

    three = [("a", b"x"), ("b", b"x"), ("c", b"x")]
    problems = judge(three, tmp_path, lambda c, d: respond(c, d) if c == "validate" else (0, ""))
    assert [p.split(":")[0] for p in problems] == ["a validate", "b validate", "c validate"]
    assert "KeyError" in problems[0]
    assert "printed the secret" in problems[1]
    assert "without a path" in problems[2]


DEEP = "DEEP_MAP_SENTINEL"


def _deep(levels: int) -> str:
    """A map nested `levels` deep, as YAML flow text (no serializer of ours recurses that far)."""
    return "{a: " * levels + "{}" + "}" * levels


def _known_classes() -> list[tuple[str, bytes]]:
    """The tracebacks the fuzz found before (issue 28), run every time beside the random cases:
    a kubeconfig path longer than the file system takes, a workspace name given as null (it
    passed validate and broke render), maps nested 500 deep in chart values and a runtime config."""
    phi = {"name": "phi", "model": "phi-4-mini-instruct"}
    documents = {
        "long-kubeconfig-path": {"kaito-aks:cluster": {"kubeconfig": {"path": "a" * 5000}}},
        "nested-path": {"kaito-aks:cluster": {"kubeconfig": {"path": "/".join(["b" * 200] * 30)}}},
        "null-name": {"kaito-aks:workspaces": [{"name": None, "model": "phi-4-mini-instruct"}]},
        "deep-values": {"kaito-aks:kaito": {"values": {"affinity": DEEP}}, "kaito-aks:workspaces": [phi]},
        "deep-config": {"kaito-aks:workspaces": [{**phi, "config": {"notes": DEEP}}]},
    }
    out = []
    for label, config in documents.items():
        config = {"kaito-aks:cluster": {"kubeconfig": {"context": "test"}}, **config}
        text = yaml.safe_dump({"config": config}, width=10**6).replace(DEEP, _deep(500))
        out.append((label, text.encode()))
    return out


def test_the_known_classes_get_clean_answers_every_time(tmp_path: Path) -> None:
    problems = []
    for n, case in enumerate(_known_classes()):
        (tmp_path / f"{n}").mkdir()
        problems += judge([case] * RENDER_EVERY, tmp_path / f"{n}")  # validate, and render once
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", EXAMPLES)
def test_the_unmutated_stack_files_pass(tmp_path: Path, name: str) -> None:
    """The generator's baseline: every stack file of this repository is valid as written."""
    (tmp_path / "Pulumi.fuzz.yaml").write_text((ROOT / f"Pulumi.{name}.yaml").read_text())
    assert answer("validate", tmp_path)[0] == 0


def cli_readings() -> dict[str, Any]:
    """What the Pulumi CLI hands the program for each of RAW_VALUES written in a list
    (tests/data/cli_forms.json, recorded from the CLI; the forms it refuses are not there)."""
    from stacks.pulumi_yaml import decode

    written = FORMS.read_text().split("  kaito-aks:fuzz-forms:", 1)[1].split("\n  bare:", 1)[0]
    forms = [line.removeprefix("    -").strip() for line in written.splitlines()[1:]]
    handed = decode(json.loads(RECORDED.read_text())["values"]["kaito-aks:fuzz-forms"])
    assert forms == [v for v in RAW_VALUES if v not in (".inf", "-.Inf", ".nan")], "cli_forms.yaml lists other forms"
    return dict(zip(forms, handed, strict=True))


def test_every_raw_form_reads_as_the_pulumi_cli_reads_it_or_is_refused_at_its_line(tmp_path: Path) -> None:
    """Each form at a random value of a random stack file (seeded): `validate` refuses a trap at its
    line, and reads any other form as the program would receive it under the real CLI."""
    from stacks.stackfile import read_stack_file

    rng = random.Random(SEED)
    stacks = {name: (ROOT / f"Pulumi.{name}.yaml").read_text() for name in EXAMPLES}
    readings = cli_readings()
    problems: list[str] = []
    for form in RAW_VALUES:
        name = rng.choice(sorted(stacks))
        document = yaml.load(stacks[name], Loader=Yaml12Loader)
        key = rng.choice(
            [
                k
                for k in document["config"]
                if k.startswith("kaito-aks:") and k not in ("kaito-aks:hfToken", "kaito-aks:kubeconfig")
            ]
        )  # (a secret in plaintext is refused as such, never echoed)
        path = rng.choice([p for p in leaves(document["config"][key], (key,)) if len(p) > 1] or [(key, "x")])
        if not isinstance(document["config"][key], dict | list):
            path = (key,)  # a top-level value (kaito-aks:defaults)
        elif len(path) == 1 or not isinstance(get(document["config"], path[:-1]), dict | list):
            path = (key, "x")
        get(document["config"], path[:-1])[path[-1]] = "RAWFORMX"
        text = yaml.safe_dump(document, allow_unicode=True).replace("RAWFORMX", form)
        (tmp_path / "Pulumi.fuzz.yaml").write_text(text)
        code, printed = answer("validate", tmp_path)
        label = f"{form!r} at {path} of {name}"
        if form in TRAPS:
            if code == 0 or not any(
                TRAP_LINE.match(line) or "YAML tag the Pulumi CLI" in line for line in printed.splitlines()
            ):
                problems.append(f"{label}: not refused at its line: {printed[:300]}")
            continue
        got: Any = read_stack_file("fuzz", tmp_path).config
        for part in path:
            got = got[part]
        if json.dumps(got) != json.dumps(readings[form]):
            problems.append(f"{label}: read {got!r}, the CLI hands {readings[form]!r}")
    assert not problems, "\n".join(problems)
