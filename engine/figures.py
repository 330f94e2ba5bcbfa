"""Drawing helpers for the book's figures. Not part of autodiff.

Every number a figure shows comes from the engine's own objects; this module
only draws. Introduced alongside the first figure of the book and used by
every chapter, so that one picture of a graph is drawn by one piece of code.

    interactive(fig, draw, frames)   a kernel-free player (buttons and slider)
    draw_graph(ax, root, ...)         a computational graph, one box per node
"""

import base64
import io

import numpy as np


# -- interactive figures --------------------------------------------------------


class Interactive:
    """A figure with a step/slider player for the web and a still image elsewhere.

    Jupyter and the book's HTML show the player (matplotlib's JavaScript
    animation: no kernel, no server); print and viewers that strip scripts
    fall back to the PNG of the frames listed in `still`.
    """

    def __init__(self, html, png):
        self.html = html
        self.png = png

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/html": self.html, "image/png": base64.b64encode(self.png).decode()}


def interactive(fig, draw, frames, still=None, interval=900, alt=""):
    """Build a player that calls `draw(frame)` for each frame and redraws `fig`.

    `draw` must redraw everything that changes. `still` is the frame shown in
    the static fallback (default: the last one). The figure is closed.
    """
    import matplotlib.pyplot as plt
    from matplotlib.animation import FuncAnimation

    frames = list(frames)
    animation = FuncAnimation(fig, draw, frames=frames, interval=interval, repeat=False)
    html = animation.to_jshtml(default_mode="once")
    if alt:
        html = f'<div class="engine-interactive" role="figure" aria-label="{alt}">{html}</div>'
    draw(frames[-1] if still is None else still)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return Interactive(html, buffer.getvalue())


# -- computational graphs -------------------------------------------------------


def _value_of(node):
    """The node's value as an array: Tensor has `data`, the scalar Var has `value`."""
    return np.asarray(node.data if hasattr(node, "data") else node.value, dtype=float)


def graph_layout(root):
    """Columns by depth (leaves at 0), rows in order of appearance: {node: (x, y)}."""
    order = root.topo_order()
    depth = {}
    for node in order:
        parents = [p for p in node.parents if id(p) in depth]
        depth[id(node)] = 1 + max((depth[id(p)] for p in parents), default=-1)
    columns = {}
    for node in order:
        columns.setdefault(depth[id(node)], []).append(node)
    position = {}
    for x, nodes in columns.items():
        for row, node in enumerate(nodes):
            position[id(node)] = (x, -(row - (len(nodes) - 1) / 2))
    return order, position


def _fmt(values, digits):
    values = np.round(values, digits) + 0.0  # + 0.0 turns -0.0 into 0.0
    if values.ndim == 0:
        return f"{values:.{digits}g}"
    return "[" + " ".join(f"{v:.{digits}g}" for v in values.ravel()) + "]"


def draw_graph(ax, root, names=None, show_grad=True, digits=4, highlight=(), box_width=2.1):
    """Draw the graph that ends at `root`: one box per node with its data and grad rows.

    `names` maps nodes to labels (default: the operation, or "leaf").
    Nodes in `highlight` are drawn in the accent colour.
    """
    names = names or {}
    order, position = graph_layout(root)
    highlight = {id(n) for n in highlight}
    scale_x, scale_y = 3.0, 1.6
    for node in order:
        x0, y0 = position[id(node)]
        for parent in node.parents:
            if id(parent) not in position:
                continue
            x1, y1 = position[id(parent)]
            ax.annotate(
                "",
                xy=(x0 * scale_x - box_width / 2, y0 * scale_y),
                xytext=(x1 * scale_x + box_width / 2, y1 * scale_y),
                arrowprops=dict(arrowstyle="-|>", color="#555555", lw=1.2,
                                shrinkA=0, shrinkB=0),
            )
    for node in order:
        x, y = position[id(node)]
        label = names.get(node) or names.get(id(node)) or (node.op or "leaf")
        rows = [label, "data " + _fmt(_value_of(node), digits)]
        if show_grad:
            rows.append("grad " + _fmt(np.asarray(node.grad, dtype=float), digits))
        colour = "#fde0c5" if id(node) in highlight else ("#dbe9f6" if node.parents else "#e4f2e0")
        ax.text(
            x * scale_x, y * scale_y, "\n".join(rows), ha="center", va="center",
            family="monospace", fontsize=8.5,
            bbox=dict(boxstyle="round,pad=0.4", fc=colour, ec="#333333", lw=1),
        )
    xs = [p[0] * scale_x for p in position.values()]
    ys = [p[1] * scale_y for p in position.values()]
    ax.set_xlim(min(xs) - box_width, max(xs) + box_width)
    ax.set_ylim(min(ys) - 1.0, max(ys) + 1.0)
    ax.set_axis_off()
    return position
