#> chain-rule
"""Drawing helpers for the book's figures. Not part of autodiff.

Every number a figure shows comes from the engine's own objects; this module
only draws. Introduced alongside the first figure of the book and used by
every chapter, so that one picture of a graph is drawn by one piece of code.

    book_figures()                    still figures as SVG beside a PNG, the same each run
    interactive(fig, draw, frames)   a kernel-free player (buttons and slider)
    draw_graph(ax, root, ...)         a computational graph, one box per node
"""

import base64
import hashlib
import io
import itertools
import re

import numpy as np


# -- still figures ------------------------------------------------------------------


def book_figures(*formats):
    """Show this kernel's figures as SVG (sharp at any zoom; the book's pages use it)
    beside a PNG (for viewers that show no SVG), each byte-identical from run to run.
    `book_figures("png")` draws PNG only, for a dense figure (thousands of marks) that
    would be a far larger SVG.

    matplotlib names the parts of an SVG with random ids and stamps it with the day it
    was drawn, unless given a fixed salt and no date. Glyphs stay paths, so a figure
    looks the same on a machine without its fonts. Outside IPython only the salt is set.
    """
    import matplotlib

    matplotlib.rcParams["svg.hashsalt"] = "engine-figures"
    matplotlib.rcParams["svg.fonttype"] = "path"
    try:
        from IPython import get_ipython
        from matplotlib_inline.backend_inline import set_matplotlib_formats
    except ImportError:
        return
    if get_ipython() is not None:
        set_matplotlib_formats(*(formats or ("svg", "png")), metadata={"Date": None})


# -- interactive figures --------------------------------------------------------


class Interactive:
    """A figure with a step/slider player for the web and a still image elsewhere.

    Jupyter and the book's HTML show the player (matplotlib's JavaScript
    animation: no kernel, no server); print and viewers that strip scripts
    fall back to the PNG of the frames listed in `still`.
    """

    def __init__(self, html, png, frames=None):
        self.html = html
        self.png = png
        self.frames = frames

    def __repr__(self):
        # the text/plain of the output: the default `<... at 0x7f...>` would put a memory
        # address, different each run, into every executed notebook
        frames = "" if self.frames is None else f", {self.frames} frames"
        return f"<engine.figures.Interactive player{frames}>"

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/html": self.html, "image/png": base64.b64encode(self.png).decode()}


_PLAYERS = itertools.count()  # players made so far by this kernel


def _stable_ids(html):
    """matplotlib names a player's elements with a random uuid4 (`_anim_img<hex>`), so
    every build would write different HTML; name them after the player's content and
    its place among this kernel's players instead: unique on a page, the same each build.
    """
    match = re.search(r'id="_anim_img([0-9a-f]{32})"', html)
    if match is None:
        return html
    without = html.replace(match[1], "")
    digest = hashlib.sha256(f"{next(_PLAYERS)}\0{without}".encode()).hexdigest()[:32]
    return html.replace(match[1], digest)


MAX_FRAME_PX = 896


def interactive(fig, draw, frames, still=None, interval=900, alt="", labels=None):
    """Build a player that calls `draw(frame)` for each frame and redraws `fig`.

    `draw` must redraw everything that changes. `still` is the frame shown in
    the static fallback (default: the last one). `labels`, one short text per
    frame, are shown beside the site's frame counter ("Frame 2 of 5: seed").
    The figure is closed.
    """
    import matplotlib.pyplot as plt

    frames = list(frames)
    # Every frame is cut to the same box: the union of the frames' own tight boxes, so
    # no frame has a wide empty margin and no frame's title runs off its edge.
    box, smallest = _frames_box(fig, draw, frames)
    # Frames no wider than the page's column at 1280 px (672 px) over 0.75, so that a
    # browser draws them at 75% of their size or more; text keeps its size on the page,
    # which depends on the figure's inches, not on its dpi.
    dpi = min(fig.dpi, MAX_FRAME_PX / box.width)
    draw(frames[-1] if still is None else still)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches=box)
    html = _stable_ids(_player_html(fig, draw, frames, box, interval, dpi))
    if labels is not None:
        labels = [str(label) for label in labels]
        if len(labels) != len(frames):
            raise ValueError(f"interactive: {len(labels)} labels for {len(frames)} frames")
    import html as html_text
    import json

    data = ("" if labels is None else
            f' data-frame-labels="{html_text.escape(json.dumps(labels), quote=True)}"')
    # the smallest text of any frame, in points, and the frames' dpi: what a reader's
    # label size on the page is measured from (tests/browser/test_reader.py)
    data += f' data-text-pt="{smallest:g}" data-dpi="{dpi:g}"'
    # the frame's <img> says what it shows too (a reader of the page's text, a screen reader)
    html = html.replace('<img id="_anim_img', f'<img alt="{html_text.escape(alt, quote=True)}" '
                        'id="_anim_img', 1)
    html = (f'<div class="engine-interactive" role="figure" '
            f'aria-label="{html_text.escape(alt, quote=True)}"{data}>{html}</div>')
    plt.close(fig)
    return Interactive(html, buffer.getvalue(), len(frames))


def _frames_box(fig, draw, frames, pad=0.1):
    """The smallest box (inches) that holds every frame's drawing, with a margin, and
    the smallest font size (points) of any text a frame shows."""
    from matplotlib.text import Text
    from matplotlib.transforms import Bbox

    renderer = fig.canvas.get_renderer()
    boxes, sizes = [], []
    for frame in frames:
        draw(frame)
        boxes.append(fig.get_tightbbox(renderer))
        sizes += [t.get_fontsize() for t in fig.findobj(Text)
                  if t.get_visible() and t.get_text().strip()]
    return Bbox.union(boxes).padded(pad), min(sizes, default=0)


def _player_html(fig, draw, frames, box, interval, dpi):
    """matplotlib's `to_jshtml`, with every frame saved cut to `box` (its own HTMLWriter
    refuses a bbox_inches, since a tight box per frame would change the frame size).
    Each frame is drawn once and saved: matplotlib's FuncAnimation would also draw
    frame 0 first and redraw the whole figure after each frame, before saving it."""
    import tempfile
    from pathlib import Path

    from matplotlib.animation import HTMLWriter

    class BoxedWriter(HTMLWriter):
        def grab_frame(self, **savefig_kwargs):
            frame = io.BytesIO()
            self.fig.savefig(frame, format=self.frame_format, dpi=self.dpi, bbox_inches=box)
            self._saved_frames.append(base64.encodebytes(frame.getvalue()).decode("ascii"))

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "player.html")
        writer = BoxedWriter(fps=1000 / interval, embed_frames=True, default_mode="once")
        with writer.saving(fig, str(path), dpi):
            for frame in frames:
                draw(frame)
                writer.grab_frame()
        return path.read_text()


# -- computational graphs -------------------------------------------------------


def _value_of(node):
    """The node's value as an array: Tensor has `data`, the scalar Var has `value`."""
    return np.asarray(node.data if hasattr(node, "data") else node.value, dtype=float)


def graph_layout(root):
    """Columns by depth (leaves at 0), rows ordered to keep edges short: {id(node): (x, y)}.

    A node's column is its longest path from a leaf; a leaf stands in the column
    just before its first user, so that its edge skips no column (a bias added late
    in a network sits beside its addition, not at the far left). Within a column,
    nodes are sorted by the mean row of their parents (one barycentre pass), which
    keeps most edges from crossing on the small graphs of the book.
    """
    order = root.topo_order()
    depth = {}
    for node in order:
        parents = [p for p in node.parents if id(p) in depth]
        depth[id(node)] = 1 + max((depth[id(p)] for p in parents), default=-1)
    users = {}
    for node in order:
        for parent in node.parents:
            users.setdefault(id(parent), []).append(node)
    for node in order:
        if not node.parents and id(node) in users:
            depth[id(node)] = min(depth[id(u)] for u in users[id(node)]) - 1
    columns = {}
    for node in order:
        columns.setdefault(depth[id(node)], []).append(node)
    position = {}
    for x in sorted(columns):
        nodes = columns[x]
        if x > 0:
            def mean_parent_row(node):
                rows = [position[id(p)][1] for p in node.parents if id(p) in position]
                return -sum(rows) / len(rows) if rows else 0.0  # a leaf: the middle
            nodes = sorted(nodes, key=mean_parent_row)
        for row, node in enumerate(nodes):
            position[id(node)] = (x, -(row - (len(nodes) - 1) / 2))
    return order, position


def _fmt(values, digits):
    """Round to `digits` decimals and print without padding: [11.652 0 -0.602]."""
    values = np.round(values, digits) + 0.0  # + 0.0 turns -0.0 into 0.0
    if values.ndim == 0:
        return f"{values:g}"
    return "[" + " ".join(f"{v:g}" for v in values.ravel()) + "]"


def draw_graph(ax, root, names=None, show_grad=True, digits=3, highlight=(), fontsize=8.5):
    """Draw the graph that ends at `root`: one box per node with its data and grad rows.

    `names` maps nodes to labels (default: the operation, or "leaf").
    Nodes in `highlight` are drawn in the accent colour. Returns {id(node): text artist}.
    """
    names = names or {}
    order, position = graph_layout(root)
    xs = [p[0] for p in position.values()]
    ys = [p[1] for p in position.values()]
    ax.set_xlim(min(xs) - 0.6, max(xs) + 0.6)
    ax.set_ylim(min(ys) - 0.7, max(ys) + 0.7)
    ax.set_axis_off()
    highlight = {id(n) for n in highlight}
    boxes = {}
    for node in order:
        x, y = position[id(node)]
        label = names.get(node) or (node.op or "leaf")
        rows = [label, "data " + _fmt(_value_of(node), digits)]
        if show_grad:  # a result's grad is None until a backward sweep reaches it
            grad = "None" if node.grad is None else _fmt(np.asarray(node.grad, float), digits)
            rows.append("grad " + grad)
        colour = "#fde0c5" if id(node) in highlight else ("#dbe9f6" if node.parents else "#e4f2e0")
        boxes[id(node)] = ax.text(
            x, y, "\n".join(rows), ha="center", va="center", family="monospace",
            fontsize=fontsize, zorder=3,
            bbox=dict(boxstyle="round,pad=0.4", fc=colour, ec="#333333", lw=1),
        )
    renderer = ax.figure.canvas.get_renderer()  # size the boxes, so arrows stop at their
    for box in boxes.values():                   # edges, without drawing the figure
        box.update_bbox_position_size(renderer)
    for node in order:
        for parent in node.parents:
            if id(parent) in boxes:
                # an edge that skips a column bends away from the middle rows, where the
                # boxes it skips stand: up above the middle, down below it
                (x0, y0), (x1, y1) = position[id(parent)], position[id(node)]
                bend = 0.0
                if x1 - x0 > 1:
                    bend = -0.35 if (y0 + y1) / 2 >= 0 else 0.35
                ax.annotate(
                    "", xy=(x1, y1), xytext=(x0, y0),
                    arrowprops=dict(arrowstyle="-|>", color="#555555", lw=1.2,
                                    shrinkA=1, shrinkB=1, mutation_scale=14,
                                    connectionstyle=f"arc3,rad={bend}",
                                    patchA=boxes[id(parent)].get_bbox_patch(),
                                    patchB=boxes[id(node)].get_bbox_patch()),
                    zorder=4,
                )
    return boxes
