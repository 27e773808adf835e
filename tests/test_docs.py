"""The documentation shows what the code does."""

import re
from pathlib import Path

from tvm_memplan import report

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
