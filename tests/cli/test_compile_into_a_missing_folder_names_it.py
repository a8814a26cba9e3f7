"""`flowc compile x.flow -o nodir/x.yaml` names the missing folder with a hint, no traceback."""

from pathlib import Path

from click.testing import CliRunner

from agentflow.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "bug-triage.flow"


def test_compile_into_a_missing_folder_names_the_folder_and_hints_mkdir(tmp_path: Path) -> None:
    missing = tmp_path / "nodir"
    result = CliRunner().invoke(main, ["compile", str(EXAMPLE), "-o", str(missing / "x.yaml")])
    assert result.exit_code == 1
    assert f"the folder {missing} does not exist" in result.output
    assert "hint: create it first" in result.output
    assert "Traceback" not in result.output
    assert not missing.exists()
