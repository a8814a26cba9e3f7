"""`flowc test -j N` runs tests at once (one at a time for a flow that writes files), reports
them in file order, and passed tests of an unchanged file, directory and agentflow version are
reported as cached without running (`.flowc-cache/` in the current directory; `--no-cache`)
(docs/reference/testing.md "Running")."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from agentflow.cli import main

TOOLS = """\
import time


def slow(log: str, name: str) -> str:
    \"\"\"Log the call's start and end around a short sleep.\"\"\"
    with open(log, "a") as f:
        f.write(f"start {name}\\n")
    time.sleep(0.1)
    with open(log, "a") as f:
        f.write(f"end {name}\\n")
    return name
"""

FLOW = """\
extern tool user__slow(log: text, name: text) -> text

stage ran -> text {
  return user__slow(log: "LOG", name: input.name)
}
input { name: text }
"""


def _project(tmp_path, writes: bool = False, tests: int = 4):
    project = tmp_path / "project"
    project.mkdir()
    (project / "tools.py").write_text(TOOLS, encoding="utf-8")
    (project / "flow.toml").write_text('[tools]\nmodules = ["tools.py"]\n', encoding="utf-8")
    flow = FLOW.replace("LOG", str(tmp_path / "log.txt"))
    if writes:
        flow += (
            'stage saved -> text {\n  write_file(path: "out-${input.name}.txt", '
            "content: ran)\n  return ran\n}\n"
        )
    for i in range(tests):
        flow += f'\ntest "t{i}" {{\n  input {{ name: "t{i}" }}\n  expect ran == "t{i}"\n}}\n'
    path = project / "slow.flow"
    path.write_text(flow, encoding="utf-8")
    return path


def _overlapped(tmp_path) -> bool:
    running, most = 0, 0
    for line in (tmp_path / "log.txt").read_text().splitlines():
        running += 1 if line.startswith("start") else -1
        most = max(most, running)
    return most > 1


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def _test(*args: str):
    return CliRunner().invoke(main, ["test", *args])


def test_jobs_run_tests_at_once_and_report_them_in_order(tmp_path):
    path = _project(tmp_path)
    r = _test("-j", "4", "--no-cache", str(path))
    assert r.exit_code == 0, r.output
    assert [line.split()[1] for line in r.output.splitlines()[:4]] == ["t0", "t1", "t2", "t3"]
    assert _overlapped(tmp_path)
    (tmp_path / "log.txt").unlink()
    assert _test("-j", "1", "--no-cache", str(path)).exit_code == 0
    assert not _overlapped(tmp_path)


def test_tests_of_a_flow_that_writes_files_run_one_at_a_time(tmp_path):
    path = _project(tmp_path, writes=True)
    r = _test("-j", "4", "--no-cache", str(path))
    assert r.exit_code == 0, r.output
    assert not _overlapped(tmp_path)


def test_an_unchanged_passing_test_is_cached_and_a_change_runs_it_again(tmp_path, monkeypatch):
    path = _project(tmp_path, tests=2)
    log = tmp_path / "log.txt"
    assert _test(str(path)).output.endswith("2 passed, 0 failed\n")
    assert log.read_text().count("start") == 2
    r = _test(str(path))
    assert "slow.flow:8 t0 PASSED (cached)" in r.output
    assert r.output.endswith("2 passed, 0 failed (2 cached)\n")
    assert log.read_text().count("start") == 2  # nothing ran
    assert (tmp_path / ".flowc-cache" / ".gitignore").read_text().endswith("*\n")

    _test("--no-cache", str(path))
    assert log.read_text().count("start") == 4
    (path.parent / "data.txt").write_text("new", encoding="utf-8")  # the directory changed
    assert "(cached)" not in _test(str(path)).output
    path.write_text(path.read_text() + "\n", encoding="utf-8")  # the source changed
    assert "(cached)" not in _test(str(path)).output
    import agentflow.core.version

    monkeypatch.setattr(agentflow.core.version, "__version__", "99.0")
    assert "(cached)" not in _test(str(path)).output
    assert _test(str(path)).output.endswith("(2 cached)\n")

    # an upgrade that keeps the version number (or an edited editable install): a new build
    import agentflow.flowtest_cache

    monkeypatch.setattr(agentflow.flowtest_cache, "_build", lambda: "another build")
    assert "(cached)" not in _test(str(path)).output
    assert _test(str(path)).output.endswith("(2 cached)\n")


def test_a_change_to_the_flow_toml_above_or_its_tool_module_runs_the_test_again(tmp_path):
    # the flow in project/flows/, its flow.toml and tools.py in project/: outside the flow's
    # directory, they were not in the cache key, and a changed tool kept a stale PASSED
    path = _project(tmp_path, tests=1)
    flows = path.parent / "flows"
    flows.mkdir()
    moved = flows / "slow.flow"
    path.rename(moved)
    assert _test(str(moved)).output.endswith("1 passed, 0 failed\n")
    assert _test(str(moved)).output.endswith("(1 cached)\n")
    tools = path.parent / "tools.py"
    tools.write_text(tools.read_text().replace("return name", "return name + '!'"))
    changed = _test(str(moved))
    assert changed.exit_code == 1 and "(cached)" not in changed.output, changed.output
    tools.write_text(TOOLS, encoding="utf-8")  # as it was: its earlier pass holds again
    assert _test(str(moved)).output.endswith("1 passed, 0 failed (1 cached)\n")
    config = path.parent / "flow.toml"
    config.write_text(config.read_text() + "\n# touched\n", encoding="utf-8")
    assert "(cached)" not in _test(str(moved)).output


def test_the_build_fingerprint_is_of_the_installed_package_and_computed_once():
    import agentflow.flowtest_cache

    agentflow.flowtest_cache._build.cache_clear()
    first = agentflow.flowtest_cache._build()
    assert len(first) == 64 and agentflow.flowtest_cache._build() == first
    assert agentflow.flowtest_cache._build.cache_info().misses == 1


def test_failing_tests_are_never_cached(tmp_path):
    path = _project(tmp_path, tests=1)
    path.write_text(
        path.read_text() + '\ntest "bad" {\n  input { name: "x" }\n  expect ran == "y"\n}\n'
    )
    assert _test(str(path)).exit_code == 1
    r = _test(str(path))
    assert r.exit_code == 1
    assert "t0 PASSED (cached)" in r.output and "bad FAILED" in r.output
    assert r.output.endswith("1 passed, 1 failed (1 cached)\n")
