"""A tiny concurrent job runner (sample code for the bug-triage example)."""
