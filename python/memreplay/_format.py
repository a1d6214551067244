"""Numbers as people read them, and small HTML tables for Jupyter (the results' _repr_html_)."""

from __future__ import annotations

import html
from typing import Any, Iterable, Sequence

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def format_bytes(count: Any) -> str:
    """1264582656 -> '1.18 GiB', as the CLI prints byte counts; '-' for None."""
    if count is None:
        return "-"
    value, unit = float(count), 0
    while value >= 1024 and unit < len(_UNITS) - 1:
        value /= 1024
        unit += 1
    return f"{value:.0f} {_UNITS[unit]}" if unit == 0 else f"{value:.2f} {_UNITS[unit]}"


def format_percent(fraction: Any) -> str:
    return "-" if fraction is None else f"{100 * float(fraction):.1f}%"


def html_table(header: Sequence[str], rows: Iterable[Sequence[Any]], caption: str = "") -> str:
    """A plain HTML table; every cell is escaped."""
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
