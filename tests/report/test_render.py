"""The renderers on a Report built by hand (records made through their reflected constructors):
what a reader sees, in the text and on the page, for static, symbolic and failed rows."""

from __future__ import annotations

import json
from html.parser import HTMLParser

import pytest
import tvm

from tvm_memplan import analysis
from tvm_memplan.report import render_html, render_text
from tvm_memplan.report.model import (
    Buffer,
    Failure,
    FunctionNeeds,
    Inplace,
    InplaceRun,
    Kernel,
    Needs,
    RelaxFunction,
    Report,
    Summary,
    Weight,
)
from tvm_memplan.report.origins import Origin

_DEFAULTS = {
    "int": 0,
    "bool": False,
    "ffi.String": "",
    "ffi.Array": [],
    "ffi.Map": {},
    "Optional": None,
}


def record(cls, **given):
    """A record of a reflected type, its fields not given set to a neutral value."""
    values = {}
    for f in cls.__tvm_ffi_type_info__.fields:
        schema = json.loads(f.metadata["type_schema"])["type"]
        values[f.name] = given.pop(f.name) if f.name in given else _DEFAULTS.get(schema)
    assert not given, f"{cls.__name__} has no fields {sorted(given)}"
    return cls(**values)


def int64(value: int):
    return tvm.tirx.IntImm("int64", value)


N = tvm.tirx.Var("n", "int64")
CONV = Origin("lv", "nn.conv2d", "nn.conv2d 3x3", [1, 8, 16, 16], "float32", "/stem/Conv")
SCALE = Origin("lv2", "multiply", "multiply", ["n", 4], "float32", "/head/Mul")


def _plan():
    static = record(
        analysis.PlannedTensor,
        binding="alloc",
        op="conv2d",
        shape=[1, 8, 16, 16],
        dtype="float32",
        bytes=8192,
        size=int64(8192),
        scope="global",
        first=0,
        last=3,
        storage=0,
        stock_storage=0,
    )
    symbolic = record(
        analysis.PlannedTensor,
        binding="alloc1",
        op="multiply",
        shape=[N, 4],
        dtype="float32",
        bytes=-1,
        size=N * 16,
        scope="global",
        first=2,
        last=5,
        storage=-1,
        stock_storage=-1,
        reason="it reaches the function result",
    )
    storage = record(analysis.StorageAllocation, bytes=8192, size=int64(8192), scope="global")
    return record(
        analysis.FunctionMemoryPlan,
        function="main",
        planner="memplan",
        reason="hand-built",
        num_points=6,
        tensors=[static, symbolic],
        storages=[storage],
        stock_storages=[storage],
        peak_live_bytes=8192,
        planned_bytes=8192,
        stock_bytes=8192,
        planned_size=N * 16 + 8192,
        stock_size=N * 16 + 8192,
        symbolic_allocations=1,
        stock_symbolic_allocations=1,
    )


def _report() -> Report:
    region = record(
        analysis.CompactedRegion,
        name="pad_temp",
        kind="block_alloc_buffer",
        dtype="float32",
        original_shape=[1, 8, 18, 18],
        shape=[1, 8, 18, 18],
        reason="the accesses cover the whole buffer",
        original_bytes=10368,
        compacted_bytes=10368,
        original_size=int64(10368),
        compacted_size=int64(10368),
    )
    decision = record(
        analysis.AllocationDecision,
        function="conv2d",
        name="pad_temp",
        kind="alloc_buffer",
        scope="global",
        dtype="float32",
        shape=[2592],
        nbytes=10368,
        size=int64(10368),
        placement="workspace",
        stock_placement="workspace",
        reason="10368 bytes > max_stack_alloca 1024 (default)",
    )
    kernel = Kernel(
        "conv2d",
        "nn.conv2d 3x3",
        [CONV],
        [Buffer(0, region, None)],
        [decision],
        [],
        [False],
        workspace={"stock": None, "memplan": 10368},
        stack={"stock": None, "memplan": 0},
    )
    candidate = record(
        analysis.InplaceCandidate,
        binding="lv2",
        op="relax.multiply",
        dataflow=True,
        inplace=False,
        reason="the storage of `lv` is still read afterwards, at `lv3`",
    )
    stock = Needs(
        weights=1000, vm=None, workspace=None, stack=None, total=None, all_allocations=None
    )
    memplan = Needs(
        weights=1000,
        vm=None,
        workspace=10368,
        stack=0,
        total=None,
        all_allocations=None,
        symbolic={"vm": "n*16 + 8192", "total": "n*16 + 19560", "all_allocations": "n*16 + 19560"},
    )
    return Report(
        input="hand-built",
        target="llvm",
        summary=Summary(
            stock,
            memplan,
            [FunctionNeeds("main", "relax", stock, memplan)],
            unknown_vars=["n"],
        ),
        relax=[RelaxFunction("main", _plan(), None, [[CONV], [SCALE]])],
        inplace=Inplace(
            {"stock": None, "memplan": 0},
            [InplaceRun("before_legalization", "before LegalizeOps", 0, {"main": [candidate]})],
        ),
        kernels=[kernel],
        weights=[Weight("conv.weight", "main", 1000, [250], "float32", "constant", CONV)],
        failures=[
            Failure("plan.stock", "TVM's StaticPlanBlockMemory", "ValueError: stock planner broke"),
            Failure(
                "compile.stock", "TVM's StorageRewrite (in the stock build)", "RuntimeError: no"
            ),
        ],
    )


class Visible(HTMLParser):
    """The text a reader sees, per top-level section id (tooltips and styles left out)."""

    def __init__(self, html: str):
        super().__init__()
        self.sections: dict[str, list[str]] = {}
        self.current = "top"
        self.hidden = 0
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        if tag == "section":
            self.current = dict(attrs).get("id", "?")
        if tag in ("style", "title", "svg"):
            self.hidden += 1

    def handle_endtag(self, tag):
        if tag in ("style", "title", "svg"):
            self.hidden -= 1

    def handle_data(self, data):
        if not self.hidden and data.strip():
            self.sections.setdefault(self.current, []).append(" ".join(data.split()))

    def text(self, section: str) -> str:
        return " | ".join(self.sections.get(section, []))


@pytest.fixture(scope="module")
def report():
    return _report()


def test_text_shows_symbolic_figures_as_expressions(report):
    text = render_text(report)
    (vm,) = [line for line in text.splitlines() if line.startswith("  VM, planned")]
    assert vm.split()[2:] == ["-", "n*16", "+", "8192", "-"]
    assert "symbolic in n, which have no bound: give values to evaluate the figures" in text


def test_text_shows_each_failure_in_its_section(report):
    text = render_text(report)
    relax = text.split("Relax memory plans", 1)[1].split("Largest tensors", 1)[0]
    assert (
        "TVM's StaticPlanBlockMemory fails on this model: ValueError: stock planner broke" in relax
    )
    kernels = text.split("Kernels (1)", 1)[1].split("Buffer compaction", 1)[0]
    assert (
        "TVM's StorageRewrite (in the stock build) fails on this model: RuntimeError: no" in kernels
    )


def test_text_names_tensors_and_kernels_after_the_source_model(report):
    text = render_text(report).splitlines()
    (tensor,) = [line for line in text if line.startswith("  main      alloc   ")]
    assert "nn.conv2d 1x8x16x16 float32 (/stem/Conv)" in tensor
    (kernel,) = [line for line in text if line.startswith("  nn.conv2d 3x3  conv2d")]
    assert kernel.split()[3:7] == ["-", "10368", "-", "0"]
    assert kernel.endswith("nn.conv2d 1x8x16x16 float32 (/stem/Conv)")


def test_the_page_shows_the_expression_and_the_failures(report):
    page = Visible(render_html(report))
    summary = page.text("summary")
    assert "VM, planned | - | n*16 + 8192" in summary
    assert "Symbolic in n, which have no bound" in summary
    assert "TVM's StaticPlanBlockMemory fails on this model: ValueError: stock planner broke" in (
        page.text("memory")
    )
    assert "TVM's StorageRewrite (in the stock build) fails on this model: RuntimeError: no" in (
        page.text("tir")
    )


def test_the_page_names_tensors_and_leaves_unsized_ones_undrawn(report):
    html = render_html(report)
    memory = Visible(html).text("memory")
    assert "nn.conv2d 1x8x16x16 float32 (/stem/Conv)" in memory
    assert "multiply nx4 float32 (/head/Mul)" in memory
    # The symbolic tensor has no size without a value of n: it is listed, not drawn.
    assert 'data-binding="alloc"' in html and 'data-binding="alloc1"' not in html


def test_the_page_lists_weights_and_inplace_refusals(report):
    page = Visible(render_html(report))
    assert "conv.weight | constant | 250 | float32 | 1000" in page.text("weights")
    assert "the storage of `lv` is still read afterwards, at `lv3`" in page.text("inplace")


def test_hand_built_records_serialize_by_their_fields(report):
    data = json.loads(json.dumps(report.to_json()))
    plan = data["relax"][0]["plan"]
    assert plan["planned_size"] == "n * T.int64(16) + T.int64(8192)"
    assert plan["tensors"][1]["shape"] == ["n", 4]
    assert data["failures"][0] == {
        "stage": "plan.stock",
        "what": "TVM's StaticPlanBlockMemory",
        "error": "ValueError: stock planner broke",
    }


def _many_kernels(count: int = 300) -> Report:
    """A report of `count` kernels of six kinds, each with one workspace buffer."""
    kinds = [f"nn.conv2d depthwise {k}x{k}" for k in (3, 5, 7)] + ["nn.conv2d 1x1", "add", "mean"]
    kernels = []
    for i in range(count):
        nbytes = 1024 * (1 + (i * 37) % 997)
        decision = record(
            analysis.AllocationDecision,
            function=f"k{i}",
            name="pad_temp",
            scope="global",
            dtype="float32",
            shape=[nbytes // 4],
            nbytes=nbytes,
            size=int64(nbytes),
            placement="workspace",
            stock_placement="workspace",
            reason=f"{nbytes} bytes > max_stack_alloca 1024",
        )
        kind = kinds[i % len(kinds)]
        writer = Origin(f"lv{i}", kind.split()[0], kind, [1, 8, 8, 8], "float32", f"/layer{i}/Op")
        kernels.append(
            Kernel(
                f"k{i}",
                kind,
                [writer],
                [],
                [decision],
                [decision],
                [False],
                workspace={"stock": nbytes, "memplan": nbytes},
                stack={"stock": 0, "memplan": 0},
            )
        )
    largest = max(k.workspace["memplan"] for k in kernels)
    needs = Needs(weights=0, vm=0, workspace=largest, stack=0, total=largest, all_allocations=0)
    return Report(
        input="many kernels",
        target="llvm",
        summary=Summary(needs, needs, []),
        relax=[],
        inplace=None,
        kernels=kernels,
        weights=[],
    )


def test_a_300_kernel_model_reads_largest_first_with_one_show_all_per_group():
    """Kernels are grouped by kind, groups and kernels largest first; each group shows its
    three largest kernels and one "show all" for the rest; only the top groups are open."""
    report = _many_kernels()
    html = render_html(report)
    parser = _Structure(html)
    groups = parser.groups
    assert len(groups) == 6
    tops = [
        max(k.workspace["memplan"] for k in report.kernels if k.kind == g) for g, _, _ in groups
    ]
    assert tops == sorted(tops, reverse=True)
    assert [opened for _, opened, _ in groups] == [True, True, True, False, False, False]
    for kind, _, kernels in groups:
        shown, hidden = kernels
        assert len(shown) == 3 and len(shown) + len(hidden) == 50
        sizes = [
            next(k for k in report.kernels if k.name == n).workspace["memplan"]
            for n in shown + hidden
        ]
        assert sizes == sorted(sizes, reverse=True), kind
    assert "<script" not in html and "<link" not in html
    text = render_text(report).splitlines()
    (more,) = [line for line in text if "more kernels" in line]
    assert more.strip() == "... 288 more kernels (--json and --html list them all)"


class _Structure(HTMLParser):
    """The kernel groups of a page: (kind, open, ([kernels shown], [kernels behind show all]))."""

    def __init__(self, html: str):
        super().__init__()
        self.groups: list = []
        self.stack: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag != "details":
            return
        classes = attrs.get("class", "")
        if classes == "group":
            self.groups.append((attrs["data-kind"], "open" in attrs, ([], [])))
        elif classes == "kernel":
            behind = "show-all" in self.stack
            self.groups[-1][2][1 if behind else 0].append(attrs["data-prim-func"])
        self.stack.append(classes)

    def handle_endtag(self, tag):
        if tag == "details":
            self.stack.pop()
