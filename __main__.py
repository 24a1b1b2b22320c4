"""kaito-aks: open LLMs on Kubernetes with KAITO, from one validated stack config."""

from stacks.load import load_stack
from stacks.program import build_stack

build_stack(*load_stack())
