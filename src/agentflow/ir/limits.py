"""Numeric limits of the plan IR shared by the checker and the plan validator (no heavy imports)."""

#: ``retry.attempts`` counts extra tries after the first; more than this is refused (a plan error
#: at load time, a `.flow` error at check time).
MAX_RETRY_ATTEMPTS = 20
