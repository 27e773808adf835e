"""Copy-free concatenation after fusion: a kernel that computes part of its output (an upsample
fused with the concatenation, or any PrimFunc scheduled for a GPU) and writes other inputs
unchanged into slices of it. Those inputs are placed at their slices, the kernel still runs and
writes each element back where it already lies (src_cpp/relax/concat_prim_func.h, second
proof; src_cpp/relax/concat_placement.h).

IR cases state what the planner receives (Relax after CallTIRRewrite) and what it must make of
it, and run both on the Relax VM; the model cases build the zoo's U-Net and GhostNet and a U-Net
imported from ONNX in the fused CPU recipe (run three times against stock) and for cuda (built
only: no GPU here).
"""
# ruff: noqa: F841  (TVMScript bindings that nothing reads are part of the cases)

import pytest
import tvm
from test_copy_free_concat import Kernels as BaseKernels
from tvm import relax
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tirx as T

import tvm_memplan
from tvm_memplan.analysis import memory_plan
from tvm_memplan.instrument import capture
from tvm_memplan.testing import assert_same_relax_results, relax_vm
from tvm_memplan.testing.compare import CompareBeforeAfter, relax_module
from tvm_memplan.transform import StaticPlanBlockMemory
from zoo.models import ZOO
from zoo.onnx_models import onnx_unet

analyze_concatenation = tvm_memplan.testing.analyze_concatenation


@I.ir_module
class _FusedKernels:
    @T.prim_func(private=True, s_tir=True)
    def upsample_concat(
        X: T.Buffer((1, 16, 2), "float32"),
        S: T.Buffer((1, 16, 4), "float32"),
        C: T.Buffer((1, 32, 4), "float32"),
    ):
        # As FuseTIR makes `concat((upsample(x), s), axis=1)`: the upsample in a buffer of its
        # own, then the selection.
        U = T.sblock_alloc_buffer((1, 16, 4), "float32")
        for i, j, k in T.grid(1, 16, 4):
            with T.sblock("U"):
                vi, vj, vk = T.axis.remap("SSS", [i, j, k])
                U[vi, vj, vk] = X[vi, vj, vk // 2]
        for i, j, k in T.grid(1, 32, 4):
            with T.sblock("C"):
                vi, vj, vk = T.axis.remap("SSS", [i, j, k])
                C[vi, vj, vk] = T.if_then_else(vj >= 16, S[vi, vj - 16, vk], U[vi, vj, vk])

    @T.prim_func(private=True, s_tir=True)
    def ghost_concat(S: T.Buffer((1, 16, 4), "float32"), C: T.Buffer((1, 32, 4), "float32")):
        # `concat((s, relu(s)), axis=1)` with the relu inlined: the kernel reads `s` twice.
        for i, j, k in T.grid(1, 32, 4):
            with T.sblock("C"):
                vi, vj, vk = T.axis.remap("SSS", [i, j, k])
                C[vi, vj, vk] = T.if_then_else(
                    vj >= 16,
                    T.max(S[vi, vj - 16, vk], T.float32(0)),
                    S[vi, vj, vk],
                )

    @T.prim_func(private=True, s_tir=True)
    def concat_wide(
        A: T.Buffer((1, 32, 4), "float32"),
        B: T.Buffer((1, 32, 4), "float32"),
        C: T.Buffer((1, 64, 4), "float32"),
    ):
        for i, j, k in T.grid(1, 64, 4):
            with T.sblock("C"):
                vi, vj, vk = T.axis.remap("SSS", [i, j, k])
                C[vi, vj, vk] = T.if_then_else(vj >= 32, B[vi, vj - 32, vk], A[vi, vj, vk])

    @T.prim_func(private=True, s_tir=True)
    def double_wide(C: T.Buffer((1, 64, 4), "float32"), D: T.Buffer((1, 64, 4), "float32")):
        for i, j, k in T.grid(1, 64, 4):
            with T.sblock("D"):
                vi, vj, vk = T.axis.remap("SSS", [i, j, k])
                D[vi, vj, vk] = C[vi, vj, vk] * T.float32(2)

    @T.prim_func(private=True, s_tir=True)
    def double_inplace(C: T.Buffer((1, 32, 4), "float32")):
        for i, j, k in T.grid(1, 32, 4):
            with T.sblock("C"):
                vi, vj, vk = T.axis.remap("SSS", [i, j, k])
                C[vi, vj, vk] = C[vi, vj, vk] * T.float32(2)


#: test_copy_free_concat's kernels (`exp`, `concat`, `double`) and the fused ones.
Kernels = tvm.IRModule({**BaseKernels.functions, **_FusedKernels.functions})
EXP, UPCAT, GHOST, CONCAT, DOUBLE, DOUBLE_WIDE, DOUBLE_INPLACE = (
    Kernels.get_global_var(n)
    for n in (
        "exp",
        "upsample_concat",
        "ghost_concat",
        "concat_wide",
        "double",
        "double_wide",
        "double_inplace",
    )
)
F32 = R.dtype("float32")


def _planned(before):
    after = StaticPlanBlockMemory()(before)
    relax.analysis.well_formed(after)
    return after


def _vm_results(before, after):
    vms = (relax_vm(before, planner="none"), relax_vm(after, planner="none"))
    assert_same_relax_results(before, after, vms=vms)


# ---- the proof on PrimFuncs --------------------------------------------------------------------


@T.prim_func(private=True, s_tir=True)
def gpu_upsample_concat(
    X: T.Buffer((1, 16, 2), "float32"),
    S: T.Buffer((1, 16, 4), "float32"),
    C: T.Buffer((1, 32, 4), "float32"),
):
    # As dlight schedules it: one thread per element, the upsample inlined, the unit dimension
    # indexed by a constant.
    T.func_attr({"tirx.is_scheduled": True})
    for _bx in T.thread_binding(1, thread="blockIdx.x"):
        for tx in T.thread_binding(128, thread="threadIdx.x"):
            with T.sblock("C"):
                v0 = T.axis.spatial(32, tx // 4)
                v1 = T.axis.spatial(4, tx % 4)
                C[0, v0, v1] = T.if_then_else(v0 >= 16, S[0, v0 - 16, v1], X[0, v0, v1 // 2])


@T.prim_func(private=True, s_tir=True)
def gpu_concat(
    A: T.Buffer((1, 16, 4), "float32"),
    B: T.Buffer((1, 16, 4), "float32"),
    C: T.Buffer((1, 32, 4), "float32"),
):
    T.func_attr({"tirx.is_scheduled": True})
    for bx in T.thread_binding(2, thread="blockIdx.x"):
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            with T.sblock("C"):
                v0 = T.axis.spatial(32, (bx * 64 + tx) // 4)
                v1 = T.axis.spatial(4, (bx * 64 + tx) % 4)
                C[0, v0, v1] = T.if_then_else(v0 >= 16, B[0, v0 - 16, v1], A[0, v0, v1])


@T.prim_func(private=True, s_tir=True)
def writes_its_input(
    X: T.Buffer((1, 16, 4), "float32"),
    S: T.Buffer((1, 16, 4), "float32"),
    C: T.Buffer((1, 32, 4), "float32"),
):
    for i, j, k in T.grid(1, 16, 4):
        with T.sblock("S"):
            vi, vj, vk = T.axis.remap("SSS", [i, j, k])
            S[vi, vj, vk] = X[vi, vj, vk]
    for i, j, k in T.grid(1, 32, 4):
        with T.sblock("C"):
            vi, vj, vk = T.axis.remap("SSS", [i, j, k])
            C[vi, vj, vk] = T.if_then_else(vj >= 16, S[vi, vj - 16, vk], X[vi, vj, vk] + 1.0)


@T.prim_func(private=True, s_tir=True)
def computed_within_the_slice(
    X: T.Buffer((1, 16, 4), "float32"),
    S: T.Buffer((1, 16, 4), "float32"),
    C: T.Buffer((1, 32, 4), "float32"),
):
    for i, j, k in T.grid(1, 32, 4):
        with T.sblock("C"):
            vi, vj, vk = T.axis.remap("SSS", [i, j, k])
            C[vi, vj, vk] = T.if_then_else(
                vj >= 16,
                T.if_then_else(vk < 2, S[vi, vj - 16, vk], X[vi, vj - 16, vk] + 1.0),
                X[vi, vj, vk],
            )


def test_a_fused_upsample_and_concatenation_slices_its_copied_input():
    # (axis, per input its byte offset or None, whether the kernel must run)
    assert analyze_concatenation(Kernels["upsample_concat"]) == (1, (None, 256), True)


def test_an_input_the_kernel_also_computes_from_is_sliced():
    assert analyze_concatenation(Kernels["ghost_concat"]) == (1, (0,), True)


def test_a_gpu_scheduled_fused_kernel_slices_its_copied_input():
    assert analyze_concatenation(gpu_upsample_concat) == (1, (None, 256), True)


def test_a_gpu_scheduled_concatenation_of_inputs_only_needs_no_kernel():
    """Every element selects an input, and the slices tile the axis: once the inputs sit at
    their slices, the kernel would write every byte with what it already holds."""
    assert analyze_concatenation(gpu_concat) == (1, (0, 256), False)


def test_an_input_whose_slice_is_partly_computed_is_not_sliced():
    """`S` would sit at channels [16, 32), where half the elements are computed from `X`; `X`
    is written unchanged into channels [0, 16) (and read again there for the computed ones)."""
    assert analyze_concatenation(computed_within_the_slice) == (1, (0, None), True)


@T.prim_func(private=True, s_tir=True)
def strided_slice(A: T.Buffer((1, 16, 4), "float32"), C: T.Buffer((1, 8, 4), "float32")):
    for i, j, k in T.grid(1, 8, 4):
        with T.sblock("C"):
            vi, vj, vk = T.axis.remap("SSS", [i, j, k])
            C[vi, vj, vk] = A[vi, vj + 4, vk]


def test_an_output_inside_a_larger_input_is_not_a_concatenation():
    assert "no input is written unchanged" in analyze_concatenation(strided_slice)


def test_a_kernel_writing_an_input_slices_nothing():
    assert "the PrimFunc writes its input `S`" in analyze_concatenation(writes_its_input)


# ---- the planner -------------------------------------------------------------------------------


@R.function
def _upsample_skip(x: R.Tensor((1, 16, 2), "float32"), y: R.Tensor((1, 16, 4), "float32")):
    R.func_attr({"relax.force_pure": True})
    s = R.builtin.alloc_tensor(R.shape([1, 16, 4]), F32, 0, R.str("global"))
    EXP(y, s)
    c = R.builtin.alloc_tensor(R.shape([1, 32, 4]), F32, 0, R.str("global"))
    UPCAT(x, s, c)
    d = R.builtin.alloc_tensor(R.shape([1, 32, 4]), F32, 0, R.str("global"))
    DOUBLE(c, d)
    return d


#: U-Net's decoder: the skip connection `s` concatenated after the upsampled `x`, in one kernel.
UpsampleSkip = relax_module(Kernels, main=_upsample_skip)


class TestTheSkipConnectionIsWrittenAtItsSlice(CompareBeforeAfter):
    """`s` is made 256 bytes into `c`'s storage; the fused kernel still runs (it upsamples `x`
    into the first half) and writes `s` back where it lies: one storage of 512 bytes, not two."""

    before = UpsampleSkip

    @R.function
    def _expected(x: R.Tensor((1, 16, 2), "float32"), y: R.Tensor((1, 16, 4), "float32")):
        R.func_attr({"relax.force_pure": True})
        storage = R.memory.alloc_storage(R.shape([512]), 0, R.str("global"), R.dtype("uint8"))
        s_at = R.memory.alloc_tensor(storage, 256, R.shape([1, 16, 4]), F32, 0)
        s = R.memory.ensure_zero_offset(s_at)
        EXP(y, s)
        c = R.memory.alloc_tensor(storage, 0, R.shape([1, 32, 4]), F32, 0)
        UPCAT(x, s, c)
        d = R.builtin.alloc_tensor(R.shape([1, 32, 4]), F32, 0, R.str("global"))
        DOUBLE(c, d)
        return d

    expected = relax_module(Kernels, main=_expected)

    def transform(self, before):
        return _planned(before)

    def test_results(self):
        _vm_results(self.before, self.transform(self.before))


def test_the_records_say_the_kernel_runs():
    (plan,) = memory_plan(UpsampleSkip, pipeline=None)
    (concat,) = plan.concats
    assert (concat.output, list(concat.inputs), list(concat.computed_from)) == ("c", ["s"], ["x"])
    assert (concat.copy_free, concat.kernel_runs, concat.decision) == (True, True, "copy_free")
    (copies,) = memory_plan(UpsampleSkip, pipeline=None, copy_free_concat=False)
    # Below the fixed-order bound of the IR: `s` and `c` no longer need 256 + 512 bytes.
    assert plan.planned_bytes == 512 + 512 < copies.peak_live_bytes == 256 + 512 + 512


@R.function
def _ghost(y: R.Tensor((1, 16, 4), "float32")):
    R.func_attr({"relax.force_pure": True})
    s = R.builtin.alloc_tensor(R.shape([1, 16, 4]), F32, 0, R.str("global"))
    EXP(y, s)
    c = R.builtin.alloc_tensor(R.shape([1, 32, 4]), F32, 0, R.str("global"))
    GHOST(s, c)
    d = R.builtin.alloc_tensor(R.shape([1, 32, 4]), F32, 0, R.str("global"))
    DOUBLE(c, d)
    return d


class TestAnInputTheKernelAlsoReadsSitsAtItsSlice(CompareBeforeAfter):
    """GhostNet's `concat((s, relu(s)))` in one kernel: `s` at the start of `c`; the kernel reads
    it for the relu while it writes `c`'s second half, bytes `s` does not hold."""

    before = relax_module(Kernels, main=_ghost)

    @R.function
    def _expected(y: R.Tensor((1, 16, 4), "float32")):
        R.func_attr({"relax.force_pure": True})
        storage = R.memory.alloc_storage(R.shape([512]), 0, R.str("global"), R.dtype("uint8"))
        s = R.memory.alloc_tensor(storage, 0, R.shape([1, 16, 4]), F32, 0)
        EXP(y, s)
        c = R.memory.alloc_tensor(storage, 0, R.shape([1, 32, 4]), F32, 0)
        GHOST(s, c)
        d = R.builtin.alloc_tensor(R.shape([1, 32, 4]), F32, 0, R.str("global"))
        DOUBLE(c, d)
        return d

    expected = relax_module(Kernels, main=_expected)

    def transform(self, before):
        return _planned(before)

    def test_results(self):
        _vm_results(self.before, self.transform(self.before))


@R.function
def _nested(
    x: R.Tensor((1, 16, 2), "float32"),
    y: R.Tensor((1, 16, 4), "float32"),
    z: R.Tensor((1, 16, 4), "float32"),
):
    R.func_attr({"relax.force_pure": True})
    s = R.builtin.alloc_tensor(R.shape([1, 16, 4]), F32, 0, R.str("global"))
    EXP(y, s)
    c = R.builtin.alloc_tensor(R.shape([1, 32, 4]), F32, 0, R.str("global"))
    UPCAT(x, s, c)
    t = R.builtin.alloc_tensor(R.shape([1, 16, 4]), F32, 0, R.str("global"))
    EXP(z, t)
    g = R.builtin.alloc_tensor(R.shape([1, 32, 4]), F32, 0, R.str("global"))
    GHOST(t, g)
    w = R.builtin.alloc_tensor(R.shape([1, 64, 4]), F32, 0, R.str("global"))
    CONCAT(c, g, w)
    d = R.builtin.alloc_tensor(R.shape([1, 64, 4]), F32, 0, R.str("global"))
    DOUBLE_WIDE(w, d)
    return d


def test_fused_concatenations_inside_a_concatenation_share_one_buffer():
    """DenseNet-like nesting: `c` and `g` (fused kernels that run) sit at their slices of `w`
    (dropped), `s` and `t` inside them: five tensors in `w`'s 1,024 bytes."""
    mod = relax_module(Kernels, main=_nested)
    (plan,) = memory_plan(mod, pipeline=None)
    assert [(c.output, c.copy_free, c.kernel_runs) for c in plan.concats] == [
        ("c", True, True),
        ("g", True, True),
        ("w", True, False),
    ]
    placed = {t.binding: t.group_offset for t in plan.tensors if t.group >= 0}
    assert placed == {"s": 256, "c": 0, "t": 512, "g": 512, "w": 0}
    _vm_results(mod, _planned(mod))


@R.function
def _two_concats(
    x: R.Tensor((1, 16, 2), "float32"),
    x2: R.Tensor((1, 16, 2), "float32"),
    y: R.Tensor((1, 16, 4), "float32"),
):
    R.func_attr({"relax.force_pure": True})
    s = R.builtin.alloc_tensor(R.shape([1, 16, 4]), F32, 0, R.str("global"))
    EXP(y, s)
    c = R.builtin.alloc_tensor(R.shape([1, 32, 4]), F32, 0, R.str("global"))
    UPCAT(x, s, c)
    c2 = R.builtin.alloc_tensor(R.shape([1, 32, 4]), F32, 0, R.str("global"))
    UPCAT(x2, s, c2)
    d = R.builtin.alloc_tensor(R.shape([1, 32, 4]), F32, 0, R.str("global"))
    DOUBLE(c, d)
    d2 = R.builtin.alloc_tensor(R.shape([1, 32, 4]), F32, 0, R.str("global"))
    DOUBLE(c2, d2)
    return (d, d2)


def test_a_producer_feeding_two_concatenations_sits_in_one():
    """`s` cannot lie in both `c` and `c2`, which the kernels write apart: the first
    concatenation owns it, the second keeps its copy and says why."""
    mod = relax_module(Kernels, main=_two_concats)
    (plan,) = memory_plan(mod, pipeline=None)
    assert [(c.output, c.copy_free, c.decision) for c in plan.concats] == [
        ("c", True, "copy_free"),
        ("c2", False, "placement_conflict"),
    ]
    _vm_results(mod, _planned(mod))


@R.function
def _overwritten(x: R.Tensor((1, 16, 2), "float32"), y: R.Tensor((1, 16, 4), "float32")):
    R.func_attr({"relax.force_pure": True})
    s = R.builtin.alloc_tensor(R.shape([1, 16, 4]), F32, 0, R.str("global"))
    EXP(y, s)
    c = R.builtin.alloc_tensor(R.shape([1, 32, 4]), F32, 0, R.str("global"))
    UPCAT(x, s, c)
    DOUBLE_INPLACE(c)  # `call_tir_inplace` as CallTIRRewrite lowers it
    doubled = c
    e = R.builtin.alloc_tensor(R.shape([1, 16, 4]), F32, 0, R.str("global"))
    EXP(s, e)
    d = R.builtin.alloc_tensor(R.shape([1, 32, 4]), F32, 0, R.str("global"))
    DOUBLE(doubled, d)
    return (d, e)


def test_a_slice_overwritten_while_its_input_is_read_keeps_the_copy():
    """`c` is doubled in place, then `s` is read: placed in `c`, `s` would read doubled."""
    mod = relax_module(Kernels, main=_overwritten)
    (plan,) = memory_plan(mod, pipeline=None)
    assert [(c.copy_free, c.decision) for c in plan.concats] == [(False, "overwritten_while_read")]
    _vm_results(mod, _planned(mod))


# ---- models: the fused CPU recipe and the cuda pipeline ----------------------------------------

_PLANNER = "tvm_memplan.StaticPlanBlockMemory"


def _plans(mod, target, relax_pipeline):
    """Our plan of what our planner receives in the memplan build, copy-free and with copies."""
    built = {}
    captured = capture(
        lambda: built.setdefault(
            "ours", tvm_memplan.compile(mod, target, relax_pipeline=relax_pipeline)
        ),
        [_PLANNER],
    )[_PLANNER]
    with tvm.target.Target(target):
        (ours,) = memory_plan(captured, target, pipeline=None)
        (copies,) = memory_plan(captured, target, pipeline=None, copy_free_concat=False)
    return built["ours"], ours, copies


#: The zoo's, and a 3-level U-Net at 64x64 as an ONNX file imports (Resize, then Concat).
MODELS = {"unet": ZOO["unet"], "ghostnet": ZOO["ghostnet"], "onnx_unet": onnx_unet}
#: Models whose every concatenation is fused with the upsample before it.
FUSED_WITH_UPSAMPLE = ("unet", "onnx_unet")


@pytest.mark.parametrize("name", sorted(MODELS))
def test_fused_recipe_below_the_bound_with_stocks_results_on_three_calls(name):
    mod, func_name = MODELS[name]()
    ours, plan, copies = _plans(mod, "llvm", ["zero", "default"])
    assert plan.concats and all(c.copy_free for c in plan.concats)
    assert plan.applied_bytes < copies.peak_live_bytes
    if name in FUSED_WITH_UPSAMPLE:
        assert all(c.kernel_runs for c in plan.concats)
    stock = tvm.compile(relax.get_pipeline("zero")(mod), "llvm")
    vms = tuple(relax.VirtualMachine(e, tvm.cpu()) for e in (stock, ours))
    assert_same_relax_results(mod, mod, func_name, vms=vms)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_cuda_build_below_the_bound(name):
    """Built for cuda (dlight-scheduled kernels, thread-bound loops): every concatenation is
    copy-free and the plan is below the fixed-order bound; not run, there is no GPU."""
    mod, _ = MODELS[name]()
    _, plan, copies = _plans(mod, "cuda", "default")
    assert plan.concats and all(c.copy_free for c in plan.concats)
    assert plan.planner == "memplan"
    assert plan.applied_bytes < copies.peak_live_bytes


def _live_bytes_oracle(plan) -> list[int]:
    """Each point's live bytes, point by point: a group's live members' byte ranges merged."""
    live = [0] * plan.num_points
    for point in range(plan.num_points):
        groups = {}
        for t in plan.tensors:
            static = all(isinstance(e, int) for e in t.shape)
            if t.bytes < 0 or not static or not t.first <= point <= t.last:
                continue
            if t.group >= 0 and t.storage >= 0:
                groups.setdefault(t.group, []).append((t.group_offset, t.group_offset + t.bytes))
            else:
                live[point] += t.bytes
        for ranges in groups.values():
            covered = set()
            for begin, end in ranges:
                covered.update(range(begin, end))
            live[point] += len(covered)
    return live


@pytest.mark.parametrize("name", ["unet", "ghostnet"])
def test_the_live_bytes_curve_counts_each_groups_bytes_once(name):
    """FunctionMemoryPlan.live_bytes() (the C++ curve) against a byte-by-byte count."""
    mod, _ = MODELS[name]()
    _, plan, _ = _plans(mod, "llvm", ["zero", "default"])
    curve = list(plan.live_bytes())
    assert curve == _live_bytes_oracle(plan)
    assert max(curve) <= plan.peak_live_bytes
