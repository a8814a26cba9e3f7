"""A database URL in a message keeps everything but a password (`safe_url`): a URL without one
is shown as given — no `:***` suggesting a password was given — and an `@` in a SQLite path or a
query is not taken for a user part."""

import pytest

from agentflow.runtime.durable.database import safe_url


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        ("postgresql://nobody@127.0.0.1:1/x", "postgresql://nobody@127.0.0.1:1/x"),
        ("postgresql://u:s3cret@h:5432/db", "postgresql://u:***@h:5432/db"),
        ("postgresql://u:p%40ss@h/db", "postgresql://u:***@h/db"),
        (
            "postgresql://h/db?password=abc&sslmode=require",
            "postgresql://h/db?password=***&sslmode=require",
        ),
        ("postgresql://u:pw@h/d?x=a@b", "postgresql://u:***@h/d?x=a@b"),
        ("sqlite:///runs/a@b/c.sqlite", "sqlite:///runs/a@b/c.sqlite"),
        ("sqlite:///flow.sqlite", "sqlite:///flow.sqlite"),
    ],
)
def test_only_a_password_is_hidden(given: str, shown: str) -> None:
    assert safe_url(given) == shown
