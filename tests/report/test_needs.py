"""The memory to run a model: the total is the sum of its parts, the workspace figure is the peak
(the largest kernel, or a kernel and those it calls), the weights are the model's initializers,
tensors carry the source model's names, and text, JSON and HTML show the same figures."""

from __future__ import annotations

import json
import runpy

import numpy as np
import onnx
import pytest
import tvm
from onnx_models import conv_net, torch_transformer_encoder
from test_html import Page
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tirx as T

from tvm_memplan.analysis import held_by_records, pool_size
from tvm_memplan.report import build_report, render_html, render_text, run_report
from tvm_memplan.report.model import SUMMARY_FIGURES
from tvm_memplan.report.needs import placement_of

PARTS = ("weights", "vm", "workspace", "stack")
LLVM = tvm.target.Target({"kind": "llvm"})


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    directory = tmp_path_factory.mktemp("needs")
    paths = {"conv_net": directory / "conv_net.onnx", "encoder": directory / "encoder.onnx"}
    onnx.save(conv_net(batch=1), str(paths["conv_net"]))
    onnx.save(torch_transformer_encoder(), str(paths["encoder"]))
    return paths


@pytest.fixture(scope="module")
def reports(files):
    return {name: run_report(str(path)) for name, path in files.items()}


@pytest.mark.parametrize("name", ["conv_net", "encoder"])
def test_the_total_is_the_sum_of_its_parts(name, reports):
    summary = reports[name].summary
    for needs in [summary.stock, summary.memplan] + [
        getattr(f, build) for f in summary.functions for build in ("stock", "memplan")
    ]:
        assert needs.total == sum(getattr(needs, part) for part in PARTS)
        assert needs.all_allocations >= needs.total


@pytest.mark.parametrize("name", ["conv_net", "encoder"])
def test_the_workspace_figure_is_the_largest_kernels(name, reports):
    """Kernels run one at a time: the figure is the largest kernel's workspace, counted from
    the placement records of each build, not the sum over kernels."""
    report = reports[name]
    for build in ("stock", "memplan"):
        per_kernel = {}
        for k in report.kernels:
            decisions = k.placement if build == "memplan" else k.stock_placement
            per_kernel[k.name] = sum(
                int(d.nbytes) for d in decisions if placement_of(d, build) == "workspace"
            )
        figure = getattr(report.summary, build).workspace
        assert figure == max(per_kernel.values())
        if sum(v > 0 for v in per_kernel.values()) > 1:
            assert figure < sum(per_kernel.values())


def test_the_vm_figure_is_the_plan_records(reports):
    report = reports["conv_net"]
    (f,) = report.relax
    assert report.summary.memplan.vm == int(f.plan.applied_bytes)
    assert report.summary.stock.vm == int(f.stock_build.stock_bytes)


def test_the_held_figure_is_the_pool_s_rule_on_each_build_s_plans(reports):
    """What the pooled allocator holds, per build: the rule on our pass's plans in the memplan
    build and on TVM's planner's in the stock build (one function: its planned bytes)."""
    report = reports["conv_net"]
    (f,) = report.relax
    assert report.summary.memplan.held == held_by_records([f.plan], "memplan").held_bytes
    assert report.summary.stock.held == held_by_records([f.stock_build], "stock").held_bytes
    assert report.summary.memplan.held == pool_size(int(f.plan.applied_bytes))
    assert all(fn.memplan.held is None for fn in report.summary.functions)


def _initializer_bytes(model: onnx.ModelProto) -> int:
    return sum(onnx.numpy_helper.to_array(i).nbytes for i in model.graph.initializer)


def test_weights_are_the_initializers(reports):
    """conv_net's initializers are all weights the module keeps as constants: the weights
    figure is their bytes, each weight named after its initializer."""
    model = conv_net(batch=1)
    report = reports["conv_net"]
    assert report.summary.memplan.weights == _initializer_bytes(model)
    assert report.summary.stock.weights == report.summary.memplan.weights
    assert {w.name for w in report.weights} == {i.name for i in model.graph.initializer}
    assert [w.bytes for w in report.weights] == sorted(
        (w.bytes for w in report.weights), reverse=True
    )


def test_weights_that_are_parameters_count_past_num_input():
    """A Relax function with ``num_input`` takes its weights as parameters after the inputs."""

    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((4, 8), "float32"), w: R.Tensor((8, 16), "float32")):
            R.func_attr({"num_input": 1})
            return R.matmul(x, w)

    report = build_report(Module, LLVM)
    ((w),) = report.weights
    assert (w.name, w.kind, w.bytes) == ("w", "parameter", 8 * 16 * 4)
    assert report.summary.memplan.weights == 512


def test_tensors_carry_the_onnx_node_names(files, reports):
    """Every name the report gives a tensor or kernel is one of the model's node names, and
    the first matmul's tensor is named after the node that computes it."""
    model = torch_transformer_encoder()
    node_names = {n.name for n in model.graph.node}
    report = reports["encoder"]
    (f,) = report.relax
    sources = [w.source for writers in f.writers for w in writers] + [
        w.source for k in report.kernels for w in k.writers
    ]
    assert sources and all(s in node_names for s in sources)
    first = next(
        writers for t, writers in zip(f.plan.tensors, f.writers, strict=True) if t.op == "matmul"
    )
    assert (first[0].op, first[0].source) == ("matmul", "/layers.0/self_attn/MatMul")
    assert (first[1].op, first[1].source) == ("add", "/layers.0/self_attn/Add")  # in place
    softmax = next(k for k in report.kernels if k.kind == "nn.softmax")
    assert [w.source for w in softmax.writers] == [
        "/layers.0/self_attn/Softmax",
        "/layers.1/self_attn/Softmax",
    ]


def test_the_same_figures_in_text_json_and_html(reports):
    report = reports["conv_net"]
    text = render_text(report).splitlines()
    data = json.loads(json.dumps(report.to_json()))
    page = Page(render_html(report))
    labels = {key: label for key, label in SUMMARY_FIGURES if key != "all_allocations"}
    for key, label in labels.items():
        (line,) = [row for row in text if row.startswith(f"  {label}  ")]
        numbers = [int(cell) for cell in line[len(label) + 2 :].split() if cell.isdigit()]
        assert len(numbers) == 2, line
        for build, number in zip(("stock", "memplan"), numbers, strict=True):
            assert data["summary"][build][key] == number
            ((cell, _),) = page.find("td", data_figure=f"summary.{build}.{key}")
            assert cell["data-value"] == str(number)


@I.ir_module
class WithHelper:
    @T.prim_func(private=True)
    def helper(a: T.handle("float32")):
        A = T.decl_buffer((512,), "float32", data=a)
        W = T.alloc_buffer((512,), "float32")
        for i in range(512):
            W[i] = A[i] * T.float32(2)
        for i in range(512):
            A[i] = W[511 - i]

    @T.prim_func
    def main(A: T.Buffer((1024,), "float32")):
        V = T.alloc_buffer((1024,), "float32")
        for i in range(1024):
            V[i] = A[i]
        WithHelper.helper(V.data)
        for i in range(1024):
            A[i] = V[i]


def test_a_kernel_that_calls_another_adds_its_workspace():
    """`main` calls `helper` while its own buffer is live: the peak is both together."""
    report = build_report(WithHelper, LLVM)
    main_kernel = next(k for k in report.kernels if k.name == "main")
    assert main_kernel.calls == ["helper"]
    assert main_kernel.workspace["memplan"] == 4096 + 2048
    assert report.summary.memplan.workspace == 4096 + 2048


@I.ir_module
class RMSNorm:
    @R.function
    def main(x: R.Tensor((1, 16, 64), "float32"), w: R.Tensor((64,), "float32")):
        with R.dataflow():
            y = R.nn.rms_norm(x, w, axes=[-1])
            z = R.exp(y)
            R.output(z)
        return z


def test_buffers_of_one_name_are_told_apart_by_position():
    """TVM's rms_norm legalizes to a PrimFunc with two buffers named `T_cast` (the input's and
    the weight's casts). Each is compared with the buffer at its own position after TVM's pass,
    so ours and TVM's agree where they are the same."""
    report = build_report(RMSNorm, LLVM)
    kernel = next(k for k in report.kernels if k.kind == "nn.rms_norm")
    casts = [b for b in kernel.buffers if b.region.name == "T_cast"]
    assert [b.index for b in casts] == [0, 4]
    assert [b.region.original_bytes for b in casts] == [16 * 64 * 4, 64 * 4]
    for b in kernel.buffers:
        assert b.stock_bytes == b.region.compacted_bytes, b.region.name


TORCH_NET = """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.block = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1, groups=8), nn.ReLU())
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        h = self.block(self.stem(x))
        return self.head(h.mean(dim=(2, 3)))


def build():
    torch.manual_seed(0)
    return torch.export.export(Net().eval(), (torch.randn(1, 3, 16, 16),))
"""


NO_TORCH = (
    "torch is a development extra (4 GB with its CUDA wheels), not installed by CI's fresh venv; "
    "the torch-exported paths run where it is (this test, bench --torchvision)"
)


def test_a_torch_exported_model_names_its_modules(tmp_path):
    """A Python file whose build() returns a torch.export program: imported with TVM's torch
    frontend, weights as constants, tensors named after the torch modules that made them."""
    pytest.importorskip("torch", reason=NO_TORCH)
    source = tmp_path / "net.py"
    source.write_text(TORCH_NET)
    net = runpy.run_path(str(source))["Net"]()
    report = run_report(str(source))
    (f,) = report.relax
    by_op: dict[str, set[str]] = {}
    for writers in f.writers:
        for w in writers:
            by_op.setdefault(w.op, set()).add(w.source)
    # Ops of a submodule are named by its path; the mean, in Net.forward itself, by its node.
    assert by_op["nn.conv2d"] == {"stem", "block.0"}
    assert by_op["nn.relu"] == {"block.1"}
    assert by_op["matmul"] == {"head"}
    assert by_op["mean"] == {"mean"}
    modules = {name for name, _ in net.named_modules()}
    assert {"stem", "block.0", "block.1", "head"} <= modules
    depthwise = next(k for k in report.kernels if k.kind.startswith("nn.conv2d depthwise"))
    assert [w.source for w in depthwise.writers] == ["block.0"]
    state = sum(p.numel() * p.element_size() for p in net.state_dict().values())
    assert report.summary.memplan.weights == state


def test_numpy_is_what_the_weights_are_counted_with():
    """The weights of a module built by hand: each constant once, however often it is read."""
    c = tvm.relax.const(np.ones((3, 5), "float32"))
    x = tvm.relax.Var("x", tvm.relax.TensorType((3, 5), "float32"))
    bb = tvm.relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            a = bb.emit(tvm.relax.op.add(x, c))
            b = bb.emit(tvm.relax.op.multiply(a, c))
            out = bb.emit_output(b)
        bb.emit_func_output(out)
    report = build_report(bb.get(), LLVM)
    assert [w.bytes for w in report.weights] == [60]
