"""`python -m agentflow` is `flowc`."""

from agentflow.cli import main

main()
