"""Bytes per layer as a horizontal bar chart in SVG, written by hand (no plotting library):
one bar per layer in program order, the compressed share of each layer darker."""
from __future__ import annotations

from xml.sax.saxutils import escape

ROW, BAR_WIDTH, LABEL_CHAR, MARGIN = 18, 360, 7, 10


def bars_svg(stats) -> str:
    layers = stats.layers()
    compressed = {}
    for w in stats.unique_weights:
        if w.compressed:
            compressed[w.layer] = compressed.get(w.layer, 0) + (w.bytes or 0)
    label = max([len(layer.name) for layer in layers] + [8]) * LABEL_CHAR
    widest = max([layer.bytes for layer in layers] + [1])
    width = MARGIN * 3 + label + BAR_WIDTH + 90
    height = MARGIN * 2 + ROW * (len(layers) + 2)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
           f'<title>{escape(stats.source)}: bytes of weights per layer</title>',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{MARGIN}" y="{MARGIN + 12}" font-weight="bold">{escape(stats.source)}: '
           f'{stats.weight_bytes:,} bytes of weights (dark: compressed)</text>']
    for i, layer in enumerate(layers):
        y = MARGIN + ROW * (i + 1) + 4
        x = MARGIN * 2 + label
        full = BAR_WIDTH * layer.bytes / widest
        dark = BAR_WIDTH * compressed.get(layer.name, 0) / widest
        out.append(f'<text x="{x - MARGIN}" y="{y + 12}" text-anchor="end">{escape(layer.name)}</text>')
        out.append(f'<rect x="{x}" y="{y + 2}" width="{full:.1f}" height="{ROW - 4}" fill="#9ecae1"/>')
        if dark:
            out.append(f'<rect x="{x}" y="{y + 2}" width="{dark:.1f}" height="{ROW - 4}" fill="#3182bd"/>')
        out.append(f'<text x="{x + full + 4:.1f}" y="{y + 12}">{layer.bytes:,}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
