"""The diagnostic model and the registry of diagnostic codes (docs/spec/LANGUAGE.md §9).

Detection never prints: the parser and checker return :class:`Diagnostic` objects and the
renderers in :mod:`agentflow.compiler.render` turn them into text, JSON or SARIF.  Codes are the
checker's public contract: add more, never rename (the pattern of mypy's ``errorcodes.py``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from agentflow.core.spans import Span

Severity = Literal["error", "warning"]


@dataclass(frozen=True, slots=True)
class CodeInfo:
    """A registered code: its default severity and a one-line summary."""

    code: str
    severity: Severity
    summary: str


CODES: dict[str, CodeInfo] = {}


def _register(code: str, severity: Severity, summary: str) -> str:
    CODES[code] = CodeInfo(code, severity, summary)
    return code


SYNTAX_ERROR = _register("syntax-error", "error", "the source does not parse")
UNKNOWN_NAME = _register("unknown-name", "error", "a name that is not defined")
UNKNOWN_TYPE = _register("unknown-type", "error", "a type name that is not defined")
UNKNOWN_FIELD = _register("unknown-field", "error", "a field the type does not have")
UNKNOWN_TOOL = _register(
    "unknown-tool", "error", "a tool that is neither declared nor in the prelude"
)
UNKNOWN_ARGUMENT = _register("unknown-argument", "error", "a named argument the tool does not take")
MISSING_ARGUMENT = _register("missing-argument", "error", "a required tool argument is not given")
DUPLICATE_DEFINITION = _register("duplicate-definition", "error", "a name defined twice")
DUPLICATE_FIELD = _register("duplicate-field", "error", "a field or key given twice")
DUPLICATE_CLAUSE = _register("duplicate-clause", "error", "an agent clause given twice")
MISSING_CLAUSE = _register("missing-clause", "error", "an agent block lacks `task` or `expect`")
TYPE_MISMATCH = _register("type-mismatch", "error", "a value of the wrong type")
NOT_SCHEMA_GENERATABLE = _register(
    "not-schema-generatable", "error", "an `expect` type that has no JSON Schema"
)
INVALID_AGENT_TARGET = _register(
    "invalid-agent-target", "error", "an agent target that is not an alias, T.main or T.member(x)"
)
WRITE_NOT_PATH_ARRAY = _register(
    "write-not-path-array", "error", "a `write` scope that is not path[]"
)
INVALID_DURATION = _register("invalid-duration", "error", "a zero or negative duration")
UNKNOWN_ERROR_CODE = _register(
    "unknown-error-code", "error", "a retry or `catch` `on` code that is not one of its codes"
)
EMPTY_TOOLS = _register("empty-tools", "error", "`tools []`: write `tools none` for no tools")
MISSING_RETURN = _register(
    "missing-return", "error", "a stage that does not produce a value on every path"
)
CYCLIC_ALIAS = _register("cyclic-alias", "error", "type aliases that refer to each other")
FORWARD_STAGE_REFERENCE = _register(
    "forward-stage-reference", "error", "a stage used before the stage that defines it"
)
NOT_CALLABLE = _register("not-callable", "error", "a call of something that is not a tool")
RESERVED_NAME = _register(
    "reserved-name",
    "error",
    "a variable, parameter, function or stage named with a word the grammar reads as its keyword",
)
FUNCTION_AS_VALUE = _register(
    "function-as-value", "error", "a function named without its call (`let f = upper`)"
)
INVALID_VALUE = _register("invalid-value", "error", "a value out of its allowed range")
INVALID_ARGUMENT = _register(
    "invalid-argument",
    "error",
    "a literal argument a library function always refuses (a bad regular expression, a fill "
    "that is not one character)",
)
INVALID_CONSTRAINT = _register(
    "invalid-constraint", "error", "a constraint on a type it does not apply to"
)
EFFECTFUL_GATE = _register(
    "effectful-gate",
    "error",
    "a filter condition or a loop's `until`/`else` with a tool call, agent or ask",
)
UNTYPED_TOOL = _register("untyped-tool", "warning", "a catalog tool with no declared signature")
UNREACHABLE_CODE = _register("unreachable-code", "warning", "code after `return` or `fail`")
UNUSED_VARIABLE = _register("unused-variable", "warning", "a `let` that is never read")
COMMENT_LOOKS_LIKE_DIVISION = _register(
    "comment-looks-like-division",
    "warning",
    "a `//` comment after an operand whose text is a divisor (`input.n // 2`)",
)
UNUSED_ALIAS = _register(
    "unused-alias", "warning", "a `use agent` or `use team` alias that no agent call names"
)
UNSUPPORTED_CONSTRUCT = _register(
    "unsupported-construct", "error", "a construct `flowc compile` cannot lower yet"
)
UNCATCHABLE_ERROR_CODE = _register(
    "uncatchable-error-code", "error", "a `catch on` code that stops the run and cannot be caught"
)
IMPOSSIBLE_ERROR_CODE = _register(
    "impossible-error-code", "warning", "a `catch on` code the guarded expression cannot fail with"
)
UNREACHABLE_CATCH = _register(
    "unreachable-catch", "warning", "a `catch` whose guarded expression cannot fail"
)
PARALLEL_ONE_BRANCH = _register(
    "parallel-one-branch", "warning", "a `parallel` block with fewer than two branches"
)
POSITIONAL_ARGUMENT = _register(
    "positional-argument", "error", "a tool argument given without its name"
)
UNKNOWN_FUNCTION = _register(
    "unknown-function", "error", "a call with positional arguments of no library function"
)
ARGUMENT_COUNT = _register(
    "argument-count", "error", "a library function given too few or too many arguments"
)
NAMED_ARGUMENT = _register(
    "named-argument", "error", "a library function's argument given with a name"
)
NO_OVERLAP = _register(
    "no-overlap", "error", "a comparison that can never be true: no value is common to both sides"
)
NON_EXHAUSTIVE_MATCH = _register(
    "non-exhaustive-match",
    "error",
    "a `match` whose arms do not cover every value of its subject, and no `_` arm",
)
UNREACHABLE_ARM = _register(
    "unreachable-arm",
    "warning",
    "a `match` arm no value can reach: its patterns are covered by the arms before it",
)
STUB_MISMATCH = _register(
    "stub-mismatch", "error", "a test stub whose value does not fit the contract it stands in for"
)
UNKNOWN_STUB_TARGET = _register(
    "unknown-stub-target", "error", "a test stub naming no agent alias, stage with agents or tool"
)
STALE_GENERATED_MODULE = _register(
    "stale-generated-module",
    "warning",
    "a client module `flowc gen python` made from an earlier version of the flow ([gen] python)",
)
UNKNOWN_AGENT_PROFILE = _register(
    "unknown-agent-profile",
    "warning",
    "a `use agent`/`use team` name the flow.toml beside the flow has no profile for, but one "
    "of a similar name",
)
UNKNOWN_EXTERN_TOOL = _register(
    "unknown-extern-tool",
    "warning",
    "an `extern tool user__*`/`plan__*` that the flow.toml's [tools] modules or plans directory "
    "has no tool of, but one of a similar name",
)
EXTERN_TOOL_SIGNATURE = _register(
    "extern-tool-signature",
    "warning",
    "an `extern tool user__*`/`plan__*` whose parameters disagree with the Python function's "
    "or the plan's input",
)
COST_OVER_BUDGET = _register(
    "cost-over-budget",
    "warning",
    "the worst case of model calls (`flowc cost`) exceeds the flow's own `budget`",
)
CLAUSE_WITHOUT_TOOL_CALL = _register(
    "clause-without-tool-call",
    "error",
    "a `timeout` or `retry` clause after something that is not a tool call",
)
UNUSED_VALUE = _register(
    "unused-value",
    "error",
    "an expression statement whose value is thrown away and which has no effect",
)
OPTIONAL_UNION_MEMBER = _register(
    "optional-union-member",
    "warning",
    'a `?` on one member of a union (`"a" | "b"?`): the whole union admits null',
)
SLEEP_TOO_LONG = _register("sleep-too-long", "error", "a `sleep` longer than 365 days (8760h)")
INT_OUT_OF_RANGE = _register(
    "int-out-of-range",
    "error",
    "a whole-number literal outside `int` (−2⁶³ … 2⁶³−1)",
)
TOOL_NAME_IS_A_STEP_KIND = _register(
    "tool-name-is-a-step-kind",
    "error",
    "an `extern tool` whose catalog name is a plan's step kind (`value`, `map` …)",
)
INVALID_IMPORT_PATH = _register(
    "invalid-import-path",
    "error",
    "an import path that is not a relative path to a `.flow` file (a URL, an absolute path)",
)
IMPORT_NOT_FOUND = _register("import-not-found", "error", "an imported file that cannot be read")
UNKNOWN_IMPORT = _register(
    "unknown-import", "error", "an imported name that is not a type the imported file declares"
)
IMPORT_CONFLICT = _register(
    "import-conflict",
    "error",
    "an imported type whose name is declared in the importing file or imported from elsewhere",
)
IMPORT_CYCLE = _register("import-cycle", "error", "files that import each other")
IMPORT_ERROR = _register("import-error", "error", "an imported file that has errors")
IMPURE_FUNCTION = _register(
    "impure-function", "error", "a user function's body reads outside its parameters or has effects"
)
RECURSIVE_FUNCTION = _register(
    "recursive-function", "error", "a user function that calls itself, directly or not"
)
OPTIONAL_IN_TEXT = _register(
    "optional-in-text",
    "warning",
    "an optional value (`T?`) interpolated into an agent's `task`/`system` or an `ask`'s "
    "question: it reads `null` when absent",
)
INVALID_CONFIG = _register(
    "invalid-config",
    "error",
    "a flow.toml the flow's run would read that does not load (`flowc check`)",
)
DIVISION_BY_ZERO = _register(
    "division-by-zero",
    "error",
    "a division or modulo whose divisor is `0`: the literal or constant arithmetic (`1 - 1`)",
)
CONSTANT_OVERFLOW = _register(
    "constant-overflow",
    "error",
    "arithmetic on constants whose result is past `int` (or any number): `9223372036854775807 + 1`",
)
BRACE_NOT_INTERPOLATION = _register(
    "brace-not-interpolation",
    "warning",
    "`{x}` in a string where `x` is a value in scope: only `${x}` interpolates",
)

#: The hint of a `.flow` diagnostic whose emit site has none more precise: every diagnostic of
#: the parser and the checker carries a hint (tests/compiler/test_every_diagnostic_has_a_hint.py
#: checks it over the golden corpus, the examples and mutants of them). Most sites give their
#: own; these say the usual fix of the code (:func:`fallback_hint`).
FALLBACK_HINTS: dict[str, str] = {
    UNKNOWN_NAME: "declare it first (`let`, an earlier stage, a parameter), or spell it as declared",
    UNKNOWN_TYPE: "declare it with `type`, or use a built-in type (`text`, `int`, `bool`, …)",
    UNKNOWN_FIELD: "use a field the type declares, or add this one to the type",
    UNKNOWN_TOOL: "declare it with `extern tool name(…) -> T`, or call a prelude tool",
    UNKNOWN_ARGUMENT: "remove the argument, or give one the tool declares",
    MISSING_ARGUMENT: "give every required argument by name: `tool(name: value, …)`",
    DUPLICATE_DEFINITION: "rename one of the two, or remove the second",
    DUPLICATE_FIELD: "give each field or key once: remove or rename the second",
    DUPLICATE_CLAUSE: "keep one of the two clauses",
    MISSING_CLAUSE: 'an agent block needs `task "…"` and `expect T`',
    TYPE_MISMATCH: "give a value of the expected type, or change the type it is checked against",
    NOT_SCHEMA_GENERATABLE: "expect a type made of objects, lists, text, numbers and literals",
    INVALID_AGENT_TARGET: 'name a `use` alias: `agent(a)`, `agent(t.main)`, `agent(t.member("x"))`',
    WRITE_NOT_PATH_ARRAY: 'give `write` a list of paths: `write ["out/"]`',
    INVALID_DURATION: "give a positive duration with its unit: `30s`, `5m`, `2h`",
    UNKNOWN_ERROR_CODE: "name one of the error codes listed in docs/reference/errors.md",
    EMPTY_TOOLS: "write `tools none` for no tools",
    MISSING_RETURN: 'end it with `return <value>` (or an expression), or `fail "…"`',
    CYCLIC_ALIAS: "break the cycle: define one of the types with `type T { … }` fields",
    FORWARD_STAGE_REFERENCE: "a stage sees only the stages declared before it; move it earlier",
    NOT_CALLABLE: "call a tool, a library function or a `fn`; read a value without `(…)`",
    RESERVED_NAME: "choose another name: this word is a keyword of `.flow`",
    FUNCTION_AS_VALUE: "call the function: `f(x)`",
    INVALID_VALUE: "give a value within the allowed range",
    INVALID_ARGUMENT: "give an argument the function accepts: docs/reference/functions.md says each",
    INVALID_CONSTRAINT: "use a constraint that applies to this type (docs/reference/types.md)",
    EFFECTFUL_GATE: "compute the effect first with `let`, then test the value",
    UNSUPPORTED_CONSTRUCT: "write it another way (docs/reference/statements.md)",
    UNCATCHABLE_ERROR_CODE: "remove this code from `catch on`: the run stops on it",
    POSITIONAL_ARGUMENT: "name the argument: `tool(name: value)`",
    UNKNOWN_FUNCTION: "call a library function (docs/reference/functions.md) or declare a `fn`",
    ARGUMENT_COUNT: "give as many arguments as the function's signature takes",
    NAMED_ARGUMENT: "give a library function's arguments in order, without names",
    NO_OVERLAP: "compare with a value the other side can have, or remove the comparison",
    NON_EXHAUSTIVE_MATCH: "add an arm for the missing values, or a last `_ => …` arm",
    STUB_MISMATCH: "give the stub a value that fits the contract it stands in for",
    UNKNOWN_STUB_TARGET: "name an agent alias, a stage with agents, or a tool the flow calls",
    CLAUSE_WITHOUT_TOOL_CALL: "put `timeout`/`retry` right after a tool call: `tool(…) timeout 30s`",
    UNUSED_VALUE: "bind it with `let`, `return` it, or remove it",
    SLEEP_TOO_LONG: "sleep at most 365 days (`8760h`); wait for an answer with `ask` instead",
    INT_OUT_OF_RANGE: "use a smaller number, or a `number` with a fraction (`…0.0`)",
    TOOL_NAME_IS_A_STEP_KIND: "give the tool another catalog name",
    INVALID_IMPORT_PATH: 'import a relative path to a `.flow` file: `"./types.flow"`',
    IMPORT_NOT_FOUND: "check the path: it is relative to the importing file",
    UNKNOWN_IMPORT: "import a type the imported file declares",
    IMPORT_CONFLICT: "rename one on import: `import { T as Other } from …`",
    IMPORT_CYCLE: "move the shared types to a file both import",
    IMPORT_ERROR: "fix the errors of the imported file (`flowc check` it)",
    IMPURE_FUNCTION: "a `fn` computes from its parameters only: pass what it reads as one",
    RECURSIVE_FUNCTION: "a `fn` cannot call itself: use `reduce` or `loop` over the values",
    INVALID_CONFIG: "fix the flow.toml at the line shown (docs/reference/configuration.md)",
    DIVISION_BY_ZERO: "divide by a value that is not zero",
    CONSTANT_OVERFLOW: "compute a value within range, or use a `number` with a fraction",
    UNTYPED_TOOL: "declare it: `extern tool name(…) -> T`",
    UNREACHABLE_CODE: "remove it, or move it before the `return`/`fail`",
    UNUSED_VARIABLE: "remove it, or start its name with `_`",
    COMMENT_LOOKS_LIKE_DIVISION: "write `/` to divide; put a space in `// ` for a comment",
    UNUSED_ALIAS: "remove it, or call it: `agent(alias) { … }`",
    IMPOSSIBLE_ERROR_CODE: "remove the code from `catch on`",
    UNREACHABLE_CATCH: "remove the `catch`",
    PARALLEL_ONE_BRANCH: "give `parallel` two branches or more, or run the one directly",
    UNREACHABLE_ARM: "remove the arm, or move it before the arms that cover it",
    STALE_GENERATED_MODULE: "run `flowc gen python` again",
    UNKNOWN_AGENT_PROFILE: "name a profile of the flow.toml",
    UNKNOWN_EXTERN_TOOL: "name a tool of the flow.toml's [tools] modules or plans",
    EXTERN_TOOL_SIGNATURE: "make the declaration agree with the function or plan",
    COST_OVER_BUDGET: "raise the `budget`, or bound the flow's model calls",
    OPTIONAL_UNION_MEMBER: 'put the `?` on the whole union: `("a" | "b")?`',
    OPTIONAL_IN_TEXT: 'give a default: `${x ?? "none"}`',
    BRACE_NOT_INTERPOLATION: "write `${…}` to read the value",
}


def fallback_hint(code: str, message: str) -> str | None:
    """The hint of a `.flow` diagnostic given none by its emit site (``check_module`` fills
    them in last): for ``syntax-error``, what its ``message`` says was expected ("expected `}`
    …, found `]`" → "write `}` … here"); else :data:`FALLBACK_HINTS` (None for a plan code)."""
    if code == SYNTAX_ERROR:
        for pattern, hint in _SYNTAX_FALLBACKS:
            m = re.match(pattern, message)
            if m is not None:
                return hint.format(*m.groups())
        return "compare the line with the construct's form in docs/reference/ (this code's section of docs/diagnostics.md shows one)"
    return FALLBACK_HINTS.get(code)


#: (message pattern, hint) of `syntax-error`s given no hint, the first that matches
_SYNTAX_FALLBACKS: list[tuple[str, str]] = [
    (r"unexpected character (`.+`)$", "remove {0}: outside a string it has no meaning in `.flow`"),
    (r"unterminated string", 'close the string: `"` on the same line, `"""` for several lines'),
    (r"unterminated comment", "close the comment with `*/`"),
    (
        r"unknown escape `\\(.)`",
        "a backslash that stays is written twice: `\\\\{0}` (as a regular expression wants)",
    ),
    (
        r"an import path cannot contain",
        'write the path as a plain string: `import {{ T }} from "types.flow"`',
    ),
    (r"unexpected (`.+?`): there is no open", "remove {0}, or open what it closes"),
    (r"the (`.+?`) header must be the first", "move {0} to the top of the file"),
    (r"expected (.+?),? found (.+)$", "write {0} here (found {1})"),
]


# Plan files (docs/spec/PLAN_IR.md §1–6): what `flowc plan validate`, the loader and tool
# resolution report.
# Each starts with ``plan-``; :data:`PLAN_CODES` lists them.

PLAN_CODES: set[str] = set()


def _register_plan(code: str, summary: str) -> str:
    assert code.startswith("plan-"), code
    PLAN_CODES.add(code)
    return _register(code, "error", summary)


PLAN_UNREADABLE = _register_plan(
    "plan-unreadable", "a plan file that cannot be read (missing, unreadable, not UTF-8)"
)
PLAN_SYNTAX = _register_plan("plan-syntax", "a plan file that is not YAML or JSON, or is empty")
PLAN_NOT_JSON = _register_plan(
    "plan-not-json",
    "YAML a plan cannot hold: anchors and aliases, tags, non-text keys, NaN or infinities",
)
PLAN_TOO_DEEP = _register_plan("plan-too-deep", "a plan value or template nested too deeply")
PLAN_DUPLICATE_KEY = _register_plan(
    "plan-duplicate-key", "a key given twice in a mapping, or one field under two spellings"
)
PLAN_UNKNOWN_FIELD = _register_plan(
    "plan-unknown-field", "a field the plan, the step or the control step does not have"
)
PLAN_MISSING_FIELD = _register_plan("plan-missing-field", "a required field that is not given")
PLAN_INVALID_VALUE = _register_plan(
    "plan-invalid-value", "a value of the wrong kind, or out of its range"
)
PLAN_INVALID_SCHEMA = _register_plan(
    "plan-invalid-schema", "a JSON Schema that is not valid, or an output schema not an object"
)
PLAN_DUPLICATE_ID = _register_plan("plan-duplicate-id", "a step id used twice")
PLAN_TEMPLATE_SYNTAX = _register_plan(
    "plan-template-syntax", "a `{{ … }}` template or condition expression that does not parse"
)
PLAN_EFFECTFUL_TEMPLATE = _register_plan(
    "plan-effectful-template", "a template with a tool call, an agent, an ask or another effect"
)
PLAN_FUNCTION_CALL = _register_plan(
    "plan-function-call",
    "a template calls no library function, or one with the wrong number of arguments",
)
PLAN_UNKNOWN_NAME = _register_plan(
    "plan-unknown-name", "a template reads a name not in scope (unknown, later, its own step)"
)
PLAN_INVALID_BODY = _register_plan(
    "plan-invalid-body", "a body that is not a single step, or a step that cannot be a body"
)
PLAN_UNKNOWN_ERROR_CODE = _register_plan(
    "plan-unknown-error-code", "a `retry.on` code that is not a retryable error code"
)
PLAN_CYCLE = _register_plan("plan-cycle", "a plan that calls itself through plan__* tools")
PLAN_UNKNOWN_TOOL = _register_plan(
    "plan-unknown-tool", "a tool name or `tools` pattern that no tool of the catalog matches"
)
PLAN_UNCONFIGURED_SERVER = _register_plan(
    "plan-unconfigured-server", "a tool of an MCP server that is not configured"
)
PLAN_NOT_FORMATTABLE = _register_plan(
    "plan-not-formattable", "a plan `flowc plan fmt` cannot rewrite without losing something"
)


@dataclass(frozen=True, slots=True)
class Note:
    """A secondary message with its own span (e.g. "first defined here")."""

    message: str
    span: Span | None = None


@dataclass(frozen=True, slots=True)
class Replacement:
    """The one exact edit a diagnostic's hint states (``&&`` → ``and``, a trailing ``;``
    dropped): the text at ``span`` becomes ``text``; ``title`` says so ("Replace `&&` with
    `and`").  The language server offers it as a quick fix (docs/editors.md)."""

    span: Span
    text: str
    title: str
    #: whether an editor may apply it on its own (LSP ``isPreferred``): not when the hint
    #: leaves a choice (an undeclared agent may be a slip of another name)
    preferred: bool = True


class WeakHint(str):
    """A hint said from the types alone (``"${x}"`` for a number where text goes): the checker
    gives it where nothing knows more, and a site that knows why the value is expected there
    (a `catch` fallback, a stub, an arm of a conditional) replaces it (:func:`replaceable`)."""


def replaceable(hint: str | None) -> bool:
    """Whether a site may put its own hint in place of ``hint``: there is none, or it is a
    :class:`WeakHint`."""
    return hint is None or isinstance(hint, WeakHint)


class FixedHint(str):
    """A hint together with the one exact edit it states (``fix``): the hint's text wherever a
    ``str`` goes; a :class:`Diagnostic` made with it takes that edit as its ``fix`` (the
    grammar's habit hints, :func:`meant_at`)."""

    fix: Replacement

    def __new__(cls, text: str, fix: Replacement) -> FixedHint:
        self = super().__new__(cls, text)
        self.fix = fix
        return self


@dataclass(slots=True)
class Diagnostic:
    """One finding of the parser or checker.

    ``span`` is the primary span (1-based line/column, end exclusive).  ``severity`` defaults to
    the code's registered severity.  ``hint`` is a short suggestion ("did you mean `owner`?");
    ``fix``, when the hint is one exact edit, that edit (given, or carried by a
    :class:`FixedHint` hint, which is kept as a plain ``str``).
    """

    code: str
    message: str
    span: Span
    notes: list[Note] = field(default_factory=list)
    hint: str | None = None
    severity: Severity = "error"
    fix: Replacement | None = None

    def __post_init__(self) -> None:
        info = CODES.get(self.code)
        if info is None:
            raise ValueError(f"unregistered diagnostic code {self.code!r}")
        if self.severity == "error" and info.severity == "warning":
            self.severity = "warning"
        if isinstance(self.hint, FixedHint):
            self.fix = self.fix or self.hint.fix
            self.hint = str(self.hint)

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    def sort_key(self) -> tuple[Any, ...]:
        return (self.span.file, self.span.line, self.span.column, self.code)

    def __str__(self) -> str:
        """The one-line form ``file:line:col: message (hint)`` (``file: message`` for a
        whole-file span): what a plan's load problems print as in ``str(PlanLoadError)`` and in
        the planner's feedback to its model.  Renderers show the code, notes and source."""
        text = f"{self.span}: {self.message}"
        return f"{text} ({self.hint})" if self.hint else text


def did_you_mean(name: str, candidates: Iterable[str]) -> str | None:
    """Return a hint naming the closest of ``candidates`` (any iterable of names: a list, a set,
    a dict's keys) by edit distance, or None: ``meant_hint(closest(name, candidates))``."""
    best = closest(name, candidates)
    return meant_hint(best) if best is not None else None


def meant_hint(meant: str) -> str:
    """The hint of a misspelling: ``did you mean `meant`?``."""
    return f"did you mean `{meant}`?"


def respelling(
    span: Span, wrong: str, meant: str | None, *, before: str = "", after: str = ""
) -> Replacement | None:
    """The quick fix of a misspelt name (``Diagnostic.fix``, made with the "did you mean"
    hint): ``wrong`` replaced by ``meant``, where ``span`` covers exactly ``before``, ``wrong``
    and ``after`` on one line (``before="@"`` for ``@lenght``; ``before=after='"'`` for a
    quoted ``"titel"``, whose quotes are kept).  None when ``meant`` is None or the same, or
    ``span`` is not that long (the name written otherwise: an escape in a string), or a quoted
    name would need one (``"``, ``\\``, ``$`` in ``meant``)."""
    if meant is None or meant == wrong or not wrong:
        return None
    if span.line != span.end_line or span.end - span.start != len(before + wrong + after):
        return None
    if before == '"' and any(c in meant for c in '"\\$'):
        return None
    k = len(before)
    at = Span(
        span.file,
        span.line,
        span.column + k,
        span.line,
        span.column + k + len(wrong),
        span.start + k,
        span.start + k + len(wrong),
    )
    return Replacement(at, meant, f"Change `{wrong}` to `{meant}`")


def meant_at(
    span: Span | None, wrong: str, meant: str | None, *, before: str = "", after: str = ""
) -> str | None:
    """The hint ``did you mean `meant`?`` carrying its :func:`respelling` at ``span`` (a
    :class:`FixedHint`, a plain ``str`` when the span does not read as the name); None when
    ``meant`` is None — so that ``hint=meant_at(…) or otherwise`` reads as before."""
    if meant is None:
        return None
    fix = respelling(span, wrong, meant, before=before, after=after) if span else None
    return FixedHint(meant_hint(meant), fix) if fix is not None else meant_hint(meant)


def meant_among(span: Span | None, wrong: str, candidates: Iterable[str]) -> str | None:
    """:func:`meant_at` of the closest of ``candidates`` to ``wrong`` (:func:`closest`), at
    ``span`` the name as written — bare, or a plain string's text when ``span`` is two longer
    (``"tool_eror"``: its quotes kept); None when none is close."""
    q = '"' if span is not None and span.end - span.start == len(wrong) + 2 else ""
    return meant_at(span, wrong, closest(wrong, candidates), before=q, after=q)


def closest(name: str, candidates: Iterable[str]) -> str | None:
    """The closest of ``candidates`` to ``name`` by edit distance, or None.

    Uses the edit distance with adjacent transpositions (optimal string alignment: ``retyr`` is
    one edit from ``retry``) and a cut-off of ``max(1, len(name) // 3)`` (Starlark-go's resolver
    uses the same idea).  A candidate that shares no character position with ``name`` (every
    character rewritten, e.g. ``x`` → ``y``) is never suggested.
    """
    best: tuple[int, str] | None = None
    limit = max(1, len(name) // 3)
    for cand in sorted(candidates):
        d = _levenshtein(name, cand, limit)
        if d >= max(len(name), len(cand)):
            continue  # nothing in common: a guess, not a typo
        if d <= limit and (best is None or d < best[0]):
            best = (d, cand)
    return best[1] if best else None


def suggested(hint: str) -> str:
    """The name a :func:`did_you_mean` hint suggests (``did you mean `retry`?`` → ``retry``)."""
    return hint.split("`")[1]


def _levenshtein(a: str, b: str, limit: int) -> int:
    """Edit distance of ``a`` and ``b`` counting an adjacent transposition as one edit (optimal
    string alignment); anything above ``limit`` may be returned as ``limit + 1``."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    before: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            d = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                d = min(d, before[j - 2] + 1)
            cur.append(d)
        before, prev = prev, cur
    return prev[-1]


#: Type names users of other languages type first, lower-cased, mapped to the kind of
#: agentflow type they mean (docs/spec/LANGUAGE.md §3).  Used for `unknown-type` and for
#: `list<T>`-style syntax errors.
_FOREIGN_KINDS: dict[str, str] = {}
_KIND_HINTS: dict[str, str] = {}


def _foreign(kind: str, names: str, hint: str) -> None:
    _KIND_HINTS[kind] = hint
    for n in names.split():
        _FOREIGN_KINDS[n] = kind


_foreign("text", "string str char varchar", "agentflow's string type is `text`")
_foreign(
    "int",
    "integer long short i8 i16 i32 i64 u8 u16 u32 u64 int8 int16 int32 int64 uint usize isize",
    "agentflow's integer type is `int`",
)
_foreign("bool", "boolean bool", "agentflow's boolean type is `bool`")
_foreign(
    "number",
    "float double decimal real float32 float64 f32 f64",
    "agentflow's floating-point type is `number` (`int` for whole numbers)",
)
_foreign(
    "object",
    "dict dictionary object record hashmap struct map",
    "agentflow's object types are `{ field: T, … }` or a named `type`; "
    "`map<T>` has text keys and `T` values; `json` is any JSON value",
)
_foreign(
    "list",
    "array list vec vector sequence seq set tuple",
    "agentflow's list type is `T[]` (e.g. `text[]`)",
)
_foreign("json", "any unknown dynamic", "agentflow's type for any JSON value is `json`")
_foreign(
    "null",
    "void none nil undefined unit",
    "agentflow's null type is `null`; `T?` is a `T` that may be null",
)
_foreign("optional", "option optional maybe", "agentflow writes an optional type as `T?`")
_foreign(
    "date",
    "date datetime timestamp time",
    'agentflow has no date type: use `text` (a field may add `@format("date-time")`)',
)


def foreign_type_kind(name: str) -> str | None:
    """The kind of agentflow type a type name from another language means: ``"text"``,
    ``"int"``, ``"bool"``, ``"number"``, ``"object"``, ``"list"``, ``"json"``, ``"null"``,
    ``"optional"`` or ``"date"``; None when ``name`` is not one.  Case-insensitive; a misspelt
    name of 5 letters or more (``Strin``, ``boolen``) matches too."""
    low = name.lower()
    kind = _FOREIGN_KINDS.get(low)
    if kind is None and len(low) >= 5:
        close = closest(low, _FOREIGN_KINDS)
        if close is not None:
            kind = _FOREIGN_KINDS[close]
    return kind


def foreign_type_hint(name: str) -> str | None:
    """A hint naming agentflow's type for a type name from another language (``string`` →
    "agentflow's string type is `text`"), or None.  See :func:`foreign_type_kind`."""
    kind = foreign_type_kind(name)
    return _KIND_HINTS[kind] if kind else None


def foreign_type_meant(name: str) -> str | None:
    """agentflow's type for a type name from another language when its hint names exactly one
    to write in its place (``string`` → ``text``, ``Integer`` → ``int``, ``double`` →
    ``number``, ``void`` → ``null``: the quick fix of :func:`foreign_type_hint`), else None."""
    kind = foreign_type_kind(name)
    return kind if kind in ("text", "int", "bool", "number", "null") else None


def agentflow_type_name(name: str) -> str:
    """``name`` in agentflow spelling when it is a foreign scalar type (``string`` → ``text``,
    ``Integer`` → ``int``, ``any`` → ``json``), else ``name`` unchanged."""
    kind = _FOREIGN_KINDS.get(name.lower())
    return kind if kind in ("text", "int", "bool", "number", "json") else name


def generic_type_hint(base: str, args: list[str]) -> str | None:
    """A hint for a generic type written the way other languages do (``list<text>``,
    ``List[str]``, ``Dict[str, int]``, ``Optional[int]``): the agentflow spelling (``text[]``,
    ``map<int>``, ``int?``), or None when ``base`` is not a known generic."""
    kind = foreign_type_kind(base)
    arg = agentflow_type_name(args[-1]) if args else "T"
    if kind == "list":
        return f"agentflow writes a list as `{arg}[]`"
    if kind == "object":
        return f"agentflow writes an object with text keys as `map<{arg}>`"
    if kind == "optional":
        return f"agentflow writes an optional type as `{arg}?`"
    return None
