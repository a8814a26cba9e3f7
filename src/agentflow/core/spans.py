"""Source positions: the one position type of agentflow.

A :class:`Span` locates text in a user file — a `.flow` program, a plan file (YAML/JSON), a
``{{ … }}`` template inside one — for the parser and checker (every AST node and diagnostic carries
one), for plan loading and validation (every :class:`agentflow.errors.PlanProblem`), for the
``meta.source`` of compiled steps (``file:line:col``, read back with :meth:`Span.parse`) and for
the language server.

Conventions: ``line``/``column`` are 1-based and point at the first character;
``end_line``/``end_column`` are 1-based and point one past the last character (a one-character
token at column 5 has ``end_column == 6``); ``start``/``end`` are 0-based character offsets into
the file's text.  ``line == 0`` means "the whole file" (a problem with no better position, e.g. an
unreadable file).  A *point* (:meth:`Span.at`) has its end equal to its start.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["NO_SPAN", "Span"]


# Not ``frozen=True``: a frozen dataclass's ``__init__`` goes through ``object.__setattr__``
# for every field, which made span creation a fifth of the parse time.  Spans are still
# treated as immutable values (hashable, compared by value); never assign to their fields.
@dataclass(slots=True, unsafe_hash=True)
class Span:
    """A source range in ``file`` (see the module docstring for the conventions)."""

    file: str
    line: int = 0
    column: int = 0
    end_line: int = 0
    end_column: int = 0
    start: int = 0
    end: int = 0

    @classmethod
    def at(cls, file: str, line: int = 0, column: int = 0, offset: int = 0) -> Span:
        """A point: ``file:line:column`` with its end equal to its start (``line`` 0: the whole
        file)."""
        return cls(file, line, column, line, column, offset, offset)

    @classmethod
    def parse(cls, text: object) -> Span | None:
        """``"file:line:col"`` (a compiled step's ``meta.source``) as a point; None when ``text``
        is not of that form (not a string, or line/column not ASCII decimal numbers)."""
        if not isinstance(text, str):
            return None
        rest, _, col = text.rpartition(":")
        file, _, line = rest.rpartition(":")
        if file and _decimal(line) and _decimal(col):
            return cls.at(file, int(line), int(col))
        return None

    def to(self, other: Span) -> Span:
        """The span covering ``self`` through ``other`` (same file)."""
        return Span(
            self.file,
            self.line,
            self.column,
            other.end_line,
            other.end_column,
            self.start,
            other.end,
        )

    def __str__(self) -> str:
        """``file:line:col``, or just ``file`` for a whole-file span (line 0)."""
        if self.line:
            return f"{self.file}:{self.line}:{self.column}"
        return self.file


def _decimal(text: str) -> bool:
    # ``"²".isdigit()`` is true and ``int("²")`` fails: ASCII digits only
    return text.isascii() and text.isdigit()


#: The position of a node built without source text (tests, synthesized nodes).
NO_SPAN = Span("<unknown>", 1, 1, 1, 1, 0, 0)
