"""Plots for reports as hand-made inline SVG (no plotting library needed).

Every function returns an ``<svg>`` element as a string, ready to be placed inside an HTML
page (or saved as a ``.svg`` file with :func:`standalone`). All text that comes from data
(value names, group labels, titles) is escaped here, so a label such as ``<script>`` is
drawn as text and never interpreted. Charts carry a ``<title>`` (accessible name) and a
``<desc>``; each plotted point has a ``<title>`` child, which browsers show as a tooltip —
no JavaScript is involved.

:func:`png_line_chart` draws the same kind of line chart with matplotlib (the optional
``plot`` extra) for contexts that need a raster image.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape
from typing import Any

__all__ = ["line_chart", "skyline_slices", "bar_chart", "scatter_chart", "standalone",
           "png_line_chart",
           "PALETTE"]

#: Colour-blind-safe palette (Okabe & Ito).
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000",
           "#F0E442")

_FONT = "font-family:system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif"


def _e(text: Any) -> str:
    return escape(str(text), quote=True)


def _num(x: float) -> str:
    """Compact coordinate formatting (two decimals, no trailing zeros)."""
    s = f"{x:.2f}".rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


def _ticks(lo: float, hi: float, n: int = 5, integer: bool = False) -> list[float]:
    """About ``n`` round tick values covering [lo, hi]."""
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / max(n, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = mag
    for mult in (1, 2, 2.5, 5, 10):
        step = mult * mag
        if raw <= step:
            break
    if integer:
        step = max(1, round(step))
    start = math.ceil(lo / step - 1e-9) * step
    out = []
    v = start
    while v <= hi + 1e-9 * step:
        out.append(round(v, 10))
        v += step
    return out


def _fmt_tick(v: float) -> str:
    """Format a tick label in positional notation (0.0025, never 2.5e-03)."""
    if abs(v - round(v)) < 1e-9:
        return str(int(round(v)))
    return f"{v:.10f}".rstrip("0").rstrip(".")


class _Frame:
    """Plot area geometry and the data → pixel mapping."""

    def __init__(self, width: int, height: int, x_range: tuple[float, float],
                 y_range: tuple[float, float], *, left: int = 58, right: int = 18,
                 top: int = 36, bottom: int = 48) -> None:
        self.w, self.h = width, height
        self.left, self.right, self.top, self.bottom = left, right, top, bottom
        self.x0, self.x1 = x_range
        self.y0, self.y1 = y_range
        if self.x1 <= self.x0:
            self.x1 = self.x0 + 1
        if self.y1 <= self.y0:
            self.y1 = self.y0 + 1

    def px(self, x: float) -> float:
        span = self.w - self.left - self.right
        return self.left + (x - self.x0) / (self.x1 - self.x0) * span

    def py(self, y: float) -> float:
        span = self.h - self.top - self.bottom
        return self.h - self.bottom - (y - self.y0) / (self.y1 - self.y0) * span

    def axes(self, *, xlabel: str, ylabel: str, xticks: Sequence[float],
             yticks: Sequence[float], xtick_labels: dict | None = None) -> list[str]:
        out = [f'<rect x="{self.left}" y="{self.top}" width="{self.w - self.left - self.right}"'
               f' height="{self.h - self.top - self.bottom}" fill="#ffffff" stroke="#bbbbbb"/>']
        for t in yticks:
            y = _num(self.py(t))
            out.append(f'<line x1="{self.left}" y1="{y}" x2="{self.w - self.right}" y2="{y}" '
                       f'stroke="#e5e5e5"/>')
            out.append(f'<text x="{self.left - 6}" y="{y}" text-anchor="end" '
                       f'dominant-baseline="middle" font-size="11">{_e(_fmt_tick(t))}</text>')
        for t in xticks:
            x = _num(self.px(t))
            label = (xtick_labels or {}).get(t, _fmt_tick(t))
            out.append(f'<line x1="{x}" y1="{self.top}" x2="{x}" y2="{self.h - self.bottom}" '
                       f'stroke="#f0f0f0"/>')
            out.append(f'<text x="{x}" y="{self.h - self.bottom + 15}" text-anchor="middle" '
                       f'font-size="11">{_e(label)}</text>')
        out.append(f'<text x="{_num((self.left + self.w - self.right) / 2)}" '
                   f'y="{self.h - self.bottom + 33}" text-anchor="middle" font-size="12">'
                   f'{_e(xlabel)}</text>')
        cy = _num((self.top + self.h - self.bottom) / 2)
        out.append(f'<text x="14" y="{cy}" text-anchor="middle" font-size="12" '
                   f'transform="rotate(-90 14 {cy})">{_e(ylabel)}</text>')
        return out


def _open(width: int, height: int, title: str, desc: str, css_class: str) -> list[str]:
    return [f'<svg xmlns="http://www.w3.org/2000/svg" class="{_e(css_class)}" '
            f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
            f'style="{_FONT};max-width:100%;height:auto">',
            f"<title>{_e(title)}</title>", f"<desc>{_e(desc)}</desc>",
            f'<text x="{width / 2:g}" y="20" text-anchor="middle" font-size="13" '
            f'font-weight="600">{_e(title)}</text>']


def _legend(items: Sequence[tuple[str, str, str]], x: float, y: float, *, columns: int = 1,
            col_width: float = 0.0) -> list[str]:
    """Legend entries (label, colour, dash pattern) from (x, y), row by row."""
    out = []
    for i, (label, color, dash) in enumerate(items):
        yy = y + 16 * (i // columns)
        xx = x + col_width * (i % columns)
        d = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<line x1="{xx:g}" y1="{yy:g}" x2="{xx + 22:g}" y2="{yy:g}" '
                   f'stroke="{color}" stroke-width="2.5"{d}/>')
        out.append(f'<text x="{xx + 28:g}" y="{yy:g}" dominant-baseline="middle" '
                   f'font-size="11">{_e(label)}</text>')
    return out


def line_chart(series: Sequence[dict], *, title: str, xlabel: str, ylabel: str,
               y_range: tuple[float, float] | None = None,
               hline: tuple[float, str] | None = None, width: int = 640, height: int = 360,
               integer_x: bool = True, desc: str = "", css_class: str = "chart line-chart",
               log_y: bool = False) -> str:
    """Draw a line chart with markers.

    Parameters
    ----------
    series : list of dict
        Each ``{"name": str, "x": [...], "y": [...]}`` with optional ``"dash"`` (bool) and
        ``"color"``. Non-finite y values are skipped (the line is broken there).
    title, xlabel, ylabel : str
        Texts (escaped).
    y_range : (float, float), optional
        Y axis limits (default: from the data, from 0).
    width, height : int
        Size in pixels (the legend below adds to the height).
    integer_x : bool
        Integer x ticks.
    desc, css_class : str
        Accessible description and CSS class of the ``<svg>``.
    hline : (value, label), optional
        A horizontal reference line (e.g. the confidence threshold c).
    log_y : bool
        Logarithmic y axis (positive values only).

    """
    xs = [float(x) for s in series for x in s["x"]]
    ys = [float(y) for s in series for y in s["y"] if _finite(y) and (not log_y or y > 0)]
    if hline is not None and _finite(hline[0]):
        ys.append(float(hline[0]))
    tf = (lambda v: math.log10(v)) if log_y else (lambda v: v)
    if y_range is None:
        lo, hi = (min(ys), max(ys)) if ys else (0.0, 1.0)
        if log_y:
            y_range = (math.floor(tf(lo)), math.ceil(tf(hi)))
        else:
            pad = (hi - lo) * 0.05 or 0.5
            y_range = (min(0.0, lo), hi + pad)
    elif log_y:
        y_range = (tf(y_range[0]), tf(y_range[1]))
    x_range = (min(xs), max(xs)) if xs else (0.0, 1.0)
    if x_range[1] == x_range[0]:
        x_range = (x_range[0] - 1, x_range[1] + 1)
    n_leg = len(series) + (1 if hline is not None and _finite(hline[0]) else 0)
    leg_h = 16 * ((n_leg + 1) // 2) + 6
    height = height + leg_h
    fr = _Frame(width, height, x_range, y_range, bottom=48 + leg_h)
    out = _open(width, height, title, desc or title, css_class)
    yt = ([float(v) for v in range(int(y_range[0]), int(y_range[1]) + 1)] if log_y
          else _ticks(*y_range))
    xt = _ticks(*x_range, n=min(12, max(2, int(x_range[1] - x_range[0]))), integer=integer_x)
    axes = fr.axes(xlabel=xlabel, ylabel=ylabel, xticks=xt, yticks=yt)
    if log_y:   # label decades as 10^n
        axes = _relabel_log(axes, yt)
    out += axes
    legend = []
    if hline is not None and _finite(hline[0]):
        y = _num(fr.py(tf(float(hline[0]))))
        out.append(f'<line class="threshold" x1="{fr.left}" y1="{y}" x2="{width - fr.right}" '
                   f'y2="{y}" stroke="#b00020" stroke-width="1.5" stroke-dasharray="6 4"/>')
        legend.append((hline[1], "#b00020", "6 4"))
    for i, s in enumerate(series):
        color = s.get("color") or PALETTE[i % len(PALETTE)]
        dash = "5 4" if s.get("dash") else ""
        segs: list[list[tuple[float, float, float, float]]] = [[]]
        for x, y in zip(s["x"], s["y"], strict=False):
            if not _finite(y) or (log_y and y <= 0):
                if segs[-1]:
                    segs.append([])
                continue
            segs[-1].append((fr.px(float(x)), fr.py(tf(float(y))), float(x), float(y)))
        for seg in segs:
            if len(seg) > 1:
                pts = " ".join(f"{_num(a)},{_num(b)}" for a, b, _, _ in seg)
                d = f' stroke-dasharray="{dash}"' if dash else ""
                out.append(f'<polyline class="series" points="{pts}" fill="none" '
                           f'stroke="{color}" stroke-width="2.2"{d}/>')
            for a, b, x, y in seg:
                out.append(f'<circle cx="{_num(a)}" cy="{_num(b)}" r="3.2" fill="{color}">'
                           f'<title>{_e(s["name"])}: {_e(_fmt_tick(x))} → {y:.4g}</title>'
                           f'</circle>')
        legend.append((s["name"], color, dash))
    out += _legend(legend, fr.left, height - leg_h + 8, columns=2,
                   col_width=(width - fr.left - fr.right) / 2)
    out.append("</svg>")
    return "\n".join(out)


def _relabel_log(axes: list[str], yt: Sequence[float]) -> list[str]:
    out = []
    for a in axes:
        if 'text-anchor="end"' in a:
            for t in yt:
                tag = f">{_e(_fmt_tick(t))}</text>"
                if a.endswith(tag):
                    a = a[: -len(tag)] + f">{_e(_fmt_tick(10 ** t))}</text>"
                    break
        out.append(a)
    return out


def _finite(v: Any) -> bool:
    try:
        return v is not None and math.isfinite(float(v))
    except (TypeError, ValueError):
        return False


def _is_inf(v: Any) -> bool:
    return isinstance(v, str) and v == "inf" or (isinstance(v, float) and math.isinf(v))


def skyline_slices(points: Sequence[Sequence[Any]], *, title: str, desc: str = "",
                   width: int = 380, height: int = 300,
                   css_class: str = "chart skyline-chart") -> str:
    """Draw the knowledge skyline of one value as 2-D slices: safe (k, m) amounts per ℓ.

    ``points`` are the maximal safe points (ℓ, k, m) (``math.inf`` or ``"inf"`` where a
    coordinate is unbounded). Safety is monotone, so for a given ℓ the safe amounts of
    (k, m) are the integer pairs dominated by a point with ℓ_i ≥ ℓ. Each safe pair is drawn
    as a unit cell (k, m is the cell's lower-left corner, labelled at its centre), so the
    safe region of every ℓ from 0 to the largest finite ℓ is a staircase of cells, one
    colour per ℓ (a larger ℓ gives a smaller region). Unbounded coordinates reach the edge of
    the plot, marked "∞". An empty skyline (unsafe even without knowledge) is drawn as a
    message.
    """
    pts = [tuple(math.inf if _is_inf(c) else float(c) for c in p) for p in points]
    finite_l = sorted({int(p[0]) for p in pts if math.isfinite(p[0])})
    levels = list(range(0, (max(finite_l) if finite_l else 0) + 1))
    n_leg = min(len(levels), 8)
    leg_h = 16 * n_leg + 8 if pts else 0
    height = height + leg_h
    out = _open(width, height, title, desc or title, css_class)
    if not pts:
        out.append(f'<rect x="20" y="40" width="{width - 40}" height="{height - 70}" '
                   f'fill="#fdecea" stroke="#b00020"/>')
        out.append(f'<text x="{width / 2:g}" y="{height / 2:g}" text-anchor="middle" '
                   f'font-size="13" fill="#b00020">No safe amount of knowledge:</text>')
        out.append(f'<text x="{width / 2:g}" y="{height / 2 + 18:g}" text-anchor="middle" '
                   f'font-size="11" fill="#b00020">the threshold is reached without any '
                   f'background knowledge</text>')
        out.append("</svg>")
        return "\n".join(out)
    fin_k = [p[1] for p in pts if math.isfinite(p[1])]
    fin_m = [p[2] for p in pts if math.isfinite(p[2])]
    has_inf_k = any(math.isinf(p[1]) for p in pts)
    has_inf_m = any(math.isinf(p[2]) for p in pts)
    # cells 0..max finite, one more cell, then (if unbounded) a gap and the "∞" edge
    k_cells = int(max(fin_k, default=0)) + 2
    m_cells = int(max(fin_m, default=0)) + 2
    k_edge = k_cells + (1 if has_inf_k else 0)
    m_edge = m_cells + (1 if has_inf_m else 0)
    fr = _Frame(width, height, (0, k_edge), (0, m_edge), bottom=48 + leg_h)
    step_k = max(1, math.ceil(k_cells / 8))
    step_m = max(1, math.ceil(m_cells / 8))
    xt = [i + 0.5 for i in range(0, k_cells, step_k)]
    yt = [i + 0.5 for i in range(0, m_cells, step_m)]
    xl = {t: str(int(t - 0.5)) for t in xt}
    if has_inf_k:
        xt.append(k_edge - 0.5)
        xl[k_edge - 0.5] = "∞"
    out += fr.axes(xlabel="k: values of other people the adversary knows",
                   ylabel="m: same-value family members", xticks=xt, yticks=[],
                   xtick_labels=xl)
    ylabels = [(t, str(int(t - 0.5))) for t in yt]
    if has_inf_m:
        ylabels.append((m_edge - 0.5, "∞"))
    for t, lab in ylabels:
        y = _num(fr.py(t))
        out.append(f'<line x1="{fr.left}" y1="{y}" x2="{width - fr.right}" y2="{y}" '
                   f'stroke="#f0f0f0"/>')
        out.append(f'<text x="{fr.left - 6}" y="{y}" text-anchor="end" '
                   f'dominant-baseline="middle" font-size="11">{_e(lab)}</text>')

    def corner_x(v: float) -> float:           # right edge of the cells with k <= v
        return fr.px(k_edge if math.isinf(v) else v + 1)

    def corner_y(v: float) -> float:           # top edge of the cells with m <= v
        return fr.py(m_edge if math.isinf(v) else v + 1)

    legend = []
    shapes = []
    for i, L in enumerate(levels):
        box = sorted({(p[1], p[2]) for p in pts if p[0] >= L}, key=lambda q: (q[0], -q[1]))
        if not box:
            continue
        stairs = [q for q in box
                  if not any(r != q and r[0] >= q[0] and r[1] >= q[1] for r in box)]
        color = PALETTE[i % len(PALETTE)]
        poly = [(fr.px(0), fr.py(0)), (fr.px(0), corner_y(stairs[0][1]))]
        for j, (k, m) in enumerate(stairs):
            poly.append((corner_x(k), corner_y(m)))
            nxt = corner_y(stairs[j + 1][1]) if j + 1 < len(stairs) else fr.py(0)
            poly.append((corner_x(k), nxt))
        pts_s = " ".join(f"{_num(a)},{_num(b)}" for a, b in poly)
        lab = (f"ℓ = {L}: {L} value{'s' if L != 1 else ''} the target lacks known" if L else
               "ℓ = 0: nothing known about the target")
        shapes.append(f'<polygon class="safe-region" points="{pts_s}" fill="{color}" '
                      f'fill-opacity="0.13" stroke="{color}" stroke-width="2"><title>'
                      f'{_e(lab)}: safe amounts of (k, m)</title></polygon>')
        legend.append((lab, color, ""))
    out += shapes[::-1]      # ℓ = 0 (the largest region) drawn last: its outline on top
    for p in pts:
        lab = "(" + ", ".join("∞" if math.isinf(c) else str(int(c)) for c in p) + ")"
        cx = fr.px(k_edge - 0.5) if math.isinf(p[1]) else fr.px(p[1] + 0.5)
        cy = fr.py(m_edge - 0.5) if math.isinf(p[2]) else fr.py(p[2] + 0.5)
        out.append(f'<circle class="skyline-point" cx="{_num(cx)}" cy="{_num(cy)}" r="3.5" '
                   f'fill="#222222"><title>skyline point (ℓ, k, m) = {_e(lab)}</title>'
                   f'</circle>')
    out += _legend(legend[:8], fr.left - 40, height - leg_h + 6)
    out.append("</svg>")
    return "\n".join(out)


def bar_chart(labels: Sequence[Any], values: Sequence[float], *, title: str, xlabel: str,
              width: int = 640, bar_height: int = 18, desc: str = "",
              threshold: tuple[float, str] | None = None, x_max: float | None = None,
              css_class: str = "chart bar-chart") -> str:
    """Horizontal bars (one per label), e.g. the breach probability of each value."""
    n = max(len(labels), 1)
    height = 56 + n * (bar_height + 6) + 34
    longest = max((len(str(x)) for x in labels), default=4)
    left = min(12 + 7 * longest, width // 2)
    vmax = x_max if x_max is not None else max([float(v) for v in values if _finite(v)] +
                                                 [threshold[0] if threshold else 0.0, 1e-12])
    fr = _Frame(width, height, (0, vmax), (0, n), left=left, top=34, bottom=40)
    out = _open(width, height, title, desc or title, css_class)
    xt = _ticks(0, vmax, n=5)
    out += fr.axes(xlabel=xlabel, ylabel="", xticks=xt, yticks=[])
    for i, (lab, v) in enumerate(zip(labels, values, strict=False)):
        y = fr.top + 6 + i * (bar_height + 6)
        w = max(fr.px(float(v)) - fr.left, 0) if _finite(v) else 0
        color = "#b00020" if threshold and _finite(v) and float(v) >= threshold[0] else PALETTE[0]
        out.append(f'<text x="{left - 6}" y="{y + bar_height / 2:g}" text-anchor="end" '
                   f'dominant-baseline="middle" font-size="11">{_e(lab)}</text>')
        out.append(f'<rect class="bar" x="{left}" y="{y}" width="{_num(w)}" '
                   f'height="{bar_height}" fill="{color}"><title>{_e(lab)}: '
                   f'{float(v) if _finite(v) else v}</title></rect>')
    if threshold is not None:
        x = _num(fr.px(threshold[0]))
        out.append(f'<line class="threshold" x1="{x}" y1="{fr.top}" x2="{x}" '
                   f'y2="{height - fr.bottom}" stroke="#b00020" stroke-dasharray="6 4"/>')
        out.append(f'<text x="{x}" y="{fr.top - 4}" text-anchor="middle" font-size="11" '
                   f'fill="#b00020">{_e(threshold[1])}</text>')
    out.append("</svg>")
    return "\n".join(out)


def _marker(kind: str, x: float, y: float, r: float, color: str, opacity: float,
            title: str) -> str:
    """One point: a dot, a ring or a diamond, with its tooltip."""
    tip = f"<title>{_e(title)}</title>" if title else ""
    op = f' fill-opacity="{opacity:g}"' if opacity < 1 else ""
    if kind == "diamond":
        pts = f"{_num(x)},{_num(y - r)} {_num(x + r)},{_num(y)} {_num(x)},{_num(y + r)} " \
              f"{_num(x - r)},{_num(y)}"
        return (f'<polygon class="point" points="{pts}" fill="{color}"{op} stroke="#ffffff" '
                f'stroke-width="1.2">{tip}</polygon>')
    if kind == "ring":
        return (f'<circle class="point" cx="{_num(x)}" cy="{_num(y)}" r="{r:g}" fill="none" '
                f'stroke="{color}" stroke-width="2">{tip}</circle>')
    return (f'<circle class="point" cx="{_num(x)}" cy="{_num(y)}" r="{r:g}" '
            f'fill="{color}"{op}>{tip}</circle>')


def scatter_chart(series: Sequence[dict], *, title: str, xlabel: str, ylabel: str,
                  width: int = 720, height: int = 440, desc: str = "",
                  css_class: str = "chart scatter-chart") -> str:
    """Draw a scatter plot, with lines through the points of the series that ask for one.

    Parameters
    ----------
    series : list of dict
        Each ``{"name": str, "x": [...], "y": [...]}`` with optional ``"color"``,
        ``"line"`` (join the points in the given order, e.g. a Pareto frontier),
        ``"marker"`` (``"dot"``, ``"ring"`` or ``"diamond"``), ``"size"`` (radius in
        pixels), ``"opacity"``, ``"titles"`` (one tooltip per point) and ``"label"`` (a
        text drawn beside each point). Non-finite points are skipped; points of a series
        without tooltips that land on the same pixel are drawn once, so a cloud of
        thousands stays small. Later series are drawn on top.
    title, xlabel, ylabel, desc : str
        Texts (escaped).
    width, height : int
        Size in pixels (the legend below adds to the height).
    css_class : str
        CSS class of the ``<svg>``.

    """
    xs = [float(x) for s in series for x, y in zip(s["x"], s["y"], strict=False)
          if _finite(x) and _finite(y)]
    ys = [float(y) for s in series for x, y in zip(s["x"], s["y"], strict=False)
          if _finite(x) and _finite(y)]
    lo_x, hi_x = (min(xs), max(xs)) if xs else (0.0, 1.0)
    lo_y, hi_y = (min(ys), max(ys)) if ys else (0.0, 1.0)
    x_range = (min(0.0, lo_x), hi_x + ((hi_x - lo_x) * 0.04 or 0.5))
    y_range = (min(0.0, lo_y), hi_y + ((hi_y - lo_y) * 0.05 or 0.5))
    leg_h = 16 * ((len(series) + 1) // 2) + 6
    height = height + leg_h
    fr = _Frame(width, height, x_range, y_range, left=64, bottom=48 + leg_h)
    out = _open(width, height, title, desc or title, css_class)
    out += fr.axes(xlabel=xlabel, ylabel=ylabel, xticks=_ticks(*x_range, n=6),
                   yticks=_ticks(*y_range))
    legend = []
    for i, s in enumerate(series):
        color = s.get("color") or PALETTE[i % len(PALETTE)]
        pts = [(fr.px(float(x)), fr.py(float(y)), j) for j, (x, y) in
               enumerate(zip(s["x"], s["y"], strict=False)) if _finite(x) and _finite(y)]
        if s.get("line") and len(pts) > 1:
            line = " ".join(f"{_num(a)},{_num(b)}" for a, b, _ in pts)
            out.append(f'<polyline class="series" points="{line}" fill="none" '
                       f'stroke="{color}" stroke-width="2"/>')
        titles = s.get("titles")
        seen: set[tuple[str, str]] = set()
        for a, b, j in pts:
            if titles is None:
                key = (_num(a), _num(b))
                if key in seen:
                    continue
                seen.add(key)
            out.append(_marker(s.get("marker", "dot"), a, b, float(s.get("size", 3.0)), color,
                               float(s.get("opacity", 1.0)),
                               "" if titles is None else str(titles[j])))
            if s.get("label"):       # beside the point, on the side with room
                left = a + 9 + 7 * len(str(s["label"])) > width - fr.right
                out.append(f'<text x="{_num(a - 9 if left else a + 9)}" y="{_num(b - 7)}" '
                           f'text-anchor="{"end" if left else "start"}" font-size="11" '
                           f'font-weight="600" fill="{color}">{_e(s["label"])}</text>')
        legend.append((s["name"], color, ""))
    out += _legend(legend, fr.left, height - leg_h + 8, columns=2,
                   col_width=(width - fr.left - fr.right) / 2)
    out.append("</svg>")
    return "\n".join(out)


def standalone(svg: str) -> str:
    """Return an SVG element as a standalone ``.svg`` file (XML declaration added)."""
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + svg + "\n"


def png_line_chart(series: Sequence[dict], path: str, *, title: str, xlabel: str,
                   ylabel: str, hline: tuple[float, str] | None = None,
                   log_y: bool = False) -> str:
    """Draw the :func:`line_chart` content as a PNG via matplotlib (the ``plot`` extra).

    Writes atomically through :mod:`fastpriv._io` and returns the path. Raises
    ``ImportError`` with an installation hint when matplotlib is missing.
    """
    try:
        import matplotlib
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError("PNG plots need matplotlib: pip install 'fastpriv[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .._io import atomic_write

    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    for s in series:
        ax.plot(s["x"], [float(y) if _finite(y) else float("nan") for y in s["y"]],
                "--o" if s.get("dash") else "-o", ms=3, label=s["name"])
    if hline is not None:
        ax.axhline(hline[0], color="#b00020", ls="--", lw=1, label=hline[1])
    if log_y:
        ax.set_yscale("log")
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()

    def _w(tmp: str) -> None:
        fig.savefig(tmp, dpi=120, format="png")

    try:
        return atomic_write(path, _w, overwrite=True)
    finally:
        plt.close(fig)
