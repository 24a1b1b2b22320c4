"""kaito-aks: open LLMs on Kubernetes with KAITO, from one validated stack config."""

from stacks.program import main

main()
