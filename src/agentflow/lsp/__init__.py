"""Editor support: the `.flow` language server (``flowc lsp``), see :mod:`agentflow.lsp.server`."""
