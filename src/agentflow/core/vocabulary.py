"""The vocabulary of agentflow, defined once: the words of `.flow` (docs/spec/LANGUAGE.md §1–8), the
control steps and error codes of plans (docs/spec/PLAN_IR.md §5, §8), the duration syntax and the
numeric limits.

Every other module imports these names instead of spelling the words again: the scanner and the
syntax-error wording (``grammar``), the checker and the formatter (``compiler``), plan loading and
validation (``ir``), the executor (``runtime``) and the language server (``lsp``).  The grammar
file ``grammar/flow.lark`` necessarily declares one terminal per keyword; a test checks those
declarations against :data:`KEYWORD_TERMINALS` both ways.

Plain tuples, frozensets and dicts, no imports beyond the standard library, so that importing this
module costs nothing (``flowc check`` start-up).  Tuples keep the order in which words are shown
to users (completion lists, hints).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

__all__ = [
    "AGENT_CLAUSES",
    "BODY_CONTROL_STEPS",
    "BODY_KEYS",
    "BODY_SCOPE",
    "BUDGET_LIMITS",
    "BUILTIN_TYPES",
    "CALL_CLAUSES",
    "CALL_CLAUSE_WORDS",
    "CONDITION_OPS",
    "CONTEXTUAL_KEYWORDS",
    "CONTINUATION_WORDS",
    "CONTROL_FIELDS",
    "CONTROL_STEPS",
    "CONTROL_STEP_SPECS",
    "ControlStep",
    "DECLARATION_WORDS",
    "DURATION_PATTERN",
    "DURATION_UNITS_MS",
    "ERROR_CODES",
    "ErrorCode",
    "Code",
    "EXPRESSION_WORDS",
    "PURE_EXPRESSION_WORDS",
    "CAUGHT_CODES",
    "HARD_STOP_CODES",
    "KEYWORDS",
    "KEYWORD_TERMINALS",
    "MAX_BACKOFF_FACTOR",
    "MAX_BACKOFF_MS",
    "MAX_SLEEP_MS",
    "MAX_DURATION_MS",
    "MAX_DURATION_TEXT",
    "MAX_EXPR_DEPTH",
    "MAX_INT",
    "MAX_NESTING",
    "MAX_OPERATORS",
    "MAX_PREFIX",
    "MINUS_PRECEDENCE",
    "NOT_PRECEDENCE",
    "PRECEDENCE",
    "MAX_RETRY_ATTEMPTS",
    "MAX_STRING_NESTING",
    "MIN_INT",
    "PLAN_SCHEMA_KEYS",
    "PRIMITIVE_TYPES",
    "RESERVED_WORDS",
    "NOT_A_MATCH_SUBJECT",
    "RETRYABLE_CODES",
    "STATEMENT_WORDS",
    "TEST_WORDS",
    "EVAL_WORDS",
    "STUB_KINDS",
    "TOOLS_NONE",
    "TOP_LEVEL_WORDS",
    "UNARY_CONDITION_OPS",
    "VERDICT_TYPE",
    "OUTCOME_TYPE",
    "ERROR_TYPE",
    "ERROR_PLACE_TYPE",
    "GENERIC_TYPES",
    "duration_ms",
    "started_items",
]

# ---------------------------------------------------------------------------------------------
# Keywords of `.flow` (docs/spec/LANGUAGE.md §1): each word listed once, under the role that
# introduces it. A word may play other roles too (``input`` also starts an agent clause, ``agent``
# also starts an agent expression, ``else`` closes several constructs); KEYWORDS is their union.

#: Words that start a top-level item; error recovery resumes at them (docs/spec/LANGUAGE.md §2).
TOP_LEVEL_WORDS: tuple[str, ...] = (
    "flow",
    "input",
    "output",
    "deadline",
    "budget",
    "use",
    "extern",
    "type",
    "stage",
    "test",
    "eval",
    "import",
    "fn",
)
#: Words inside a ``test "name" { … }`` block besides ``input`` and ``expect``
#: (docs/reference/testing.md): ``stub agent A returns V then W``, ``stub tool T fails "code"``,
#: ``stub step S returns V``, ``replay "cassette.jsonl"``.
TEST_WORDS: tuple[str, ...] = ("stub", "returns", "fails", "then", "always", "step", "replay")
#: Words inside an ``eval "name" { … }`` block besides ``expect`` and ``judge``
#: (docs/reference/evals.md): ``dataset "cases.jsonl"``, ``score exact = E threshold 0.8``.
EVAL_WORDS: tuple[str, ...] = ("dataset", "score", "threshold")
#: What ``stub KIND NAME`` may stand in for, in the order completion offers them.
STUB_KINDS: tuple[str, ...] = ("agent", "stage", "tool", "ask", "step")
#: Words that follow ``use`` (``agent``, ``team``) or ``extern`` (``tool``; ``type`` is top-level).
DECLARATION_WORDS: tuple[str, ...] = ("agent", "team", "tool")
#: Words that start a statement in a stage body (docs/spec/LANGUAGE.md §5).
STATEMENT_WORDS: tuple[str, ...] = ("let", "require", "fail", "return", "if", "sleep")
#: Words that start an expression, are one, or join two (docs/spec/LANGUAGE.md §4, §6), in the order
#: a completion list offers them.
EXPRESSION_WORDS: tuple[str, ...] = (
    "map",
    "parallel",
    "filter",
    "reduce",
    "loop",
    "ask",
    "verify",
    "agent",
    "try",
    "match",
    "not",
    "and",
    "or",
    "in",
    "true",
    "false",
    "null",
)
#: Words a pure expression — a user function's body (docs/reference/programs.md "User
#: functions") — may use, in the order a completion list offers them.
PURE_EXPRESSION_WORDS: tuple[str, ...] = (
    "if",
    "then",
    "else",
    *EXPRESSION_WORDS[EXPRESSION_WORDS.index("match") :],
)
#: Words that continue a construct another word started (``if … else``, ``map … as x limit n tolerate k``,
#: ``filter … where judge …``, ``ask … expect T default v``, ``verify { check … }``).
CONTINUATION_WORDS: tuple[str, ...] = (
    "else",
    "as",
    "up",
    "to",
    "until",
    "limit",
    "tolerate",
    "catch",
    "on",
    "where",
    "judge",
    "expect",
    "default",
    "check",
    "from",
)
#: Words after which ``match`` is a name, not the keyword of a ``match`` expression (the
#: subject must follow it on the same line; docs/decisions.md "`match` with exhaustiveness").
NOT_A_MATCH_SUBJECT: tuple[str, ...] = (
    "in", "and", "or", "not", "then", "else", "as", "catch", "where", "to", "until", "limit",
    "tolerate",
)  # fmt: skip
#: The clauses of an ``agent(…) { … }`` block (docs/spec/LANGUAGE.md §6), in the order completion
#: offers them, each with a short example (the "clauses take no colon" hint shows it).
AGENT_CLAUSES: dict[str, str] = {
    "task": 'task "…"',
    "input": "input { … }",
    "tools": "tools [read_file, grep]",
    "write": "write [path]",
    "expect": "expect T",
    "timeout": "timeout 3m",
    "retry": "retry { attempts: 1 }",
    "max_iterations": "max_iterations 6",
    "budget": "budget { inferences: 20 }",
    "model": 'model "…"',
    "system": 'system "…"',
}
#: The clauses a tool call may take after its arguments (docs/reference/tools.md "Timeout and
#: retry"), each with a short example; the same words and values as the agent clauses.
CALL_CLAUSES: dict[str, str] = {
    "timeout": "timeout 10s",
    "retry": "retry { attempts: 2, on: [timeout, transient] }",
}
#: The words of :data:`CALL_CLAUSES`.
CALL_CLAUSE_WORDS: frozenset[str] = frozenset(CALL_CLAUSES)
#: ``tools none``: an agent with no tools.
TOOLS_NONE = "none"
#: The ``when_unanswered: {fail: …}`` an ``ask`` with neither ``default`` nor ``else fail`` is
#: lowered with; the run says it with the question and the ways to answer it
#: (:func:`agentflow.runtime.hooks.unanswered_message`).
UNANSWERED_FAIL = "question not answered"
#: The limits a ``budget { … }`` may set (docs/models.md "Budgets"), in the order messages list
#: them: ``inferences`` and ``tokens`` are counts, ``cost`` is dollars.
BUDGET_LIMITS: tuple[str, ...] = ("inferences", "tokens", "cost")

#: Every keyword of `.flow`.
KEYWORDS: frozenset[str] = frozenset(
    (
        *TOP_LEVEL_WORDS,
        *DECLARATION_WORDS,
        *STATEMENT_WORDS,
        *EXPRESSION_WORDS,
        *CONTINUATION_WORDS,
        *AGENT_CLAUSES,
        TOOLS_NONE,
        *TEST_WORDS,
        *EVAL_WORDS,
    )
)
#: Keyword → the grammar terminal the scanner emits for it (``max_iterations`` → ``MAX_ITERATIONS``).
KEYWORD_TERMINALS: dict[str, str] = {w: w.upper() for w in sorted(KEYWORDS)}
#: Keywords that are never a plain name (a variable, a loop variable, an expression), only after
#: ``.`` or before ``:`` (field names, object keys, named arguments).
RESERVED_WORDS: frozenset[str] = frozenset(
    ("let", "return", "require", "fail", "if", "else", "true", "false", "null", "and", "or")
    + ("not", "in")
)
#: Keywords that are a name wherever the grammar does not expect them as a keyword
#: (``let model = …``, ``input.limit``).
CONTEXTUAL_KEYWORDS: frozenset[str] = KEYWORDS - RESERVED_WORDS

# ---------------------------------------------------------------------------------------------
# Built-in types (docs/spec/LANGUAGE.md §3)

#: Primitive type names.
PRIMITIVE_TYPES: tuple[str, ...] = (
    "text",
    "int",
    "number",
    "bool",
    "path",
    "member",
    "duration",
    "json",
)
#: The type of ``verify`` (``{ passed: bool, failures: text[] }``), not schema-generatable.
VERDICT_TYPE = "Verdict"
#: Every name a type position resolves without a declaration; such a name cannot be declared.
#: (``null`` is a literal type and a reserved word, not a name.)
#: Errors as values (docs/reference/errors-as-values.md): ``Outcome<T>`` (a map item's value or
#: error), ``Error`` (a failure: code, message, step, source, where) and ``ErrorPlace`` (its
#: ``where``).  ``Outcome`` is written with its value type only.
OUTCOME_TYPE = "Outcome"
ERROR_TYPE = "Error"
ERROR_PLACE_TYPE = "ErrorPlace"
#: Built-in types written ``Name<T>`` (besides ``map<T>``, whose name is a keyword).
GENERIC_TYPES: tuple[str, ...] = (OUTCOME_TYPE,)
BUILTIN_TYPES: tuple[str, ...] = (
    *PRIMITIVE_TYPES,
    VERDICT_TYPE,
    OUTCOME_TYPE,
    ERROR_TYPE,
    ERROR_PLACE_TYPE,
)

# ---------------------------------------------------------------------------------------------
# Control steps of plans (docs/spec/PLAN_IR.md §5–6)


@dataclass(frozen=True, slots=True)
class ControlStep:
    """A control step: intercepted by the executor, never dispatched to a tool.

    ``fields``/``required``: the keys its ``input`` may / must hold (docs/spec/PLAN_IR.md §5–6);
    ``body_keys``: the input keys that hold one body step (``parallel`` holds its bodies in the
    ``branches`` mapping instead); ``scope``: names a body sees besides the plan's (``item``,
    ``index`` …); ``may_be_body``: whether this step may itself be a body.
    """

    name: str
    fields: frozenset[str]
    required: frozenset[str]
    body_keys: tuple[str, ...] = ()
    scope: frozenset[str] = frozenset()
    may_be_body: bool = False


def _step(
    name: str,
    fields: str,
    required: str,
    body_keys: str = "",
    scope: str = "",
    may_be_body: bool = False,
) -> ControlStep:
    return ControlStep(
        name,
        frozenset(fields.split()),
        frozenset(required.split()),
        tuple(body_keys.split()),
        frozenset(scope.split()),
        may_be_body,
    )


#: Every control step, in docs/spec/PLAN_IR.md §5's order.  Adding one: an entry here, its handler
#: in the executor, and its rules in ``ir/validate.py`` (docs/ARCHITECTURE.md).
CONTROL_STEP_SPECS: dict[str, ControlStep] = {
    s.name: s
    for s in (
        _step("exit", "when status code message output", "status", may_be_body=True),
        _step("decide", "when infer then else", "then", body_keys="then else"),
        _step("filter", "over when infer", "over", may_be_body=True),
        _step(
            "map",
            "over do concurrency on_item_error",
            "over do",
            body_keys="do",
            scope="item index",
        ),
        _step(
            "reduce",
            "over initial do",
            "over initial do",
            body_keys="do",
            scope="item index accumulator",
        ),
        _step(
            "loop",
            "up_to initial do until on_exhausted",
            "up_to initial do",
            body_keys="do",
            scope="round accumulator",
        ),
        _step(
            "agent",
            "prompt output_schema tools max_iterations model system_prompt input agent write"
            " repair_attempts require_final budget",
            "prompt output_schema",
            may_be_body=True,
        ),
        _step("ask", "question schema choices when_unanswered", "question", may_be_body=True),
        _step("parallel", "branches concurrency", "branches"),
        _step("value", "value", "value", may_be_body=True),
        _step("verify", "checks judges", ""),
        _step("try", "do on catch", "do catch", body_keys="do catch", scope="error"),
        _step("sleep", "for", "for", may_be_body=True),
    )
}
#: The control step names.
CONTROL_STEPS: frozenset[str] = frozenset(CONTROL_STEP_SPECS)


def started_items(data: Any) -> int | None:
    """How many items a ``map`` / ``filter`` / ``reduce`` step goes over, from the data of its
    ``step_started`` event: its ``items`` field, the real count (docs/reference/events.md), which
    holds even when ``input`` is a preview whose ``over`` keeps only 10 of them
    (``input_preview: true``); in a trace written before ``items`` existed, the length of a whole
    ``input.over``. None when the event cannot tell (a preview without ``items``, no ``over``).
    Every reader of the count (console, telemetry, ``flowc graph --run``) asks here."""
    if not isinstance(data, dict):
        return None
    items = data.get("items")
    if isinstance(items, int) and not isinstance(items, bool) and items >= 0:
        return items
    if data.get("input_preview"):
        return None
    over = (data.get("input") or {}).get("over") if isinstance(data.get("input"), dict) else None
    return len(over) if isinstance(over, list) else None


#: Control steps that may be a body (ordinary tool calls, including ``plan__*``, may be bodies too).
BODY_CONTROL_STEPS: frozenset[str] = frozenset(
    s.name for s in CONTROL_STEP_SPECS.values() if s.may_be_body
)
#: Input keys of each control step that hold a body step (a single Step).
BODY_KEYS: dict[str, tuple[str, ...]] = {
    s.name: s.body_keys for s in CONTROL_STEP_SPECS.values() if s.body_keys
}
#: Names a body adds to the scope, per control step whose bodies see more names
#: (docs/spec/PLAN_IR.md §3).
BODY_SCOPE: dict[str, frozenset[str]] = {
    s.name: s.scope for s in CONTROL_STEP_SPECS.values() if s.scope
}
#: Field names of each control step's input: ``(allowed, required)`` (docs/spec/PLAN_IR.md §5–6).
CONTROL_FIELDS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    s.name: (s.fields, s.required) for s in CONTROL_STEP_SPECS.values()
}

#: Operators of a plan condition ``{value, op, to}`` (docs/spec/PLAN_IR.md §4).
CONDITION_OPS: frozenset[str] = frozenset(
    ("eq", "ne", "lt", "le", "gt", "ge", "in", "not_in", "contains", "matches")
    + ("exists", "empty", "not_empty")
)
#: The condition operators that take no ``to`` (a missing ``value`` is absent, not an error).
UNARY_CONDITION_OPS: frozenset[str] = frozenset(("exists", "empty", "not_empty"))

# ---------------------------------------------------------------------------------------------
# Error codes of runs (docs/spec/PLAN_IR.md §8)


@dataclass(frozen=True, slots=True)
class ErrorCode:
    """A run-time error code: whether ``retry.on`` may name it, and a one-line summary."""

    code: str
    retryable: bool
    summary: str


#: Every error code a step or run may fail with (docs/spec/PLAN_IR.md §8), and ``truncated``, the
#: code of the error result an agent's model gets for tool calls its cut-off reply held (never run).
#: Retrying is decided by code, never by parsing a message.  ``RunError`` refuses any other
#: code; ``tests/runtime/test_error_codes_are_registered.py`` checks every code the source spells.
ERROR_CODES: dict[str, ErrorCode] = {
    e.code: e
    for e in (
        ErrorCode("timeout", True, "the step ran past its timeout"),
        ErrorCode("rate_limit", True, "the model provider or a tool refused for rate"),
        ErrorCode("transient", True, "a failure that may pass (connection, overload)"),
        ErrorCode("tool_error", False, "a tool failed"),
        ErrorCode("bad_path", False, "a template reads a path that is missing at run time"),
        ErrorCode("output_validation", False, "a result does not match its schema"),
        ErrorCode("deadline_exceeded", False, "the run ran past its deadline"),
        ErrorCode("aborted", False, "the run was stopped (a hook, a signal)"),
        ErrorCode("invalid_member", False, "an agent target names no member of the team"),
        ErrorCode("write_scope", False, "a write outside the agent's `write` scope"),
        ErrorCode("tool_denied", False, "the host policy or a gate refused a tool call"),
        ErrorCode("validation", False, "a plan, input or value that is not valid"),
        ErrorCode("replay_miss", False, "a replayed run asked what the cassette does not hold"),
        ErrorCode("failed", False, "a user `exit` with status error, or `fail`"),
        ErrorCode("plan_cycle", False, "a plan calls itself through plan__* tools"),
        ErrorCode(
            "loop_exhausted",
            False,
            "a `loop … until` ran all its rounds without meeting its condition (`else fail`)",
        ),
        ErrorCode("model_error", False, "the model provider failed for good (request, key, model)"),
        ErrorCode("content_filter", False, "the model provider's content filter refused"),
        ErrorCode("budget_exceeded", False, "the next model call would exceed a budget"),
        ErrorCode(
            "truncated", False, "a reply cut off while writing tool calls (told to the model)"
        ),
        ErrorCode(
            "durable_replay_mismatch",
            False,
            "a resumed durable run met a step its record does not hold at that place",
        ),
        ErrorCode(
            "outcome_unknown",
            False,
            "a non-idempotent tool was running when a durable run stopped; not run again",
        ),
        ErrorCode(
            "invalid_argument",
            False,
            "a library function was given a value it cannot use (a negative count, a bad pattern)",
        ),
        ErrorCode("parse_error", False, "`parse_int`, `parse_number` or `parse_json` met bad text"),
        ErrorCode(
            "regex_timeout", False, "a regular expression ran past its time budget (backtracking)"
        ),
        ErrorCode(
            "arithmetic",
            False,
            "arithmetic with no result: division or modulo by zero, an `int` past 64 bits, a "
            "number too large for JSON",
        ),
        ErrorCode(
            "no_match",
            False,
            "a `match` whose value no arm's pattern matches and that has no `_` arm",
        ),
        ErrorCode(
            "call_limit",
            False,
            "a user function's call made more calls than one call may (an exponential call tree)",
        ),
    )
}
#: Error codes ``retry { on: [...] }`` (docs/spec/LANGUAGE.md §8) and a plan's ``retry.on`` may
#: name.
RETRYABLE_CODES: tuple[str, ...] = tuple(c for c, e in ERROR_CODES.items() if e.retryable)
#: Error codes that stop the run however a step handles failures: a map never tolerates them (nor
#: skips them) — the run was stopped (a hook, a signal), ran past its deadline, or the next model
#: call would exceed a budget (the next item would only hit it too).
HARD_STOP_CODES: frozenset[str] = frozenset({"aborted", "deadline_exceeded", "budget_exceeded"})
#: The codes an error a flow handles can carry (``Error.code``: a ``catch``'s binding, a tolerated
#: map item's error): every code but those that stop the run and ``truncated``, which is only told
#: to the model (its tool calls were never run), never the failure of a step.
CAUGHT_CODES: tuple[str, ...] = tuple(
    c for c in ERROR_CODES if c not in HARD_STOP_CODES and c != "truncated"
)


class Code(StrEnum):
    """The registered run-time error codes (:data:`ERROR_CODES`) as typed members, for every
    raise and every comparison in the source (``RunError(Code.VALIDATION, …)``, ``err.code ==
    Code.ABORTED``): a misspelt member is an error for mypy (and for the test below), where a
    misspelt string was only caught by ``RunError``'s check when that line ran.  A member *is* its string
    (``Code.TIMEOUT == "timeout"``, same hash, ``json.dumps`` writes ``"timeout"``), so plans,
    events, results and the wire keep the plain string; ``RunError`` and ``ErrorInfo`` store
    ``str(code)`` and a plan written by the compiler holds the string.
    ``tests/runtime/test_error_codes_are_registered.py`` checks that the members and
    :data:`ERROR_CODES` agree, that each ``Code.NAME`` written exists, and that no code in
    ``src/`` is written as a string literal where a code goes."""

    TIMEOUT = "timeout"
    RATE_LIMIT = "rate_limit"
    TRANSIENT = "transient"
    TOOL_ERROR = "tool_error"
    BAD_PATH = "bad_path"
    OUTPUT_VALIDATION = "output_validation"
    DEADLINE_EXCEEDED = "deadline_exceeded"
    ABORTED = "aborted"
    INVALID_MEMBER = "invalid_member"
    WRITE_SCOPE = "write_scope"
    TOOL_DENIED = "tool_denied"
    VALIDATION = "validation"
    REPLAY_MISS = "replay_miss"
    FAILED = "failed"
    PLAN_CYCLE = "plan_cycle"
    LOOP_EXHAUSTED = "loop_exhausted"
    MODEL_ERROR = "model_error"
    CONTENT_FILTER = "content_filter"
    BUDGET_EXCEEDED = "budget_exceeded"
    TRUNCATED = "truncated"
    DURABLE_REPLAY_MISMATCH = "durable_replay_mismatch"
    OUTCOME_UNKNOWN = "outcome_unknown"
    INVALID_ARGUMENT = "invalid_argument"
    PARSE_ERROR = "parse_error"
    REGEX_TIMEOUT = "regex_timeout"
    ARITHMETIC = "arithmetic"
    NO_MATCH = "no_match"
    CALL_LIMIT = "call_limit"


# ---------------------------------------------------------------------------------------------
# Durations (docs/spec/LANGUAGE.md §2): ``250ms``, ``90s``, ``5m``, ``1h``, and sums written
# together (``1h30m``).  Digits are ASCII (``[0-9]``, as the JSON Schema of `duration` says).

#: A duration unit → milliseconds.
DURATION_UNITS_MS: dict[str, int] = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}
#: The duration syntax as a regular expression, no anchors (ECMA-262 compatible: the JSON Schema of
#: the `duration` type anchors it).
DURATION_PATTERN = r"([0-9]+(ms|h|m|s))+"
_DURATION = re.compile(DURATION_PATTERN)
_DURATION_PART = re.compile(r"([0-9]+)(ms|h|m|s)")


def duration_ms(text: object) -> int:
    """Parse a duration (``250ms``, ``90s``, ``5m``, ``1h``, ``1h30m``) into milliseconds.

    Blanks around the text are ignored.  Raises ``ValueError`` for anything else (non-strings and
    digits other than ASCII ``0``–``9`` included); ``0s`` gives 0 (callers needing a positive
    duration check it).  docs/spec/LANGUAGE.md §2.
    """
    bare = text.strip() if isinstance(text, str) else None
    if bare is None or not _DURATION.fullmatch(bare):
        raise ValueError(f"invalid duration {text!r}: write e.g. 250ms, 90s, 5m, 1h or 1h30m")
    return sum(int(n) * DURATION_UNITS_MS[u] for n, u in _DURATION_PART.findall(bare))


def duration_text(ms: int) -> str:
    """A number of milliseconds as a duration, largest units first (the inverse of
    :func:`duration_ms`): ``90000`` → ``"1m30s"``, ``1500`` → ``"1s500ms"``, ``0`` → ``"0ms"``."""
    out = []
    for unit, size in sorted(DURATION_UNITS_MS.items(), key=lambda u: -u[1]):
        n, ms = divmod(ms, size)
        if n:
            out.append(f"{n}{unit}")
    return "".join(out) or "0ms"


def seconds_text(secs: float) -> str:
    """How long something took, as every place shows a run's or a step's time (``flowc run``'s
    ``run ok in 1.51s``, ``flowc runs show``, ``flowc ui``): seconds with two decimals."""
    return f"{secs:.2f}s"


# ---------------------------------------------------------------------------------------------
# Numeric limits

#: An ``int`` is a signed 64-bit whole number: a whole number outside this range given as a
#: value (``--input``, an answer to ``ask``, a model's answer) is refused, not taken as an int
#: that no database column, OpenTelemetry attribute or other JSON reader could hold
#: (docs/decisions.md "Text and numbers from outside").
MIN_INT = -(2**63)
MAX_INT = 2**63 - 1
#: ``retry.attempts`` counts extra tries after the first; more than this is refused (a `.flow`
#: error at check time, a plan error at load time).
MAX_RETRY_ATTEMPTS = 20
#: A ``parallel map``'s ``limit`` (the plan's map ``concurrency``) and an agent's
#: ``max_iterations`` are at most these: checked when the flow is compiled for a constant, when
#: the step starts for a computed one (docs/decisions.md "Settings: compile time or run time").
MAX_CONCURRENCY = 1000
MAX_ITERATIONS = 1000
#: A ``loop up to N`` (the plan's loop ``up_to``) runs at most this many rounds: ``N`` from 0 to
#: this, checked when the flow is compiled for a constant, when the loop starts for a computed one.
MAX_LOOP_ROUNDS = 1000
#: The longest single backoff wait of a plan's ``retry.backoff`` (``initial``, ``max``), in ms,
#: and the largest growth ``factor`` (docs/decisions.md "Plans").
MAX_BACKOFF_MS = 3_600_000
#: The longest ``sleep`` (docs/reference/statements.md "sleep"): 365 days, written ``8760h``.
MAX_SLEEP_MS = 365 * 24 * 3_600_000
#: The longest duration a value may be: 876000h (100 years), in ms. Longer is refused where a
#: duration enters (an input, a dataset, a literal) and by ``seconds``/``from_seconds``, so a
#: length in seconds (``ms / 1000``) is exact enough that two different durations never
#: compare equal (docs/reference/lexical.md "Durations").
MAX_DURATION_MS = 100 * 365 * 24 * 3_600_000
#: :data:`MAX_DURATION_MS` as the user reads it
MAX_DURATION_TEXT = "876000h (100 years)"
MAX_BACKOFF_FACTOR = 10.0
#: Deepest bracket nesting the parser accepts (deeper input is a syntax error, which keeps every
#: later recursive pass over the AST far from Python's recursion limit).
MAX_NESTING = 100
#: Deepest nesting of strings inside ``${…}``.
MAX_STRING_NESTING = 20
#: Most binary operators in one expression, and most prefix ``not``/``-`` on one operand.
MAX_OPERATORS = 200
MAX_PREFIX = 50
#: Binding strength of the binary operators (docs/reference/expressions.md "Operators"): the
#: parser's precedence climbing (grammar/builder.py) and every printer of an expression that
#: brackets by it (runtime ``expr_text``, the lowering's templates, ``flowc cost``). Prefix
#: ``not`` binds at :data:`NOT_PRECEDENCE` (between ``and`` and the comparisons), prefix ``-``
#: at :data:`MINUS_PRECEDENCE` (tighter than every binary operator).
PRECEDENCE: dict[str, int] = {
    "??": 1,
    "or": 2,
    "and": 3,
    **dict.fromkeys(("==", "!=", "<", "<=", ">", ">=", "in", "not in"), 5),
    "..": 6,
    "+": 7,
    "-": 7,
    "*": 8,
    "/": 8,
    "%": 8,
}
NOT_PRECEDENCE = 4
MINUS_PRECEDENCE = 9
#: Deepest expression tree a plan template or condition may hold (a member chain ``a.b.c…`` or an
#: operator chain counts one level per link).  Evaluation recurses once per level, so this bounds
#: the evaluator's stack; the parser bounds brackets separately (:data:`MAX_NESTING`).
MAX_EXPR_DEPTH = 200
#: Most calls of user functions one call of a user function may make, itself and the calls it
#: makes in turn included (docs/reference/programs.md "User functions"): functions never recurse,
#: so only a call tree that grows exponentially (``f(x) + f(x)`` at each level) reaches it;
#: past it the call fails with ``call_limit``. About 0.3 s of evaluation.
MAX_FUNCTION_CALLS = 100_000
#: Keys of a plan whose values are JSON Schemas: their strings are never templates.
PLAN_SCHEMA_KEYS: frozenset[str] = frozenset(
    {"output_schema", "outputSchema", "input_schema", "schema"}
)
