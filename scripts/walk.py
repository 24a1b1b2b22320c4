#!/usr/bin/env python3
"""The stack program's shape, measured: the walk from a stack file's config to the registered
components, and how many times each args class is validated on the way.

The walk: the real program runs under the mock engine (stacks.evaluate) while a profiler notes,
at every call and return, which stacks/ module runs; library frames (kaito_aks, pydantic, the
SDK) count as the stacks/ module that called them, and so does the YAML reader (stackfile.py,
pulumi_yaml.py, its own walk). Recorded from `stack_config` (raw config in) through
`build_stack` (the program). A stay is a run of consecutive events in one module; a return is a
stay in a module already left before; a climb is a call into a module first entered earlier in
the walk (a call back into an earlier step). Validations: constructions of every args class
(`dataclasses.replace` makes one, validated in full), per evaluation.

    python scripts/walk.py dev serving [--first] [--path] [--root DIR]
"""

from __future__ import annotations

import argparse
import collections
import importlib
import json
import os
import pkgutil
import sys
from pathlib import Path
from typing import Any

OPAQUE = {"stackfile", "pulumi_yaml"}
ENTRIES = {"stack_config", "build_stack"}


def walk(run: Any, stacks_dir: str) -> dict[str, Any]:
    seq: list[str] = []
    calls: list[tuple[str, str]] = []

    def module_of(frame: Any) -> tuple[str | None, Any]:
        while frame is not None:
            name = frame.f_code.co_filename
            if name.startswith(stacks_dir) and Path(name).stem not in OPAQUE:
                return Path(name).stem, frame
            frame = frame.f_back
        return None, None

    def inside(frame: Any) -> bool:
        while frame is not None:
            if frame.f_code.co_name in ENTRIES and frame.f_code.co_filename.startswith(stacks_dir):
                return True
            frame = frame.f_back
        return False

    def profile(frame: Any, event: str, _: Any) -> None:
        if event not in ("call", "return"):
            return
        module, top = module_of(frame)
        if module is None or not inside(frame):
            return
        if event == "call" and frame is top and seq and seq[-1] != module:
            calls.append((seq[-1], module))
        if not seq or seq[-1] != module:
            seq.append(module)

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    first: dict[str, int] = {}
    for i, m in enumerate(seq):
        first.setdefault(m, i)
    return {
        "stays": len(seq),
        "modules": len(first),
        "returns": len(seq) - len(first),
        "climbs": sum(1 for a, b in calls if first[b] < first[a]),
        "path": " > ".join(seq),
    }


def count_validations() -> collections.Counter[str]:
    """Count every args class's constructions from now on (its __init__ validates)."""
    import kaito_aks
    from kaito_aks.schema import is_args_class

    counts: collections.Counter[str] = collections.Counter()
    seen: set[type] = set()
    for info in pkgutil.walk_packages(kaito_aks.__path__, "kaito_aks."):
        module = importlib.import_module(info.name)
        for cls in [v for v in vars(module).values() if is_args_class(v) and v not in seen]:
            seen.add(cls)
            original = cls.__init__

            def init(self: Any, *, _cls: type = cls, _init: Any = original, **given: Any) -> None:
                counts[_cls.__name__] += 1
                _init(self, **given)

            cls.__init__ = init  # type: ignore[method-assign]
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stacks", nargs="+")
    parser.add_argument("--first", action="store_true", help="the stack's first workspace only (one model's walk)")
    parser.add_argument("--path", action="store_true", help="print the modules in order")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    args = parser.parse_args()
    root = args.root.resolve()
    sys.path[:0] = [str(root), str(root / "components")]
    os.chdir(root)
    from stacks.evaluate import evaluate
    from stacks.stackfile import read_stack_file

    counts = count_validations()
    for name in args.stacks:
        f = read_stack_file(name, root)
        config = dict(f.config)
        if args.first:
            config["kaito-aks:workspaces"] = config["kaito-aks:workspaces"][:1]
            config.pop("kaito-aks:ragEngines", None)
        secrets = {k: "x" * 40 for k in f.secrets} or None
        evaluate(config, stack=name, secrets=secrets)  # (warm: lazy imports and caches)
        counts.clear()
        found = walk(lambda c=config, s=secrets, n=name: evaluate(c, stack=n, secrets=s), str(root / "stacks") + os.sep)
        models = max(1, len(config.get("kaito-aks:workspaces", [])))
        found["KaitoModelArgs per model"] = counts["KaitoModelArgs"] / models
        found["validations"] = dict(counts.most_common())
        path = found.pop("path")
        print(f"{name}{' (first workspace)' if args.first else ''}: {json.dumps(found)}")
        if args.path:
            print(f"  {path}")


if __name__ == "__main__":
    main()
