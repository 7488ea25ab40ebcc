"""``fedtopic report``: the dashboard's panels as one self-contained HTML file (data, script and style inlined;
no server, nothing fetched) for sharing a finished run."""

from __future__ import annotations

import json
import re
from pathlib import Path

from fedtopic.dashboard.app import asset
from fedtopic.dashboard.board import Board
from fedtopic.node.state_file import write_text_atomic
from fedtopic.runs.json_text import strict


def _inline_json(data: object) -> str:
    """JSON safe inside a <script> element: every ``<``, ``>`` and ``&`` escaped (no ``</script>``, no ``<!--``
    that would switch the parser into script-data-escaped state), and no U+2028/9 line breaks."""
    text = json.dumps(strict(data), separators=(",", ":"), allow_nan=False)
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                         ("\u2029", "\\u2029")):
        text = text.replace(raw, escaped)
    return text


def render_report(board: Board) -> str:
    """The page of ``board`` with its data inlined: state, every history row, topics and ledger."""
    wait = getattr(board.source, "wait_for_signs", None)
    if wait is not None:  # a party's view: what the aggregator or chain says of the others belongs in the report
        wait()
    board.refresh(force=True)
    data = {"state": board.state(), "rows": board.history()["rows"], "topics": board.topics(),
            "ledger": board.ledger()}
    page = asset("index.html").decode("utf-8")
    style = asset("dashboard.css").decode("utf-8")
    scripts = "\n".join(asset(n).decode("utf-8").replace("</script", "<\\/script") for n in ("charts.js", "dashboard.js"))
    page = page.replace('<link rel="stylesheet" href="static/dashboard.css">', f"<style>\n{style}</style>")
    page = re.sub(r'<script src="static/charts.js"></script>\s*<script src="static/dashboard.js"></script>',
                  lambda _: f"<script>window.FEDTOPIC_REPORT = {_inline_json(data)};</script>\n<script>\n{scripts}\n"
                            "</script>", page)
    return page


def write_report(board: Board, out: Path) -> Path:
    """Write the report to ``out`` atomically."""
    out = Path(out)
    write_text_atomic(out, render_report(board))
    return out
