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


def test_a_url_with_an_unencoded_at_in_its_password_is_refused_before_the_driver_sees_it() -> None:
    """The driver splits the user part at the first `@` and named the rest of the password as
    the host in its error (`failed to resolve host 'ret@127.0.0.1'`): such a URL is refused
    first, shown without its password, saying to write `%40`."""
    from agentflow.errors import ConfigError
    from agentflow.runtime.durable.database import open_database

    with pytest.raises(ConfigError) as caught:
        open_database("postgresql://user:sec@ret@127.0.0.1:1/db", executor_id="t")
    said = str(caught.value)
    assert "ret" not in said.replace("write it", "") and "sec" not in said, said
    assert "postgresql://user:***@127.0.0.1:1/db" in said and "%40" in said
