"""Fixtures of the durable-run tests: ``postgres``, an empty database of its own on a throwaway
PostgreSQL server (tests/support/postgres.py) for the fleet tests.  The server is started once
per test process (each pytest-xdist worker has its own) and each test gets a fresh database on
it; a test that asks for it fails when the server cannot start."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import pytest
from support.postgres import PostgresServer

_numbers = itertools.count(1)


@dataclass
class Database:
    """One test's database: ``url``, its SQLAlchemy URL."""

    url: str


@pytest.fixture(scope="session")
def postgres_server():
    """The :class:`~support.postgres.PostgresServer` of this test process."""
    with PostgresServer() as pg:  # raises (the test fails) when it cannot start
        yield pg


@pytest.fixture
def postgres(postgres_server) -> Database:
    """A fresh, empty database on :func:`postgres_server`."""
    return Database(postgres_server.new_database(f"test{next(_numbers)}"))
