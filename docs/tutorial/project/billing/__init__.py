"""Invoices and taxes."""
