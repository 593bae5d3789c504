"""The drawing behind :mod:`tokensmith.report`: inline SVG plots, tables, and the
pages of a comparison and of diagnostics.

The results come in as they are (:class:`~tokensmith.compare.Comparison`,
:class:`~tokensmith.diagnostics.Diagnostics`), read by their fields only: this module
imports neither, so that their ``to_html`` methods can use it.
:func:`tokensmith.report.render_evaluation`, which builds a comparison of one
evaluation, is in :mod:`tokensmith.report`.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .evaluate import histogram

if TYPE_CHECKING:
    from .compare import Comparison
    from .diagnostics import Diagnostics
    from .evaluate import Evaluation

__all__ = [
    "render_comparison",
    "render_diagnostics",
    "merge_phrase",
    "write_atomic",
    "bar_chart",
    "line_chart",
    "heatmap",
    "stacked_bars",
]

PALETTE = (
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
)
_FONT = "font-family:system-ui,-apple-system,'Segoe UI',sans-serif"

_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:2rem auto;
max-width:1100px;padding:0 1rem;color:#222;line-height:1.45}
h1{font-size:1.6rem}h2{font-size:1.25rem;margin-top:2.2rem;border-bottom:1px solid #ddd}
h3{font-size:1.05rem;margin-top:1.5rem}
table{border-collapse:collapse;margin:.6rem 0;font-size:.9rem}
th,td{padding:.25rem .6rem;border-bottom:1px solid #eee;text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left}th{background:#f6f6f6}
td.pieces{font-family:ui-monospace,Menlo,Consolas,monospace;text-align:left;
white-space:normal;overflow-wrap:anywhere;min-width:8rem}
.scroll{overflow-x:auto;max-width:100%}
.warn{background:#fff6e0;border-left:4px solid #f0a000;padding:.5rem 1rem;margin:1rem 0}
.note{color:#555;font-size:.9rem}.legend span{display:inline-block;margin-right:1rem}
.legend i{display:inline-block;width:.9rem;height:.9rem;margin-right:.3rem;
vertical-align:-2px;border-radius:2px}
.plots{display:flex;flex-wrap:wrap;gap:1rem}svg{max-width:100%;height:auto}
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def write_atomic(path: Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` through a temporary file and a rename
    (:func:`tokensmith._io.atomic_write`: a new file's mode follows the umask, a
    replaced file keeps its mode)."""
    from ._io import atomic_write

    return atomic_write(path, text)


# ------------------------------------------------------------------ plots


def _nice_ticks(top: float, n: int = 5) -> list[float]:
    """Round tick values from 0 to at least ``top``."""
    if not math.isfinite(top) or top <= 0:
        return [0.0, 1.0]
    raw = top / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    count = math.ceil(top / step - 1e-9)
    return [round(i * step, 10) for i in range(count + 1)]


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 10 or float(v).is_integer():
        return f"{v:g}"
    return f"{v:.3g}"


def _svg_open(width: int, height: int, label: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-label="{_e(label)}" '
            f'style="{_FONT};font-size:11px">')


def _axes(x0: int, y0: int, w: int, h: int, ticks: Sequence[float], top: float,
          y_label: str, pct: bool = False) -> list[str]:
    out = []
    for t in ticks:
        y = y0 + h - (t / top) * h if top else y0 + h
        out.append(f'<line x1="{x0}" x2="{x0 + w}" y1="{y:.1f}" y2="{y:.1f}" '
                   f'stroke="#e5e5e5"/>')
        shown = f"{_fmt(t * 100)}%" if pct else _fmt(t)
        out.append(f'<text x="{x0 - 6}" y="{y + 4:.1f}" text-anchor="end" '
                   f'fill="#555">{_e(shown)}</text>')
    out.append(f'<line x1="{x0}" x2="{x0}" y1="{y0}" y2="{y0 + h}" stroke="#999"/>')
    out.append(f'<line x1="{x0}" x2="{x0 + w}" y1="{y0 + h}" y2="{y0 + h}" stroke="#999"/>')
    out.append(f'<text transform="translate(14,{y0 + h / 2:.0f}) rotate(-90)" '
               f'text-anchor="middle" fill="#333">{_e(y_label)}</text>')
    return out


def bar_chart(
    groups: Sequence[str],
    series: Sequence[tuple[str, Sequence[float | None]]],
    *,
    y_label: str = "",
    title: str = "",
    reference: float | None = None,
    pct: bool = False,
    width: int = 720,
    height: int = 280,
    notes: Sequence[Sequence[str | None]] | None = None,
) -> str:
    """Grouped vertical bars: one group per label, one bar per series (None: no bar).

    ``notes[s][g]``, when given and not None, is a short text drawn above bar
    ``g`` of series ``s`` (e.g. ``"unk 40%"``).
    """
    x0, y0, right, bottom = 62, 28, 12, 46
    w, h = width - x0 - right, height - y0 - bottom
    values = [v for _, vs in series for v in vs if v is not None and math.isfinite(v)]
    top_value = max(values + ([reference] if reference else []) + [0.0])
    padded = top_value * (1.12 if notes else 1.05) if top_value else 1.0
    ticks = _nice_ticks(min(padded, 1.0) if pct and top_value <= 1 else padded)
    top = ticks[-1]
    out = [_svg_open(width, height, title or y_label)]
    if title:
        out.append(f'<text x="{x0}" y="16" font-weight="600" fill="#222">{_e(title)}</text>')
    out += _axes(x0, y0, w, h, ticks, top, y_label, pct)
    n_groups, n_series = max(1, len(groups)), max(1, len(series))
    gw = w / n_groups
    bw = min(36.0, gw * 0.8 / n_series)
    for g, label in enumerate(groups):
        gx = x0 + g * gw + (gw - bw * n_series) / 2
        for s, (name, vs) in enumerate(series):
            v = vs[g] if g < len(vs) else None
            if v is None or not math.isfinite(v):
                continue
            bh = (v / top) * h if top else 0
            x, y = gx + s * bw, y0 + h - bh
            shown = f"{100 * v:.1f}%" if pct else _fmt(v)
            out.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{bw - 1:.1f}" '
                       f'height="{bh:.1f}" fill="{PALETTE[s % len(PALETTE)]}">'
                       f'<title>{_e(name)} · {_e(label)}: {_e(shown)}</title></rect>')
            note = notes[s][g] if notes and s < len(notes) and g < len(notes[s]) else None
            if note:
                out.append(f'<text x="{x + bw / 2:.1f}" y="{y - 3:.1f}" text-anchor="middle" '
                           f'font-size="9" fill="#b00">{_e(note)}</text>')
        out.append(f'<text x="{x0 + g * gw + gw / 2:.1f}" y="{y0 + h + 16}" '
                   f'text-anchor="middle" fill="#333">{_e(label)}</text>')
    if reference is not None and top:
        y = y0 + h - (reference / top) * h
        out.append(f'<line x1="{x0}" x2="{x0 + w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#333" '
                   f'stroke-dasharray="4 3"/>')
    out.append("</svg>")
    return "".join(out)


def line_chart(
    series: Sequence[tuple[str, Sequence[tuple[float, float]]]],
    *,
    x_label: str = "",
    y_label: str = "",
    title: str = "",
    pct_y: bool = False,
    step: bool = False,
    x_range: tuple[float, float] | None = None,
    width: int = 720,
    height: int = 280,
) -> str:
    """Lines (or steps) through ``(x, y)`` points, one per series, on shared axes."""
    x0, y0, right, bottom = 62, 28, 16, 46
    w, h = width - x0 - right, height - y0 - bottom
    xs = [x for _, pts in series for x, _ in pts]
    ys = [y for _, pts in series for _, y in pts if math.isfinite(y)]
    x_lo, x_hi = x_range or ((min(xs), max(xs)) if xs else (0.0, 1.0))
    if x_hi == x_lo:
        x_hi = x_lo + 1
    highest = max(ys + [0.0])
    ticks = _nice_ticks(min(highest * 1.05, 1.0) if pct_y and highest <= 1
                        else highest * 1.05 or 1.0)
    top = ticks[-1]
    out = [_svg_open(width, height, title or y_label)]
    if title:
        out.append(f'<text x="{x0}" y="16" font-weight="600" fill="#222">{_e(title)}</text>')
    out += _axes(x0, y0, w, h, ticks, top, y_label, pct_y)

    def px(x: float) -> float:
        return x0 + (x - x_lo) / (x_hi - x_lo) * w

    def py(y: float) -> float:
        return y0 + h - (y / top) * h if top else y0 + h

    for t in _nice_ticks(x_hi - x_lo, 6):
        x = x_lo + t
        if x > x_hi + 1e-9:
            break
        out.append(f'<text x="{px(x):.1f}" y="{y0 + h + 16}" text-anchor="middle" '
                   f'fill="#555">{_e(_fmt(x))}</text>')
    out.append(f'<text x="{x0 + w / 2:.0f}" y="{height - 8}" text-anchor="middle" '
               f'fill="#333">{_e(x_label)}</text>')
    for s, (name, pts) in enumerate(series):
        pts = [(x, y) for x, y in pts if math.isfinite(y)]
        if not pts:
            continue
        coords: list[str] = []
        for k, (x, y) in enumerate(pts):
            if step and k:
                coords.append(f"{px(x):.1f},{py(pts[k - 1][1]):.1f}")
            coords.append(f"{px(x):.1f},{py(y):.1f}")
        color = PALETTE[s % len(PALETTE)]
        out.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" '
                   f'points="{" ".join(coords)}"><title>{_e(name)}</title></polyline>')
    out.append("</svg>")
    return "".join(out)


def heatmap(names: Sequence[str], matrix: Sequence[Sequence[float]], *, title: str = "") -> str:
    """A square grid of shares (0–1), darker for larger, with the value in each cell."""
    n = len(names)
    cell = 64 if n <= 6 else 44
    longest = max((len(x) for x in names), default=1)
    left, top = 20 + 7 * min(longest, 24), 20 + 5 * min(longest, 24) + (16 if title else 0)
    width, height = left + n * cell + 10 + 4 * min(longest, 24), top + n * cell + 10
    out = [_svg_open(width, height, title or "heatmap")]
    if title:
        out.append(f'<text x="4" y="16" font-weight="600" fill="#222">{_e(title)}</text>')
    for j, name in enumerate(names):  # column names slanted, so long names do not collide
        x = left + j * cell + cell / 2
        out.append(f'<text transform="translate({x:.0f},{top - 6}) rotate(-40)" '
                   f'fill="#333">{_e(name[:24])}</text>')
    for i, name in enumerate(names):
        out.append(f'<text x="{left - 6}" y="{top + i * cell + cell / 2 + 4:.0f}" '
                   f'text-anchor="end" fill="#333">{_e(name)}</text>')
        for j in range(n):
            v = matrix[i][j]
            shade = max(0.0, min(1.0, v))
            r, g, b = (int(255 - (255 - c) * shade) for c in (40, 90, 160))
            ink = "#fff" if shade > 0.55 else "#222"
            x, y = left + j * cell, top + i * cell
            out.append(f'<rect x="{x}" y="{y}" width="{cell - 2}" height="{cell - 2}" '
                       f'fill="rgb({r},{g},{b})"><title>{_e(names[i])} / {_e(names[j])}: '
                       f'{100 * v:.1f}%</title></rect>')
            out.append(f'<text x="{x + cell / 2 - 1:.0f}" y="{y + cell / 2 + 3:.0f}" '
                       f'text-anchor="middle" fill="{ink}">{100 * v:.0f}%</text>')
    out.append("</svg>")
    return "".join(out)


def stacked_bars(
    rows: Sequence[tuple[str, dict[str, float]]],
    categories: Sequence[str],
    *,
    title: str = "",
    width: int = 720,
) -> str:
    """Horizontal 100% bars: each row's shares of ``categories`` (the rest is "other")."""
    left, top, bar = 140, 28 if title else 8, 22
    w = width - left - 12
    cats = list(categories) + ["other"]
    legend_rows, x = 1, float(left)
    for c in cats:  # how many lines the legend needs
        if x + 24 + 7 * len(c) > width and x > left:
            legend_rows, x = legend_rows + 1, float(left)
        x += 24 + 7 * len(c)
    height = top + len(rows) * (bar + 8) + 16 + 18 * legend_rows
    out = [_svg_open(width, height, title or "shares")]
    if title:
        out.append(f'<text x="4" y="16" font-weight="600" fill="#222">{_e(title)}</text>')
    for i, (name, shares) in enumerate(rows):
        y = top + i * (bar + 8)
        out.append(f'<text x="{left - 6}" y="{y + bar / 2 + 4:.0f}" text-anchor="end" '
                   f'fill="#333">{_e(name)}</text>')
        x = float(left)
        rest = max(0.0, 1.0 - sum(shares.get(c, 0.0) for c in categories))
        for k, c in enumerate(cats):
            v = rest if c == "other" else shares.get(c, 0.0)
            if v <= 0:
                continue
            bw = v * w
            color = "#d0d0d0" if c == "other" else PALETTE[k % len(PALETTE)]
            out.append(f'<rect x="{x:.1f}" y="{y}" width="{bw:.1f}" height="{bar}" '
                       f'fill="{color}"><title>{_e(name)} · {_e(c)}: {100 * v:.1f}%'
                       f'</title></rect>')
            if bw > 34:
                out.append(f'<text x="{x + bw / 2:.1f}" y="{y + bar / 2 + 4:.0f}" '
                           f'text-anchor="middle" fill="#fff">{100 * v:.0f}%</text>')
            x += bw
    y = top + len(rows) * (bar + 8) + 14
    x = float(left)
    for k, c in enumerate(cats):
        color = "#d0d0d0" if c == "other" else PALETTE[k % len(PALETTE)]
        if x + 24 + 7 * len(c) > width and x > left:
            x, y = float(left), y + 18
        out.append(f'<rect x="{x:.0f}" y="{y - 9}" width="10" height="10" fill="{color}"/>'
                   f'<text x="{x + 14:.0f}" y="{y}" fill="#333">{_e(c)}</text>')
        x += 24 + 7 * len(c)
    out.append("</svg>")
    return "".join(out)


def _legend(names: Sequence[str]) -> str:
    items = "".join(f'<span><i style="background:{PALETTE[k % len(PALETTE)]}"></i>{_e(n)}'
                    f"</span>" for k, n in enumerate(names))
    return f'<p class="legend">{items}</p>'


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], pieces: bool = False) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = []
    for r in rows:
        cells = []
        for k, c in enumerate(r):
            cls = ' class="pieces"' if pieces and k > 0 and "[" in c else ""
            cells.append(f"<td{cls}>{_e(c)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    # a wide table (long pieces, many tokenizers) scrolls inside its box, not the page
    return (f'<div class="scroll"><table><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>")


# ---------------------------------------------------------------- sections


def merge_phrase(merges: int, merged_tokens: int) -> str:
    """``"100,000 merges"``, or ``"233,378 merges making 99,744 tokens"`` when some
    tokens are made by more than one rule."""
    if merges == merged_tokens:
        return f"{merges:,} merges"
    return f"{merges:,} merges making {merged_tokens:,} tokens"


def _diagnostics_html(diags: Sequence[Diagnostics]) -> str:
    if not diags:
        return ""
    names = [d.name for d in diags]
    parts = ["<h2>What each tokenizer learned</h2>",
             '<p class="note">Token length is in characters of the token\'s text (one '
             "leading space, the word-start marker, not counted). Scripts come from the "
             "Unicode names of the letters; see <code>tokensmith.diagnostics</code>.</p>",
             _legend(names)]
    growth = []
    for d in diags:
        if not d.growth:
            continue
        total = d.growth[-1].end or 1
        growth.append((d.name, [((b.start + b.end) / 2 / total * 100, b.mean_chars)
                                for b in d.growth]))
    if growth:
        basis = sorted({d.growth_basis for d in diags if d.growth})
        heading = ("Merges over time: length of the tokens made"
                   if "merge rank" in basis else
                   "Token length in token id order (no merges)")
        parts.append(line_chart(
            growth, x_label=f"position in the {' / '.join(basis)} order (% of all)",
            y_label="mean token length (chars)", title=heading, x_range=(0.0, 100.0)))
    for d in diags:
        if d.note:
            parts.append(f'<p class="note"><b>{_e(d.name)}</b>: {_e(d.note)}.</p>')
    lengths = []
    for d in diags:
        total = sum(d.length_histogram.values()) or 1
        pts = [(float(n), d.length_histogram.get(n, 0) / total) for n in range(1, 21)]
        lengths.append((d.name, pts))
    parts.append(line_chart(lengths, x_label="token length (characters)", x_range=(0.0, 20.0),
                            y_label="share of tokens", pct_y=True,
                            title="Token length distribution (vocabulary)"))
    totals: dict[str, float] = {}
    for d in diags:
        for s, share in d.script_share.items():
            totals[s] = max(totals.get(s, 0.0), share)
    scripts = [s for s, _ in sorted(totals.items(), key=lambda x: -x[1])[:8]]
    rows: list[tuple[str, dict[str, float]]] = [(d.name, d.script_share) for d in diags]
    corpus = next((d.corpus_scripts for d in diags if d.corpus_scripts), None)
    if corpus:
        rows.append(("letters of the text", corpus))
    parts.append(stacked_bars(rows, scripts, title="Vocabulary by script"))
    for d in diags:
        longest = ", ".join(f"{t!r}" for t, _ in d.longest[:8])
        parts.append(f"<p class='note'><b>{_e(d.name)}</b>: {_e(d.model)}, "
                     f"{d.vocab_size:,} tokens, {merge_phrase(d.merges, d.merged_tokens)}, "
                     f"{d.partial_tokens:,} partial-character tokens, "
                     f"{d.byte_fallback_tokens:,} byte-fallback pieces; longest: "
                     f"{_e(longest)}</p>")
    return "\n".join(parts)


def render_comparison(comp: Comparison, *, title: str = "tokensmith comparison") -> str:
    """The whole report for a :class:`~tokensmith.compare.Comparison` as one HTML page."""
    names = comp.names
    parts = [f"<h1>{_e(title)}</h1>"]
    rows = [[n, comp.models[n], f"{comp.vocab_sizes[n]:,}"] for n in names]
    parts.append(_table(["tokenizer", "model", "ordinary tokens"], rows))
    if comp.warnings:
        items = "".join(f"<li>{_e(w)}</li>" for w in comp.warnings)
        parts.append(f'<div class="warn"><b>Warnings</b><ul>{items}</ul></div>')
    sections = comp.sections()
    parts.append("<h2>Tables</h2>")
    for head, headers, rows_ in sections:
        parts.append(f"<h3>{_e(head)}</h3>")
        parts.append(_table(headers, rows_, pieces=head.startswith("Terms")))
    parts.append("<h2>Plots</h2>")
    parts.append(_legend(names))
    if comp.corpora:
        def per_text(metric: str) -> list[tuple[str, list[float | None]]]:
            out: list[tuple[str, list[float | None]]] = []
            for n in names:
                vals: list[float | None] = []
                for c in comp.corpora:
                    e = comp.results.get(n, {}).get(c)
                    vals.append(_metric(e, metric))
                out.append((n, vals))
            return out

        # a tokenizer that cannot represent a text looks cheap: one unknown token for a run
        unk: list[list[str | None]] = []
        for n in names:
            row: list[str | None] = []
            for c in comp.corpora:
                cov = getattr(comp.results.get(n, {}).get(c), "coverage", None)
                rate = cov.unknown_rate if cov is not None else 0.0
                row.append(f"unk {100 * rate:.0f}%" if rate == rate and rate >= 0.01 else None)
            unk.append(row)
        if any(x for row in unk for x in row):
            parts.append('<p class="note"><b style="color:#b00">unk N%</b> above a bar: N% of '
                         "that tokenizer's tokens on that text are unknown: it cannot represent "
                         "the text, and its numbers understate the cost.</p>")
        parts.append('<div class="plots">')
        parts.append(bar_chart(comp.corpora, per_text("bytes_per_token"),
                               y_label="bytes per token", title="Bytes per token (higher is "
                               "cheaper)", notes=unk))
        parts.append(bar_chart(comp.corpora, per_text("fertility"), y_label="tokens per word",
                               title="Fertility: tokens per word", reference=1.0, notes=unk))
        parts.append(bar_chart(comp.corpora, per_text("proportion_continued"),
                               y_label="words split", pct=True,
                               title="Words cut into two or more tokens"))
        for c in comp.corpora:
            evs = [(n, comp.results.get(n, {}).get(c)) for n in names]
            present = [(n, e.lengths) for n, e in evs if e is not None and e.lengths is not None]
            if not present:
                continue
            upper = max(max(1, s.p99) for _, s in present)
            series = []
            for n, s in present:
                bins = histogram(s.lengths, 30, upper)
                total = len(s.lengths) or 1
                series.append((n, [(float(lo), cnt / total) for lo, _, cnt in bins]))
            parts.append(line_chart(series, x_label="tokens per document (last bin: p99 and "
                                    "more)", y_label="share of documents", pct_y=True,
                                    step=True, title=f"Document lengths: {c}"))
        parts.append("</div>")
    if comp.parity:
        pnames = [n for n in names if n in comp.parity]
        langs = [lp.language for lp in comp.parity[pnames[0]].languages]
        premiums = [(n, [next((lp.premium for lp in comp.parity[n].languages
                               if lp.language == lang), None) for lang in langs])
                    for n in pnames]
        parts.append(bar_chart(langs, premiums, y_label=f"tokens relative to {comp.pivot}",
                               title="Tokens per language on parallel text (premium; "
                               "1 = pivot)", reference=1.0, width=900))
        tokens = [(n, [float(lp.tokens) for lp in comp.parity[n].languages]) for n in pnames]
        parts.append(bar_chart(langs, tokens, y_label="tokens",
                               title="Tokens per language (same sentences)", width=900))
    if len(names) > 1 and comp.overlap:
        parts.append(heatmap(names, comp.overlap,
                             title="Vocabulary overlap between tokenizers (Jaccard)"))
    parts.append(_diagnostics_html([comp.diagnostics[n] for n in names
                                    if n in comp.diagnostics]))
    parts.append('<p class="note">Made by tokensmith. Definitions of every metric: '
                 "<code>help(tokensmith.evaluate)</code>.</p>")
    return _page(title, "\n".join(parts))


def _metric(e: Evaluation | None, metric: str) -> float | None:
    if e is None:
        return None
    if metric == "bytes_per_token" and e.compression is not None:
        return e.compression.bytes_per_token
    if metric in ("fertility", "proportion_continued") and e.fertility is not None:
        return float(getattr(e.fertility, metric))
    return None


def _page(title: str, body: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width,initial-scale=1">'
            f"<title>{_e(title)}</title><style>{_CSS}</style></head>\n<body>\n{body}\n"
            f"</body></html>\n")


def render_diagnostics(diags: Diagnostics | Sequence[Diagnostics], *,
                       title: str = "tokensmith diagnostics") -> str:
    """Training diagnostics of one or more tokenizers as an HTML page."""
    # (one Diagnostics, a dataclass, or a sequence of them)
    items = [diags] if is_dataclass(diags) else list(diags)
    warn = [f"{d.name}: {w}" for d in items for w in d.warnings]
    body = [f"<h1>{_e(title)}</h1>"]
    if warn:
        lis = "".join(f"<li>{_e(w)}</li>" for w in warn)
        body.append(f'<div class="warn"><b>Warnings</b><ul>{lis}</ul></div>')
    body.append(_diagnostics_html(items))
    return _page(title, "\n".join(body))
