"""The bottom layer of agentflow: what every other layer shares and nothing of agentflow beneath it.

- :mod:`~agentflow.core.spans` — :class:`Span`, the one source-position type;
- :mod:`~agentflow.core.diagnostics` — the diagnostic model, the registry of diagnostic codes,
  ``did_you_mean`` and the hints for type names of other languages;
- :mod:`~agentflow.core.vocabulary` — the language's words, control steps, error codes, duration
  syntax and numeric limits, each defined once;
- :mod:`~agentflow.core.version` — the package version.

Modules here import only the standard library (``tests/test_layers.py`` enforces it), so any layer
may import them and ``flowc check`` pays almost nothing for them.
"""
