"""Make docs/report-example.png: the HTML report of the bundled example, as headless Chromium
draws it, and print the fit check that docs/report.md shows; with ``--zoo NAME``, the report of
a model of the zoo instead (docs/report-densenet.png: ``--zoo densenet``, whose timeline shows
tensors sharing bytes through copy-free concatenations).

    python tools/report_screenshot.py [--output docs/report-example.png]
    python tools/report_screenshot.py --zoo densenet --output docs/report-densenet.png
"""

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import tvm

from tvm_memplan.command_line import parse_budgets
from tvm_memplan.report import build_report, render_html, run_report
from tvm_memplan.report.text import fit_lines

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # zoo/ (the repository's shared models, not in the wheel)
from zoo import models  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "report-example.png")
    parser.add_argument("--height", type=int, default=2200, help="screenshot height, pixels")
    parser.add_argument("--zoo", choices=sorted(models.ZOO), help="a model of the zoo instead")
    args = parser.parse_args()
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        print("report_screenshot: needs chromium (apt-get install chromium)", file=sys.stderr)
        return 2
    if args.zoo:
        mod, _ = models.ZOO[args.zoo]()
        report = build_report(mod, tvm.target.Target({"kind": "llvm"}), source=f"zoo: {args.zoo}")
    else:
        report = run_report(None, budgets=parse_budgets("vm=128KiB,stack=1KiB,workspace=64KiB"))
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "report.html"
        page.write_text(render_html(report), encoding="utf-8")
        subprocess.run(
            [
                browser,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                f"--window-size=1200,{args.height}",
                f"--screenshot={args.output}",
                page.as_uri(),
            ],
            check=True,
            capture_output=True,
        )
    print(f"wrote {args.output}")
    if report.fit is not None:
        print("\n".join(fit_lines(report.fit)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
