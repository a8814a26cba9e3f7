"""The keywords are defined once, in ``core/vocabulary.py``; ``grammar/flow.lark`` necessarily
declares a terminal for each.  These tests read the grammar's ``%declare`` lines and compare them
with the vocabulary both ways, check that the scanner turns each keyword into its terminal where
the grammar takes it, and check the vocabulary's own consistency (each role's words are
keywords, no word twice in one list, the control-step table is closed)."""

from __future__ import annotations

import ast as ast_module
import re
from importlib.resources import files
from pathlib import Path

import pytest
from support import source_tree

from agentflow.core import vocabulary as V
from agentflow.grammar import ast
from agentflow.grammar.parser import parse_module

#: Terminals of flow.lark that are not keywords: token classes, punctuation and operators, and
#: the line-start variants of the newline rule (docs/spec/LANGUAGE.md §1).
NON_KEYWORD_TERMINALS = frozenset(
    "NAME NUMBER DURATION STRING "
    "LPAR LPAR_NL RPAR LSQB LSQB_NL RSQB LBRACE RBRACE "
    "COMMA COLON DOT DOTDOT ARROW FATARROW PIPE QMARK AT EQUALS LT GT LE GE EQ NE QQ "
    "PLUS MINUS MINUS_NL STAR SLASH PERCENT NOT_NL".split()
)


def declared_terminals() -> set[str]:
    grammar = files("agentflow.grammar").joinpath("flow.lark").read_text(encoding="utf-8")
    out: set[str] = set()
    for line in grammar.splitlines():
        if line.startswith("%declare"):
            out.update(line.split()[1:])
    return out


def test_every_declared_keyword_terminal_is_a_vocabulary_keyword():
    keywords = declared_terminals() - NON_KEYWORD_TERMINALS
    unknown = keywords - set(V.KEYWORD_TERMINALS.values())
    assert not unknown, f"flow.lark declares keywords core/vocabulary.py lacks: {sorted(unknown)}"


def test_every_vocabulary_keyword_is_declared_by_the_grammar():
    missing = set(V.KEYWORD_TERMINALS.values()) - declared_terminals()
    assert not missing, f"flow.lark does not declare the keywords {sorted(missing)}"


def test_keyword_terminals_are_the_upper_cased_words():
    assert set(V.KEYWORD_TERMINALS) == V.KEYWORDS
    for word, terminal in V.KEYWORD_TERMINALS.items():
        assert re.fullmatch(r"[a-z_]+", word) and terminal == word.upper()


@pytest.mark.parametrize("clause", list(V.AGENT_CLAUSES))
def test_each_agent_clause_parses_as_a_clause_and_its_example_is_one(clause):
    """``AGENT_CLAUSES`` drives the parser's clause set and the no-colon hint; each example is a
    clause the grammar takes (with ``T``, ``path`` and ``…`` filled in)."""
    example = V.AGENT_CLAUSES[clause]
    for placeholder, value in (("{ … }", "{ a: 1 }"), ("…", "x"), ("T", "text"), ("path", '"o"')):
        example = example.replace(placeholder, value)
    if clause != "expect":
        example += "\n    expect text"
    if clause != "task":
        example += '\n    task "t"'
    src = f"stage s -> json {{\n  return agent(a) {{\n    {example}\n  }}\n}}\n"
    module, diagnostics = parse_module(src, "c.flow")
    assert not diagnostics, (example, diagnostics)
    (agent,) = [n for n in ast.walk(module) if isinstance(n, ast.AgentExpr)]
    assert clause in {c.kind for c in agent.clauses}
    # written with a colon, the hint quotes the example
    wrong = V.AGENT_CLAUSES[clause].replace(" ", ": ", 1)
    _module, diagnostics = parse_module(
        f"stage s -> json {{\n  return agent(a) {{\n    {wrong}\n  }}\n}}\n", "c.flow"
    )
    assert any(V.AGENT_CLAUSES[clause] in (d.hint or "") for d in diagnostics), diagnostics


def test_role_lists_hold_keywords_once_each():
    roles = {
        "TOP_LEVEL_WORDS": V.TOP_LEVEL_WORDS,
        "DECLARATION_WORDS": V.DECLARATION_WORDS,
        "STATEMENT_WORDS": V.STATEMENT_WORDS,
        "EXPRESSION_WORDS": V.EXPRESSION_WORDS,
        "CONTINUATION_WORDS": V.CONTINUATION_WORDS,
        "AGENT_CLAUSES": tuple(V.AGENT_CLAUSES),
    }
    for name, words in roles.items():
        assert len(set(words)) == len(words), f"{name} lists a word twice"
        assert set(words) <= V.KEYWORDS, name
    assert V.RESERVED_WORDS <= V.KEYWORDS
    assert V.CONTEXTUAL_KEYWORDS | V.RESERVED_WORDS == V.KEYWORDS
    assert not set(V.BUILTIN_TYPES) & V.KEYWORDS  # a type name is never a keyword


def test_the_control_step_table_is_closed():
    for name, step in V.CONTROL_STEP_SPECS.items():
        assert step.name == name
        assert step.required <= step.fields, name
        assert set(step.body_keys) <= step.fields, name
        assert not step.scope or step.body_keys, name  # only bodies see extra names
    assert V.BODY_CONTROL_STEPS < V.CONTROL_STEPS
    assert set(V.BODY_KEYS) | set(V.BODY_SCOPE) | set(V.CONTROL_FIELDS) <= V.CONTROL_STEPS
    assert set(V.CONTROL_FIELDS) == V.CONTROL_STEPS


def test_retryable_codes_are_error_codes():
    assert V.RETRYABLE_CODES == ("timeout", "rate_limit", "transient")
    assert all(V.ERROR_CODES[c].retryable for c in V.RETRYABLE_CODES)
    for code, info in V.ERROR_CODES.items():
        assert info.code == code and re.fullmatch(r"[a-z_]+", code) and info.summary


def _word_lists(tree: ast_module.AST):
    """Every literal list of words in a module: the elements of a tuple, list or set display,
    the keys of a dict display, and the words of a string constant (``"let return …".split()``)."""
    for node in ast_module.walk(tree):
        if isinstance(node, ast_module.Tuple | ast_module.List | ast_module.Set):
            items = node.elts
        elif isinstance(node, ast_module.Dict):
            items = [k for k in node.keys if k is not None]
        elif isinstance(node, ast_module.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value.split()
            continue
        else:
            continue
        words = [i.value for i in items if isinstance(i, ast_module.Constant)]
        if len(words) == len(items) and all(isinstance(w, str) for w in words):
            yield node.lineno, words


def test_no_module_spells_a_list_of_keywords_again():
    """Five or more keywords (or their terminals) and nothing else in one literal is a copy of
    the vocabulary: import it from ``core.vocabulary`` instead."""
    src = Path(V.__file__).resolve().parent.parent
    terminals = set(V.KEYWORD_TERMINALS.values())
    copies = []
    for source in source_tree.sources(src):  # each file parsed once per process
        file = source.path
        if file.name == "vocabulary.py":
            continue
        for line, words in _word_lists(source.tree):
            if len(words) >= 5 and (set(words) <= V.KEYWORDS or set(words) <= terminals):
                copies.append(f"{file.relative_to(src.parent)}:{line}: {' '.join(words[:8])} …")
    assert not copies, "keyword lists outside core/vocabulary.py:\n" + "\n".join(copies)
