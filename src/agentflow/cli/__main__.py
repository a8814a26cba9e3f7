"""`python -m agentflow.cli` is `flowc`."""

from agentflow.cli import main

main()
