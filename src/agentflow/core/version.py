"""The version of agentflow (read by packaging from here, shown by ``flowc --version``, SARIF and
the language server)."""

__version__ = "0.1.0"
