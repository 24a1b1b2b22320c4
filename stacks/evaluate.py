"""Evaluate this repository's stack program without an engine, cloud account or cluster: the
real program (stacks/program.py) under kaito_aks.testing's recording mock engine. The unit
tests, `render` and the benchmark all read this record, so they see what `pulumi up` would
send, not what a helper function returns."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from kaito_aks.testing import (
    AFTER_UP,
    GPU_NODES_OUTPUTS,
    Evaluation,
    ProgramMocks,
    RecordingMonitor,
    Registration,
    Secret,
    reveal,
    run,
)
from stacks.config import PROJECT

__all__ = [
    "AFTER_UP",
    "GPU_NODES_OUTPUTS",
    "Evaluation",
    "ProgramMocks",
    "RecordingMonitor",
    "Registration",
    "Secret",
    "evaluate",
    "reveal",
]


def evaluate(
    config: Mapping[str, Any],
    *,
    stack: str = "test",
    secrets: Mapping[str, str] | None = None,
    program: Callable[[], None] | None = None,
    monitor: RecordingMonitor | None = None,
) -> Evaluation:
    """Run the stack program (or `program`) for one stack. `config`: values by full key
    ("kaito-aks:workspaces", "azure-native:location"), structured values as Python objects;
    `secrets`: secret values by full key. Raises what the program raises (StackConfigError for
    bad config); pass your own `monitor` to see what was registered before it did."""

    def stack_program() -> None:
        from stacks.load import load_stack
        from stacks.program import build_stack

        build_stack(*load_stack())

    flat = {k: v if isinstance(v, str) else json.dumps(v) for k, v in config.items()}
    return run(program or stack_program, project=PROJECT, stack=stack, config=flat, secrets=secrets, monitor=monitor)
