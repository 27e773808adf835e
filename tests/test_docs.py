"""The documentation shows what the code does."""

import re
from pathlib import Path

from tvm_memplan import report
from tvm_memplan.cli import parse_budgets

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_report_example_is_the_commands_output():
    """Every line of the example in docs/report.md appears in the bundled example's report."""
    page = (DOCS / "report.md").read_text()
    (example,) = re.findall(r"## Example.*?```\n(.*?)```", page, flags=re.S)
    actual = report.render_text(report.run_report(None)).splitlines()
    for line in example.splitlines():
        if line.strip() in ("", "..."):
            continue
        shown = line.rstrip()
        if shown.endswith("(...)"):
            prefix = shown[: -len("(...)")]
            assert any(a.startswith(prefix) for a in actual), line
        else:
            assert shown in actual, line


def test_fit_example_is_the_commands_output():
    """The fit check shown in docs/report.md is what the command prints for those budgets."""
    page = (DOCS / "report.md").read_text()
    (command, example) = re.findall(
        r"\(`tvm-memplan report --fit ([^`]+)`\):\n\n```\n(.*?)```", page, flags=re.S
    )[0]
    built = report.run_report(None, budgets=parse_budgets(command))
    actual = report.render_text(built).splitlines()
    for line in example.splitlines():
        assert line.rstrip() in actual, line


def test_the_screenshot_is_committed():
    assert (DOCS / "report-example.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
