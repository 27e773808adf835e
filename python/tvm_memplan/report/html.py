"""The report as one self-contained HTML page (``--html FILE``): no network, no script, charts as
inline SVG written from the report's data through a Jinja2 template.

Every figure on the page carries its value and where it comes from in a ``data-figure``
attribute (``summary.memplan.total``, ``relax.0.plan.peak_live_bytes``, ...), the JSON path of
the same figure, so the tests can check the page against ``--json``. The page draws what the
records say; the bytes of a plan are the plan record's own figures.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import jinja2

from .format import bytes_text, human, ratio, shape
from .model import SUMMARY_FIGURES, RelaxFunction, Report
from .origins import Origin, describe
from .views import (
    at_values,
    compaction_totals,
    concat_call,
    concat_rows,
    concats_of,
    kernel_bytes,
    kernel_groups,
    largest_tensors,
    lift,
    optimality_text,
    placement_totals,
    plan_bytes,
    section_failures,
    tensor_bytes,
)

__all__ = ["render_html"]

# Plot geometry, in SVG user units.
PLOT_WIDTH = 960
LANE_HEIGHT = 220
LIVE_HEIGHT = 120
MARGIN_LEFT = 84
MARGIN_RIGHT = 16
MARGIN_TOP = 8
MARGIN_BOTTOM = 24
#: Rows of a long table shown before its "show all".
TOP = 10


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
    #: Its group of tensors placed together by copy-free concatenations (-1: none).
    group: int = -1


@dataclass(frozen=True)
class GroupBox:
    """The bytes and program points a group of tensors placed together by copy-free
    concatenations spans: drawn as one outline around its tensors."""

    x: float
    y: float
    width: float
    height: float
    group: int
    title: str


@dataclass(frozen=True)
class Lane:
    """One plan drawn as rectangles: x the program point, y the offset in the plan's bytes."""

    name: str
    #: The plan's bytes, as its record gives them, and where in the JSON.
    total: int
    path: str
    #: "name: bytes" (an expression where a size has no value).
    label: str
    rects: list[Rect]
    #: (y, label) of storage boundaries.
    storages: list[tuple[float, str]]
    ticks: list[tuple[float, str]]
    groups: list[GroupBox] = field(default_factory=list)


@dataclass(frozen=True)
class Timeline:
    index: int
    function: RelaxFunction
    plan: object
    width: int
    lanes: list[Lane]
    live_path: str
    live_ticks: list[tuple[float, str]]
    bound_y: float
    x_ticks: list[tuple[float, str]]
    #: (tensor, writers) largest first.
    tensors: list[tuple[object, list[Origin]]]


def _color(key: str) -> str:
    hue = int(hashlib.sha1(key.encode()).hexdigest()[:4], 16) % 360
    return f"hsl({hue}, 60%, 62%)"


def _ticks(maximum: int, height: float, count: int = 4) -> list[tuple[float, str]]:
    if maximum <= 0:
        return [(height, "0")]
    return [(height - height * i / count, human(maximum * i // count)) for i in range(count + 1)]


def writers_text(writers: list[Origin], fallback: str) -> str:
    if not writers:
        return fallback
    text = describe(writers[0])
    if len(writers) > 1:
        later = ", ".join(describe(w) for w in writers[1:3])
        more = f" and {len(writers) - 3} more" if len(writers) > 3 else ""
        text += f"; then in place: {later}{more}"
    return text


def _tooltip(t, writers: list[Origin], where: str, shared: list[str] = ()) -> str:
    made = writers_text(writers, f"written by {t.op or 'an unknown call'}")
    return "\n".join(
        [
            f"{t.binding}: {made}",
            f"{shape(list(t.shape))} {t.dtype}, {int(t.bytes)} B, written by kernel {t.op or '?'}",
            f"live over program points {t.first}..{t.last}",
            where,
            *shared,
        ]
    )


def _shared(plan, t) -> list[str]:
    """Tooltip lines of a tensor placed with others by copy-free concatenations: the
    concatenations it takes part in, and the bytes it shares."""
    if int(t.group) < 0:
        return []
    lines = [f"shares bytes with the tensors of group {t.group} (at +{t.group_offset} B in it):"]
    for c, part in concats_of(plan, str(t.binding)):
        if not c.copy_free:
            continue
        if part == "output":
            lines.append(f"  made by the copy-free concatenation {concat_call(c)}: no copy")
        else:
            lines.append(f"  written at its slice of {c.output} = {c.callee}(...), copy-free")
    return lines


def _lane(
    timeline_index: int, f: RelaxFunction, plan, scale_x: float, top: int, stock: bool
) -> Lane:
    """Rectangles of one plan. Storages are stacked bottom up (offset within each); tensors the
    plan gives storage of their own are stacked above them."""
    scale_y = LANE_HEIGHT / top
    storages = plan.stock_storages if stock else plan.storages
    bases, base = [], 0
    for s in storages:
        bases.append(base)
        base += max(int(s.bytes), 0)
    rects, own = [], base
    order = sorted(range(len(plan.tensors)), key=lambda i: int(plan.tensors[i].first))
    for i in order:
        t = plan.tensors[i]
        nbytes = int(t.bytes)
        if nbytes <= 0:
            continue
        index = int(t.stock_storage if stock else t.storage)
        if index >= 0:
            offset = 0 if stock else int(t.offset)
            y0 = bases[index] + offset
            where = f"storage {index} at offset {offset}"
        else:
            y0 = own
            own += nbytes
            where = "storage of its own" + ("" if stock else f": {t.reason}")
        writers = f.writers[i] if i < len(f.writers) else []
        group = int(t.group) if not stock and index >= 0 else -1
        rects.append(
            Rect(
                x=MARGIN_LEFT + int(t.first) * scale_x,
                y=MARGIN_TOP + LANE_HEIGHT - (y0 + nbytes) * scale_y,
                width=max((int(t.last) - int(t.first) + 1) * scale_x, 1.0),
                height=max(nbytes * scale_y, 0.5),
                color=_color(str(t.binding)),
                title=_tooltip(t, writers, where, _shared(plan, t) if group >= 0 else []),
                binding=str(t.binding),
                offset=y0,
                bytes=nbytes,
                storage=index,
                group=group,
            )
        )
    boundaries = [
        (MARGIN_TOP + LANE_HEIGHT - b * scale_y, f"storage {i}") for i, b in enumerate(bases)
    ]
    ticks = [(MARGIN_TOP + y, label) for y, label in _ticks(top, LANE_HEIGHT)]
    plan_path = "plan_at" if f.plan_at is not None else "plan"
    if stock:
        name, total, field = (
            "TVM's StaticPlanBlockMemory, same IR",
            int(plan.stock_bytes),
            "stock_bytes",
        )
    else:
        name, total, field = "tvm-memplan's planner", int(plan.planned_bytes), "planned_bytes"
    path = f"relax.{timeline_index}.{plan_path}.{field}"
    shown = plan_bytes(f, "stock" if stock else "planned")
    label = f"{name}: {human(shown) if isinstance(shown, int) else shown}"
    return Lane(name, total, path, label, rects, boundaries, ticks, _group_boxes(plan, rects))


def _group_boxes(plan, rects: list[Rect]) -> list[GroupBox]:
    """One outline per group of tensors placed together, around its tensors' rectangles."""
    members: dict[int, list[Rect]] = {}
    for r in rects:
        if r.group >= 0:
            members.setdefault(r.group, []).append(r)
    boxes = []
    for group, found in sorted(members.items()):
        names = {r.binding for r in found}
        calls = [concat_call(c) for c in plan.concats if c.copy_free and str(c.output) in names]
        x0, y0 = min(r.x for r in found), min(r.y for r in found)
        x1 = max(r.x + r.width for r in found)
        y1 = max(r.y + r.height for r in found)
        title = "\n".join(
            [
                f"group {group}: {len(found)} tensors placed together by copy-free "
                "concatenations (they share bytes)",
                *calls,
            ]
        )
        boxes.append(GroupBox(x0, y0, x1 - x0, y1 - y0, group, title))
    return boxes


def _drawn(plan, stock: bool) -> int:
    """How high a lane's drawing reaches: its storages, then the tensors it allocates alone."""
    storages = plan.stock_storages if stock else plan.storages
    alone = (t for t in plan.tensors if int(t.stock_storage if stock else t.storage) < 0)
    return sum(max(int(s.bytes), 0) for s in storages) + sum(max(int(t.bytes), 0) for t in alone)


def _live_bytes(plan) -> list[int]:
    return [int(b) for b in plan.live_bytes()]


def _timeline(index: int, f: RelaxFunction) -> Timeline | None:
    plan = f.plan_at if f.plan_at is not None else f.plan
    if plan is None:
        return None
    points = max(int(plan.num_points), 1)
    scale_x = PLOT_WIDTH / points
    # One scale for both: the plans' bytes, or where a size has no value (not drawn), what is.
    top = max(
        int(plan.planned_bytes), int(plan.stock_bytes), _drawn(plan, False), _drawn(plan, True), 1
    )
    lanes = [
        _lane(index, f, plan, scale_x, top, stock=False),
        _lane(index, f, plan, scale_x, top, stock=True),
    ]
    live = _live_bytes(plan)
    bound = int(plan.peak_live_bytes)
    live_top = max(max(live, default=0), bound, 1)
    live_scale = LIVE_HEIGHT / live_top
    path = []
    for p, nbytes in enumerate(live):
        x0, x1 = MARGIN_LEFT + p * scale_x, MARGIN_LEFT + (p + 1) * scale_x
        y = MARGIN_TOP + LIVE_HEIGHT - nbytes * live_scale
        path.append(f"{'M' if p == 0 else 'L'}{x0:.2f},{y:.2f} L{x1:.2f},{y:.2f}")
    step = max(1, points // 10)
    x_ticks = [(MARGIN_LEFT + p * scale_x, str(p)) for p in range(0, points + 1, step)]
    tensors = sorted(
        ((t, f.writers[i] if i < len(f.writers) else []) for i, t in enumerate(plan.tensors)),
        key=lambda tw: (-int(tw[0].bytes), int(tw[0].first)),
    )
    return Timeline(
        index=index,
        function=f,
        plan=plan,
        width=MARGIN_LEFT + PLOT_WIDTH + MARGIN_RIGHT,
        lanes=lanes,
        live_path=" ".join(path),
        live_ticks=[(MARGIN_TOP + y, label) for y, label in _ticks(live_top, LIVE_HEIGHT)],
        bound_y=MARGIN_TOP + LIVE_HEIGHT - bound * live_scale,
        x_ticks=x_ticks,
        tensors=tensors,
    )


@dataclass(frozen=True)
class Curve:
    """The solved variable's curve: bytes of each build against the variable's value, the
    budget and each build's answer."""

    width: int
    height: int
    #: Per build, the SVG path of its figure.
    paths: dict[str, str]
    #: (x, y, value, build, bytes) of each point, for the tooltips.
    points: list[tuple[float, float, int, str, int]]
    budget_y: float
    #: Per build, the x of its answer (None: nothing fits).
    answers: dict[str, float | None]
    x_ticks: list[tuple[float, str]]
    y_ticks: list[tuple[float, str]]


CURVE_HEIGHT = 260


def _curve(solution) -> Curve | None:
    if solution is None or not solution.curve:
        return None
    xs = [p.value for p in solution.curve]
    top = max(solution.limit, *(max(p.stock, p.memplan) for p in solution.curve), 1)
    x_max = max(xs[-1], 1)

    def x(value: float) -> float:
        return MARGIN_LEFT + PLOT_WIDTH * value / x_max

    def y(nbytes: float) -> float:
        return MARGIN_TOP + CURVE_HEIGHT - CURVE_HEIGHT * nbytes / top

    paths, points = {}, []
    for build in ("stock", "memplan"):
        steps = []
        for i, p in enumerate(solution.curve):
            value = getattr(p, build)
            steps.append(f"{'M' if i == 0 else 'L'}{x(p.value):.2f},{y(value):.2f}")
            points.append((x(p.value), y(value), p.value, build, value))
        paths[build] = " ".join(steps)
    answers = {b: None if n is None else x(n) for b, n in solution.largest.items()}
    step = max(1, x_max // 8)
    return Curve(
        width=MARGIN_LEFT + PLOT_WIDTH + MARGIN_RIGHT,
        height=MARGIN_TOP + CURVE_HEIGHT + MARGIN_BOTTOM,
        paths=paths,
        points=points,
        budget_y=y(solution.limit),
        answers=answers,
        x_ticks=[(x(v), str(v)) for v in range(0, x_max + 1, step)],
        y_ticks=[(MARGIN_TOP + t, label) for t, label in _ticks(top, CURVE_HEIGHT)],
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
    env.filters["bytes"] = bytes_text
    env.filters["shape"] = lambda dims: shape(list(dims))
    env.filters["describe"] = describe
    env.globals["ratio"] = ratio
    env.globals["writers_text"] = writers_text
    env.globals["int"] = int
    env.globals["plan_bytes"] = plan_bytes
    env.globals["tensor_bytes"] = tensor_bytes
    env.globals["lift"] = lift
    env.globals["optimality"] = optimality_text
    return env


def render_html(report: Report) -> str:
    """The whole page."""
    timelines = [t for i, f in enumerate(report.relax) if (t := _timeline(i, f)) is not None]
    kernel_index = {k.name: i for i, k in enumerate(report.kernels)}
    return (
        _environment()
        .get_template("report.html.j2")
        .render(
            report=report,
            summary=report.summary,
            summary_figures=SUMMARY_FIGURES,
            at_values=lambda nbytes, size: at_values(report, nbytes, size),
            timelines=timelines,
            groups=kernel_groups(report),
            kernel_index=kernel_index,
            kernel_bytes=kernel_bytes,
            tensors=largest_tensors(report),
            concats=concat_rows(report),
            compaction=compaction_totals(report),
            placement=placement_totals(report),
            failures={
                section: section_failures(report, section)
                for section in ("relax", "inplace", "compaction", "placement")
            },
            top=TOP,
            curve=_curve(report.solution),
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
