"""The documentation shows what the code does."""

import re
from pathlib import Path

from tvm_memplan import report
from tvm_memplan.command_line import parse_budgets

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


def _option_rows(page: str) -> dict[str, str]:
    """`name` -> default, from the first table of a pass page whose header is an option table."""
    text = (DOCS / "passes" / page).read_text()
    (table,) = re.findall(r"\| option \| default \| meaning \|\n\| --- .*?\n((?:\|.*\n)+)", text)
    return dict(re.findall(r"^\| `(\w+)` \| `([^`]+)` \|", table, flags=re.M))


def test_pass_pages_list_each_option_with_its_declared_default():
    """Options are declared once, in C++ (names, docs, defaults through reflection); each pass
    page's table shows exactly those options with those defaults."""
    from tvm_memplan.transform.compact_buffer_allocation import CompactionOptions
    from tvm_memplan.transform.dataflow_use_inplace_calls import InplaceOptions
    from tvm_memplan.transform.static_plan_block_memory import MemoryPlanOptions

    for page, options in [
        ("compact_buffer_allocation.md", CompactionOptions),
        ("dataflow_use_inplace_calls.md", InplaceOptions),
        ("static_plan_block_memory.md", MemoryPlanOptions),
    ]:
        declared = {f.name: f.c_default for f in options.__tvm_ffi_type_info__.fields}
        shown = _option_rows(page)
        assert set(shown) == set(declared), page
        for name, default in declared.items():
            assert shown[name] == (f'"{default}"' if isinstance(default, str) else repr(default))


def test_wrappers_take_each_declared_option_with_its_default_and_help():
    """The Python signatures and docstrings of the passes and analyses taking options match
    the C++ declaration (src_cpp/ir/options.h): a hand-written default or help would drift."""
    import inspect

    from tvm_memplan import analysis, transform
    from tvm_memplan._options import declared
    from tvm_memplan.transform.compact_buffer_allocation import CompactionOptions
    from tvm_memplan.transform.dataflow_use_inplace_calls import InplaceOptions, use_inplace_calls
    from tvm_memplan.transform.static_plan_block_memory import MemoryPlanOptions

    wrappers = [
        (transform.CompactBufferAllocation, CompactionOptions),
        (analysis.compacted_regions, CompactionOptions),
        (transform.DataflowUseInplaceCalls, InplaceOptions),
        (transform.LegalizeOpsAfterInplaceCalls, InplaceOptions),
        (use_inplace_calls, InplaceOptions),
        (analysis.inplace_candidates, InplaceOptions),
        (transform.StaticPlanBlockMemory, MemoryPlanOptions),
        (analysis.memory_plan, MemoryPlanOptions),
    ]
    for wrapper, options in wrappers:
        parameters = inspect.signature(wrapper).parameters
        for option in declared(options):
            assert option.help, f"{options.__name__}.{option.name} has no help"
            assert parameters[option.name].default == option.default, wrapper.__name__
            assert option.help.split(".")[0] in " ".join(wrapper.__doc__.split()), wrapper


def test_the_optimality_table_is_the_cpp_table():
    """The pass page's optimality codes and sentences are those of the one C++ table."""
    from tvm_memplan.analysis import optimality_codes

    page = (DOCS / "passes" / "static_plan_block_memory.md").read_text()
    section = page.split("| code | meaning |")[1].split("\n\n")[0]
    rows = [line.split("|")[1:3] for line in section.strip().splitlines()[1:]]
    shown = {code.strip().strip("`"): meaning.strip() for code, meaning in rows}
    assert shown == optimality_codes()


def test_every_code_family_is_documented_as_declared():
    """Every code of every family (ir/codes.h: the C++ tables beside the records) has a row
    `| `code` | sentence |` in the docs, its sentence as declared: the docs cannot drift from
    what the records say."""
    from tvm_memplan.analysis import code_families, codes

    text = "\n".join(page.read_text() for page in DOCS.rglob("*.md"))
    rows = dict(re.findall(r"^\| `(\w+)` \| (.*) \|$", text, re.MULTILINE))
    assert len(code_families()) >= 7
    for family in code_families():
        for value, code in codes(family).items():
            assert rows.get(value) == code.sentence, f"{family}: {value}"
