"""A self-contained HTML report: tables and inline SVG plots.

The page needs no server, no JavaScript, no network and no plotting library:
every plot is SVG written by small functions (``tokensmith._report``, re-exported
here), and the styles are inline, so the file opens the same in any browser,
offline, and can be mailed or attached as it is.

>>> from tokensmith.report import bar_chart
>>> svg = bar_chart(["en", "zh"], [("a", [1.0, 2.0]), ("b", [1.5, None])], y_label="x")
>>> svg.startswith("<svg")
True
"""

from __future__ import annotations

from ._report import PALETTE as PALETTE
from ._report import (
    bar_chart,
    heatmap,
    line_chart,
    render_comparison,
    render_diagnostics,
    stacked_bars,
    write_atomic,
)
from .compare import Comparison
from .evaluate import Evaluation

__all__ = [
    "render_comparison",
    "render_evaluation",
    "render_diagnostics",
    "write_atomic",
    "bar_chart",
    "line_chart",
    "heatmap",
    "stacked_bars",
]


def render_evaluation(ev: Evaluation, *, title: str | None = None) -> str:
    """One :class:`~tokensmith.evaluate.Evaluation` as an HTML page."""
    comp = Comparison(
        names=[ev.name], models={ev.name: ev.model}, vocab_sizes={ev.name: ev.vocab_size},
        corpora=["text"] if ev.compression is not None else [],
        results={ev.name: {"text": ev}} if ev.compression is not None else {ev.name: {}},
        terms={ev.name: ev.terms} if ev.terms is not None else {},
        parity={ev.name: ev.parity} if ev.parity is not None else {},
        pivot=ev.parity.pivot if ev.parity is not None else None,
        warnings=list(ev.warnings),
    )
    return render_comparison(comp, title=title or f"tokensmith evaluation: {ev.name}")
