"""How the renderers write figures, shared so the text and the page say the same."""

from __future__ import annotations

__all__ = ["bytes_text", "human", "ratio", "shape"]


def human(nbytes: int | None) -> str:
    """1536 -> "1.5 KiB"; None -> "-"."""
    if nbytes is None:
        return "-"
    if abs(nbytes) < 1024:
        return f"{nbytes} B"
    value = nbytes / 1024
    for unit in ("KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"  # pragma: no cover


def bytes_text(nbytes: int | None) -> str:
    """Exact bytes, and in KiB/MiB past 1 KiB: ``"5120 (5.0 KiB)"``; None -> "-"."""
    if nbytes is None:
        return "-"
    return str(nbytes) if abs(nbytes) < 1024 else f"{nbytes} ({human(nbytes)})"


def ratio(ours: int | None, stock: int | None) -> str:
    if ours is None or stock is None:
        return "-"
    if stock == 0:
        return "-"
    return f"{ours / stock:.3f}"


def shape(dims) -> str:
    """[1, 3, 224, 224] -> "1x3x224x224"; a dimension not known (None) -> "?"; [] -> "scalar"."""
    return "x".join("?" if d is None else str(d) for d in dims) or "scalar"
