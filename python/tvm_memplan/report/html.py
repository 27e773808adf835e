"""The report as one self-contained HTML page (``--html FILE``): no network, no script, charts as
inline SVG written from the report's data through a Jinja2 template.

Every figure on the page carries its value and where it comes from in a ``data-figure``
attribute (``summary.vm.ours``, ``memory.main.bound_bytes``, ...), the same names as in the
JSON, so the tests can check the page against ``--json``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import jinja2

from .model import FunctionMemory, Report, TensorRecord
from .text import ratio

__all__ = ["render_html"]

# Plot geometry, in SVG user units.
PLOT_WIDTH = 960
LANE_HEIGHT = 220
LIVE_HEIGHT = 120
MARGIN_LEFT = 84
MARGIN_RIGHT = 16
MARGIN_TOP = 8
MARGIN_BOTTOM = 24


@dataclass(frozen=True)
class Rect:
    x: float
    y: float
    width: float
    height: float
    color: str
    title: str
    binding: str
    offset: int
    bytes: int
    storage: int


@dataclass(frozen=True)
class Lane:
    """One plan drawn as rectangles: x the program point, y the offset in the plan's bytes."""

    name: str
    total: int
    rects: list[Rect]
    #: (y, label) of storage boundaries.
    storages: list[tuple[float, str]]
    ticks: list[tuple[float, str]]


@dataclass(frozen=True)
class Timeline:
    function: FunctionMemory
    width: int
    lanes: list[Lane]
    live_path: str
    live_ticks: list[tuple[float, str]]
    bound_y: float
    x_ticks: list[tuple[float, str]]
    tensors: list[TensorRecord]


def human(nbytes: int | None) -> str:
    """1536 -> "1.5 KiB"; None -> "-"."""
    if nbytes is None:
        return "-"
    if nbytes < 1024:
        return f"{nbytes} B"
    value = nbytes / 1024
    for unit in ("KiB", "MiB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


def _color(key: str) -> str:
    hue = int(hashlib.sha1(key.encode()).hexdigest()[:4], 16) % 360
    return f"hsl({hue}, 60%, 62%)"


def _ticks(maximum: int, height: float, count: int = 4) -> list[tuple[float, str]]:
    if maximum <= 0:
        return [(height, "0")]
    return [(height - height * i / count, human(maximum * i // count)) for i in range(count + 1)]


def _tooltip(t: TensorRecord, where: str) -> str:
    shape = "x".join(str(d) for d in t.shape) or "scalar"
    lines = [
        f"{t.binding} (written by {t.op or 'an unknown call'})",
        f"{shape} {t.dtype}, {t.bytes} B",
        f"live over program points {t.first}..{t.last}",
        where,
    ]
    return "\n".join(lines)


def _lane(name: str, m: FunctionMemory, scale_x: float, top: int, stock: bool) -> Lane:
    """Rectangles of one plan. Storages are stacked bottom up (offset within each); tensors the
    plan gives storage of their own are stacked above them."""
    scale_y = LANE_HEIGHT / top
    storages = m.stock_storages if stock else m.storages
    bases, base = [], 0
    for s in storages:
        bases.append(base)
        base += max(s.bytes, 0)
    rects, own = [], base
    for t in sorted(m.tensors, key=lambda t: t.first):
        if t.bytes <= 0:
            continue
        index = t.stock_storage if stock else t.storage
        if index >= 0:
            offset = 0 if stock else t.offset
            y0 = bases[index] + offset
            where = f"storage {index} at offset {offset}"
        else:
            y0 = own
            own += t.bytes
            where = "storage of its own" + ("" if stock else f": {t.reason}")
        rects.append(
            Rect(
                x=MARGIN_LEFT + t.first * scale_x,
                y=MARGIN_TOP + LANE_HEIGHT - (y0 + t.bytes) * scale_y,
                width=max((t.last - t.first + 1) * scale_x, 1.0),
                height=max(t.bytes * scale_y, 0.5),
                color=_color(t.binding),
                title=_tooltip(t, where),
                binding=t.binding,
                offset=y0,
                bytes=t.bytes,
                storage=index,
            )
        )
    boundaries = [
        (MARGIN_TOP + LANE_HEIGHT - b * scale_y, f"storage {i}") for i, b in enumerate(bases)
    ]
    ticks = [(MARGIN_TOP + y, label) for y, label in _ticks(top, LANE_HEIGHT)]
    return Lane(name, own, rects, boundaries, ticks)


def _plan_bytes(m: FunctionMemory, stock: bool) -> int:
    """What a plan allocates: its storages and the tensors it gives storage of their own."""
    storages = m.stock_storages if stock else m.storages
    own = (t for t in m.tensors if (t.stock_storage if stock else t.storage) < 0)
    return sum(max(s.bytes, 0) for s in storages) + sum(t.bytes for t in own if t.bytes > 0)


def _timeline(m: FunctionMemory) -> Timeline:
    points = max(m.num_points, 1)
    scale_x = PLOT_WIDTH / points
    top = max(_plan_bytes(m, stock=False), _plan_bytes(m, stock=True), 1)  # one scale for both
    lanes = [
        _lane("tvm-memplan", m, scale_x, top, stock=False),
        _lane("TVM's StaticPlanBlockMemory, same IR", m, scale_x, top, stock=True),
    ]
    live_top = max(max(m.live_bytes, default=0), m.bound_bytes, 1)
    live_scale = LIVE_HEIGHT / live_top
    path = []
    for p, nbytes in enumerate(m.live_bytes):
        x0, x1 = MARGIN_LEFT + p * scale_x, MARGIN_LEFT + (p + 1) * scale_x
        y = MARGIN_TOP + LIVE_HEIGHT - nbytes * live_scale
        path.append(f"{'M' if p == 0 else 'L'}{x0:.2f},{y:.2f} L{x1:.2f},{y:.2f}")
    step = max(1, points // 10)
    x_ticks = [(MARGIN_LEFT + p * scale_x, str(p)) for p in range(0, points + 1, step)]
    return Timeline(
        function=m,
        width=MARGIN_LEFT + PLOT_WIDTH + MARGIN_RIGHT,
        lanes=lanes,
        live_path=" ".join(path),
        live_ticks=[(MARGIN_TOP + y, label) for y, label in _ticks(live_top, LIVE_HEIGHT)],
        bound_y=MARGIN_TOP + LIVE_HEIGHT - m.bound_bytes * live_scale,
        x_ticks=x_ticks,
        tensors=sorted(m.tensors, key=lambda t: (-t.bytes, t.first)),
    )


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("tvm_memplan.report", "templates"),
        autoescape=jinja2.select_autoescape(["html", "j2"], default=True),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["human"] = human
    env.globals["ratio"] = ratio
    return env


def render_html(report: Report) -> str:
    """The whole page."""
    tir_functions = sorted({b.function for b in report.compaction.buffers})
    placements = {}
    for a in report.placement.allocations:
        placements.setdefault(a.function, []).append(a)
    return (
        _environment()
        .get_template("report.html.j2")
        .render(
            report=report,
            timelines=[_timeline(m) for m in report.memory],
            tir_functions=tir_functions,
            buffers={
                name: sorted(
                    (b for b in report.compaction.buffers if b.function == name),
                    key=lambda b: -(b.original_bytes or 0),
                )
                for name in tir_functions
            },
            placements={
                name: sorted(items, key=lambda a: -(a.bytes or 0))
                for name, items in sorted(placements.items())
            },
            geometry={
                "left": MARGIN_LEFT,
                "top": MARGIN_TOP,
                "lane": LANE_HEIGHT,
                "live": LIVE_HEIGHT,
                "bottom": MARGIN_BOTTOM,
                "width": PLOT_WIDTH,
            },
        )
    )
