"""The scoped visitor: loop, thread and allocation scopes, conditions, blocks."""

import tvm
from tvm.script import tirx as T

from tvm_memplan import testing as hooks


def events(func, skip_unreachable=False):
    return list(hooks.visit_events(func, skip_unreachable))


def test_flat_allocation_lives_until_the_end_of_its_sequence():
    @T.prim_func
    def func(A: T.Buffer((16, 16), "float32"), C: T.Buffer((16, 16), "float32")):
        for i in range(16):
            B = T.alloc_buffer((16,), "float32")
            for j in range(16):
                B[j] = A[i, j]
            for j in range(16):
                C[i, j] = B[j]
        D = T.alloc_buffer((4,), "float32")
        D[0] = T.float32(0)

    assert events(func) == [
        "alloc B depth=1 loops=[i] conds=0",
        "store B loops=[i j] conds=0",
        "load A loops=[i j] conds=0",
        "store C loops=[i j] conds=0",
        "load B loops=[i j] conds=0",
        "end B",
        "alloc D depth=0 loops=[] conds=0",
        "store D loops=[] conds=0",
        "end D",
    ]


def test_if_else_and_if_then_else_are_conditions_but_select_is_not():
    @T.prim_func
    def func(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
        for i in range(16):
            if i < 8:
                B[i] = A[i]
            else:
                B[i] = T.if_then_else(i > 12, A[i], T.float32(0))
            B[i] = T.Select(i > 4, A[i], A[0])

    assert events(func) == [
        "store B loops=[i] conds=1",
        "load A loops=[i] conds=1",
        "store B loops=[i] conds=1",
        "load A loops=[i] conds=2",
        "store B loops=[i] conds=0",
        "load A loops=[i] conds=0",
        "load A loops=[i] conds=0",
    ]


def test_unreachable_branches_are_skipped_only_when_asked():
    @T.prim_func
    def func(B: T.Buffer((16,), "float32")):
        for i in range(16):
            if i > 20:
                B[i] = T.float32(1)
            B[i] = T.float32(0)

    assert events(func) == ["store B loops=[i] conds=1", "store B loops=[i] conds=0"]
    assert events(func, skip_unreachable=True) == ["store B loops=[i] conds=0"]


def test_blocks_thread_bindings_and_predicates():
    @T.prim_func(s_tir=True)
    def func(a: T.handle, c: T.handle) -> None:
        A = T.match_buffer(a, (16, 16), "float32")
        C = T.match_buffer(c, (16, 16), "float32")
        for i0 in T.thread_binding(0, 2, thread="blockIdx.x"):
            for i2 in T.thread_binding(0, 8, thread="threadIdx.x"):
                with T.sblock("outer"):
                    T.reads(A[i0 * 8 + i2, 0:16])
                    T.writes(C[i0 * 8 + i2, 0:16])
                    B = T.sblock_alloc_buffer((16, 16), "float32", scope="shared")
                    for j in range(0, 16):
                        with T.sblock("produce"):
                            T.where(j < 12)
                            T.reads(A[i0 * 8 + i2, j])
                            T.writes(B[i0 * 8 + i2, j])
                            B[i0 * 8 + i2, j] = A[i0 * 8 + i2, j] + 1.0
                    for j in range(0, 16):
                        with T.sblock("consume"):
                            T.reads(B[i0 * 8 + i2, j])
                            T.writes(C[i0 * 8 + i2, j])
                            C[i0 * 8 + i2, j] = B[i0 * 8 + i2, j] * 2.0

    threads = "i0:blockIdx.x i2:threadIdx.x"
    assert events(func) == [
        "block root loops=[] conds=0",
        f"block outer loops=[{threads}] conds=0",
        f"alloc B depth=2 loops=[{threads}] conds=0",
        f"block produce loops=[{threads} j] conds=1",
        f"store B loops=[{threads} j] conds=1",
        f"load A loops=[{threads} j] conds=1",
        f"block consume loops=[{threads} j] conds=0",
        f"store C loops=[{threads} j] conds=0",
        f"load B loops=[{threads} j] conds=0",
        "end B",
    ]


def test_thread_extent_attributes_are_loop_scopes():
    @T.prim_func
    def func(A: T.Buffer((16,), "float32")):
        tx = T.launch_thread("threadIdx.x", 16)
        B = T.alloc_buffer((16,), "float32", scope="local")
        B[tx] = A[tx]

    assert events(func) == [
        "alloc B depth=1 loops=[tx:threadIdx.x] conds=0",
        "store B loops=[tx:threadIdx.x] conds=0",
        "load A loops=[tx:threadIdx.x] conds=0",
        "end B",
    ]


def test_match_buffer_is_reported_with_its_source():
    @T.prim_func(s_tir=True)
    def func(A: T.Buffer((16, 16), "float32")):
        for i in range(4):
            with T.sblock("tile"):
                vi = T.axis.spatial(4, i)
                T.reads()
                T.writes(A[vi * 4 : vi * 4 + 4, 0:16])
                sub = T.match_buffer(A[vi * 4 : vi * 4 + 4, 0:16], (4, 16))
                sub[0, 0] = T.float32(0)

    assert "match sub <- A" in events(func)


def test_view_declaration_is_not_an_opaque_pointer_use():
    """`decl_buffer(data=B.data)` defines a view; the visitor reports it as a definition."""

    @T.prim_func
    def func(A: T.Buffer((16,), "float32")):
        B = T.alloc_buffer((16,), "float32")
        V = T.decl_buffer((4, 4), "float32", data=B.data)
        V[0, 0] = A[0]

    assert events(func) == [
        "alloc B depth=0 loops=[] conds=0",
        "alloc V depth=0 loops=[] conds=0",
        "store V loops=[] conds=0",
        "load A loops=[] conds=0",
        "end V",
        "end B",
    ]


def test_lowering_blocks_keeps_the_events_of_the_accesses():
    @T.prim_func(s_tir=True)
    def func(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
        for i in range(16):
            with T.sblock("b"):
                B = T.sblock_alloc_buffer((16,), "float32")
                B[i] = A[i]
                C[i] = B[i]

    lowered = tvm.s_tir.transform.LowerOpaqueBlock()(tvm.IRModule({"main": func}))["main"]
    accesses = [e for e in events(func) if e.startswith(("load", "store"))]
    assert accesses == [e for e in events(lowered) if e.startswith(("load", "store"))]


def test_bind_is_reported_after_its_value():
    @T.prim_func
    def func(A: T.Buffer((16,), "float32")):
        for i in range(4):
            x = T.bind(i * 4)
            A[x] = T.float32(0)

    assert events(func) == [
        "bind x loops=[i] conds=0",
        "store A loops=[i] conds=0",
    ]


def test_loop_steps_give_the_range_the_var_covers():
    @T.prim_func
    def func(A: T.Buffer((32,), "float32")):
        for i in T.serial(4, 16, step=3):
            A[i] = T.float32(0)
        for k in T.serial(15, 3, step=-2):
            A[k] = T.float32(1)

    assert list(hooks.store_facts(func, False)) == [
        "A i=[4, 14) in bounds",
        "A k=[5, 16) in bounds",
    ]


def test_analyzer_knows_loops_blocks_binds_and_conditions_when_asked():
    """Bindings reach the analyzer lazily, but always before a question is answered."""

    @T.prim_func(s_tir=True)
    def func(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        for i in range(16):
            with T.sblock("b"):
                vi = T.axis.spatial(16, i)
                x = T.bind(vi - 8)
                if vi >= 8:
                    A[x] = T.float32(0)
                B[x] = T.float32(0)

    assert list(hooks.store_facts(func, False)) == [
        "A i=[0, 16) in bounds",
        "B i=[0, 16) unproven",
    ]


def test_fresh_analyzer_between_top_level_statements_keeps_top_level_binds():
    """forget_finished_scopes: finished loops are forgotten, top-level Binds are replayed."""
    loops = "\n".join(
        f"    for i{k} in range(4):\n        A[i{k}] = T.float32(0)" for k in range(70)
    )
    source = (
        "@T.prim_func\n"
        "def func(A: T.Buffer((8,), 'float32'), n: T.int32):\n"
        "    x = T.bind(T.max(T.min(n, 7), 0))\n"
        f"{loops}\n"
        "    for j in range(2):\n"
        "        A[x] = T.float32(1)\n"
    )
    func = tvm.script.from_source(source)
    for forget in (False, True):
        facts = list(hooks.store_facts(func, forget))
        assert facts[-1] == "A j=[0, 2) in bounds"
        assert all(f.endswith("in bounds") for f in facts)
