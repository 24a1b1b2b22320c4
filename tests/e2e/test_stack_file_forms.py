"""The front door against the real Pulumi CLI (review B1): for tests/data/cli_forms.yaml, the
program `pulumi preview` runs receives exactly the values `validate` and `render` read."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from harness import ROOT

FORMS = ROOT / "tests" / "data" / "cli_forms.yaml"
# The program: what the engine handed it, as text, into a file beside it.
DUMP = """import json
from pulumi.runtime import config
values = dict(config.get_config_env())
values.update(config.CONFIG.get())
open("handed.json", "w").write(json.dumps(values))
"""


def test_the_program_receives_what_the_front_door_reads(bin_dir: Path, work: Path) -> None:
    from stacks.pulumi_yaml import decode
    from stacks.stackfile import parse_stack_file

    project = work / "forms"
    project.mkdir()
    (project / "Pulumi.yaml").write_text("name: kaito-aks\nruntime: python\n")
    (project / "__main__.py").write_text(DUMP)
    (work / "forms-state").mkdir()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("PULUMI_", "KUBECONFIG", "ARM_"))},
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "PULUMI_HOME": str(work / "forms-home"),
        "PULUMI_BACKEND_URL": f"file://{work / 'forms-state'}",
        "PULUMI_CONFIG_PASSPHRASE": "",
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
        "PULUMI_DIY_BACKEND_NO_LEGACY_WARNING": "true",
        "PULUMI_PYTHON_CMD": str(ROOT / ".venv" / "bin" / "python"),
    }

    def pulumi(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(bin_dir / "pulumi"), *args, "--non-interactive"], cwd=project, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done

    pulumi("stack", "init", "forms")
    stack_file = project / "Pulumi.forms.yaml"
    salt = stack_file.read_text()  # the stack's encryption salt, written by init
    stack_file.write_text(salt + FORMS.read_text())
    pulumi("preview", "--stack", "forms")
    handed = {
        k: decode(v) if k.startswith("kaito-aks:") else v
        for k, v in json.loads((project / "handed.json").read_text()).items()
    }
    read = parse_stack_file(stack_file.read_bytes(), stack_file, "forms").config
    assert sorted(read) == sorted(handed)
    for key, value in handed.items():
        assert json.dumps(read[key]) == json.dumps(value), key
