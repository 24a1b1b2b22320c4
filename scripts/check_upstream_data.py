#!/usr/bin/env python3
"""Check components/tests/upstream/ against a folder of upstream reference files laid out as
<root>/kaito/v<version>/... and <root>/gpu-operator/<version>/... (what CI has beside the
checkout): each committed folder whose release is there must be what scripts/upstream_data.py
derives from those files, with the same source hashes and commit.

    python scripts/check_upstream_data.py ../shared/reference
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import upstream_data

LAYOUT = {"kaito": "kaito/{tag}", "gpu-operator": "gpu-operator/{tag}"}


def main(root: Path) -> int:
    failed = checked = 0
    for folder in sorted(upstream_data.OUT.iterdir()):
        prov_file = folder / "provenance.yaml"
        if not prov_file.exists():
            continue
        prov = yaml.safe_load(prov_file.read_text())
        layout = LAYOUT.get(prov["project"])
        source = root / layout.format(tag=prov["tag"]) if layout else None
        if source is None or not source.is_dir():
            print(f"{folder.name}: no reference files at {source}; skipped")
            continue
        args = [prov["project"], "--dir", str(source), "--tag", prov["tag"], "--commit", prov["commit"], "--check"]
        failed += upstream_data.main(args) != 0
        checked += 1
    if checked == 0:
        print(f"no release of components/tests/upstream/ found under {root}", file=sys.stderr)
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    sys.exit(main(Path(sys.argv[1])))
