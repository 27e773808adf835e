"""Seeded random Relax functions for property tests of the in-place rewrite and the planner.

Each function mixes elementwise and broadcasting operators, tuples (nested, indexed, passed to
concat, returned), views (reshape, expand_dims, squeeze, and copies that RewriteDataflowReshape
turns into views), constants, several dataflow blocks, bindings outside blocks and `if`s. With
``branch_chains``, each `if` branch computes a chain of operators, whose intermediate tensors
live and die inside the branch while the branch result is read after the `if` (the shape of
apache/tvm#20191, where TVM's planner uses storage allocated in a branch after it). With
``constant_copies``, some copies read a constant expression directly (as the batch-norm
statistics of imported models do: `R.expand_dims(R.const(...))`), which RewriteDataflowReshape
turns into views of the constant: storage the planner does not manage.

With ``dynamic``, the first dimension of `x` is a shape variable `n` (and a parameter `u` of
shape `(m, 8)` adds an unbounded `m`): ``"bounded"`` bounds `n` by `N_UPPER_BOUND` through
`tir_var_upper_bound`, as LLM deployments do, ``"unbounded"`` does not.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import tvm
from tvm.script import relax as R
from tvm.script import tirx as T

UNARY = ["R.tanh", "R.sigmoid", "R.sin", "R.negative", "R.abs", "R.nn.relu", "R.exp", "R.floor"]
BINARY = ["R.add", "R.subtract", "R.multiply", "R.maximum", "R.minimum"]
N_UPPER_BOUND = 6
DYNAMIC = (None, "bounded", "unbounded")


def _broadcast(a: tuple, b: tuple) -> tuple | None:
    # Extents are ints or shape-variable expressions (strings): those broadcast only with
    # themselves and 1.
    if a == b or not b:
        return a
    if not a:
        return b
    rank = max(len(a), len(b))
    a, b = (1,) * (rank - len(a)) + a, (1,) * (rank - len(b)) + b
    out = []
    for x, y in zip(a, b, strict=True):
        if x != y and 1 not in (x, y):
            return None
        out.append(y if x == 1 else x)
    return tuple(out)


def _shape(dims: tuple, quoted: bool = False) -> str:
    """A shape in the function body, or in its signature (`quoted`: shape variables as strings,
    which the signature defines)."""
    return (
        "(" + "".join(f'"{d}", ' if quoted and isinstance(d, str) else f"{d}, " for d in dims) + ")"
    )


@dataclass
class _Scope:
    """Tensors and tuples usable at the current point."""

    tensors: dict[str, tuple] = field(default_factory=dict)
    tuples: dict[str, list] = field(default_factory=dict)  # name -> element shapes (nested)


class _Generator:
    def __init__(
        self,
        seed: int,
        branch_chains: bool = False,
        constant_copies: bool = False,
        dynamic: str | None = None,
    ):
        if dynamic not in DYNAMIC:
            raise ValueError(f"dynamic must be one of {DYNAMIC}, got {dynamic!r}")
        self.rng = random.Random(seed)
        self.branch_chains = branch_chains
        self.constant_copies = constant_copies
        self.dynamic = dynamic
        #: The shape of `x`, which every branch result has.
        self.main = ("n", 8) if dynamic else (4, 8)
        self.lines: list[str] = []
        self.count = 0

    def fresh(self) -> str:
        self.count += 1
        return f"v{self.count}"

    def pick(self, names: list[str]) -> str:
        """A name, most often one of the latest (chains of operators, as in models)."""
        if len(names) > 4 and self.rng.random() < 0.7:
            return self.rng.choice(names[-4:])
        return self.rng.choice(names)

    def emit(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text)

    def binding(self, scope: _Scope, indent: int, local: _Scope | None = None) -> str | None:
        """One random binding; returns the var it defines (None if none could be made)."""
        rng = self.rng
        visible = _Scope(
            {**scope.tensors, **(local.tensors if local else {})},
            {**scope.tuples, **(local.tuples if local else {})},
        )
        target = local if local is not None else scope
        names = list(visible.tensors)
        name = self.fresh()
        kind = rng.choices(
            ["unary", "binary", "tuple", "item", "view", "copy", "const", "concat"],
            weights=[5, 6, 2, 2, 2, 2, 1, 1],
        )[0]
        if kind == "unary":
            src = self.pick(names)
            self.emit(indent, f"{name} = {rng.choice(UNARY)}({src})")
            target.tensors[name] = visible.tensors[src]
        elif kind == "binary":
            a = self.pick(names)
            options = [b for b in names if _broadcast(visible.tensors[a], visible.tensors[b])]
            b = rng.choice(options)
            if rng.random() < 0.5:
                a, b = b, a
            self.emit(indent, f"{name} = {rng.choice(BINARY)}({a}, {b})")
            target.tensors[name] = _broadcast(visible.tensors[a], visible.tensors[b])
        elif kind == "tuple":
            members = rng.sample(names, k=min(len(names), rng.randint(1, 3)))
            if visible.tuples and rng.random() < 0.3:
                inner = rng.choice(list(visible.tuples))
                members.append(inner)
            shapes = [visible.tensors.get(m, visible.tuples.get(m)) for m in members]
            self.emit(indent, f"{name} = ({', '.join(members)},)")
            target.tuples[name] = shapes
        elif kind == "item" and visible.tuples:
            tup = rng.choice(list(visible.tuples))
            index = rng.randrange(len(visible.tuples[tup]))
            element = visible.tuples[tup][index]
            self.emit(indent, f"{name} = {tup}[{index}]")
            if isinstance(element, list):
                target.tuples[name] = element
            else:
                target.tensors[name] = element
        elif kind == "view":
            src = self.pick(names)
            shape = visible.tensors[src]
            if shape == self.main:
                flat = "n * 8" if self.dynamic else "32"
                self.emit(indent, f"{name} = R.reshape({src}, ({flat},))")
                other = self.fresh()
                self.emit(indent, f"{other} = R.reshape({name}, {_shape(self.main)})")
                target.tensors[other] = self.main
                return other
            if shape == (8,):
                self.emit(indent, f"{name} = R.expand_dims({src}, axis=[0])")
                target.tensors[name] = (1, 8)
            elif shape == (1, 8):
                self.emit(indent, f"{name} = R.squeeze({src}, axis=[0])")
                target.tensors[name] = (8,)
            else:
                return None
        elif kind == "copy" and self.constant_copies and rng.random() < 0.5:
            values = ", ".join(str(round(rng.uniform(-1, 1), 3)) for _ in range(8))
            self.emit(indent, f'{name} = R.expand_dims(R.const([{values}], "float32"), axis=[0])')
            target.tensors[name] = (1, 8)
        elif kind == "copy":
            src = self.pick(names)
            shape = visible.tensors[src]
            op = rng.choice(["astype", "broadcast_to", "concat1"])
            if op == "astype":
                self.emit(indent, f'{name} = R.astype({src}, "float32")')
            elif op == "broadcast_to":
                self.emit(indent, f"{name} = R.broadcast_to({src}, {_shape(shape)})")
            elif shape:
                self.emit(indent, f"{name} = R.concat(({src},), axis=0)")
            else:
                return None
            target.tensors[name] = shape
        elif kind == "const":
            value = round(rng.uniform(-1, 1), 3)
            self.emit(indent, f'{name} = R.const({value}, "float32")')
            target.tensors[name] = ()
            if rng.random() < 0.5:
                full = self.fresh()
                self.emit(indent, f'{full} = R.full((4, 8), {name}, "float32")')
                target.tensors[full] = (4, 8)
                return full
        elif kind == "concat" and visible.tuples:
            tup = rng.choice(list(visible.tuples))
            shapes = visible.tuples[tup]
            if not all(isinstance(s, tuple) and s and s == shapes[0] for s in shapes):
                return None
            self.emit(indent, f"{name} = R.concat({tup}, axis=0)")
            first = shapes[0][0]
            first = f"{first} * {len(shapes)}" if isinstance(first, str) else first * len(shapes)
            target.tensors[name] = (first,) + shapes[0][1:]
        else:
            return None
        return name

    def function(self) -> str:
        rng = self.rng
        self.emit(0, "@R.function(pure=True)")
        params = {"x": self.main, "y": (8,), "z": (1, 8)}
        extra = ""
        if self.dynamic:
            params["u"] = ("m", 8)
            extra = ', u: R.Tensor(("m", 8), "float32")'
        self.emit(
            0,
            f'def main(x: R.Tensor({_shape(self.main, quoted=True)}, "float32"), '
            'y: R.Tensor((8,), "float32"), '
            f'z: R.Tensor((1, 8), "float32"), c: R.Tensor((), "bool"){extra}):',
        )
        if self.dynamic:
            self.emit(1, "n = T.int64()")
            self.emit(1, "m = T.int64()")
        if self.dynamic == "bounded":
            self.emit(1, f'R.func_attr({{"tir_var_upper_bound": {{"n": {N_UPPER_BOUND}}}}})')
        scope = _Scope(dict(params))
        for _ in range(rng.randint(2, 4)):
            segment = rng.choice(["dataflow", "plain", "if"])
            if segment == "dataflow":
                self.emit(1, "with R.dataflow():")
                local = _Scope()
                made = [self.binding(scope, 2, local) for _ in range(rng.randint(2, 6))]
                made = [m for m in made if m]
                if not made:
                    self.lines.pop()
                    continue
                outputs = sorted(set(rng.sample(made, k=rng.randint(1, len(made)))) | {made[-1]})
                self.emit(2, f"R.output({', '.join(outputs)})")
                for name in outputs:
                    if name in local.tensors:
                        scope.tensors[name] = local.tensors[name]
                    elif name in local.tuples:
                        scope.tuples[name] = local.tuples[name]
            elif segment == "plain":
                for _ in range(rng.randint(1, 3)):
                    self.binding(scope, 1)
            else:
                # Without branch_chains, one operator per branch: a branch with intermediate
                # tensors trips a TVM bug (StaticPlanBlockMemory reuses storage allocated in a
                # branch after the `if`), which the in-place tests must not depend on.
                result = self.fresh()
                self.emit(1, "if c:")
                for branch in ("then", "else"):
                    if branch == "else":
                        self.emit(1, "else:")
                    full = [n for n, shape in scope.tensors.items() if shape == self.main]
                    steps = rng.randint(1, 3) if self.branch_chains else 1
                    previous = None
                    for step in range(steps):
                        # (The draws keep the order of single-operator branches.)
                        if rng.random() < 0.5:
                            value = f"{rng.choice(UNARY)}({previous or rng.choice(full)})"
                        else:
                            other = rng.choice(
                                [
                                    n
                                    for n, shape in scope.tensors.items()
                                    if _broadcast(self.main, shape) == self.main
                                ]
                            )
                            value = f"{rng.choice(BINARY)}({other}, {previous or 'x'})"
                        name = result if step == steps - 1 else self.fresh()
                        self.emit(2, f"{name} = {value}")
                        previous = name
                scope.tensors[result] = self.main
        candidates = list(scope.tensors) + list(scope.tuples)
        returned = rng.sample(candidates, k=min(len(candidates), rng.randint(1, 3)))
        self.emit(1, f"return ({', '.join(returned)},)")
        return "\n".join(self.lines)


def random_function_source(
    seed: int,
    branch_chains: bool = False,
    constant_copies: bool = False,
    dynamic: str | None = None,
) -> str:
    """TVMScript of a random Relax function `main` (see the module docstring)."""
    return _Generator(seed, branch_chains, constant_copies, dynamic).function()


def random_module(
    seed: int,
    branch_chains: bool = False,
    constant_copies: bool = False,
    dynamic: str | None = None,
) -> tvm.IRModule:
    source = random_function_source(seed, branch_chains, constant_copies, dynamic)
    func = tvm.script.from_source(source, extra_vars={"R": R, "T": T})
    return tvm.IRModule({"main": func})
