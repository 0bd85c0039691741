"""The explorer's HTML: every value escaped, every view a plain URL."""

from __future__ import annotations

from collections import defaultdict
from html import escape
from urllib.parse import urlencode

from evoflow.explorer.data import CHOICES, COLUMNS, Filters

STYLE = """body{font:14px system-ui,sans-serif;margin:1.2em;color:#222}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}
.warn{background:#fee;border:1px solid #c66;padding:6px;margin:6px 0}
.turn{border-left:4px solid #888;margin:6px 0;padding:4px 8px;white-space:pre-wrap}
.turn.assistant{border-color:#36c}.turn.user{border-color:#3a3}.turn.system{border-color:#999}
.invalid{color:#b00;font-weight:bold}.sides{display:flex;gap:1em}.side{flex:1;min-width:0}
form label{margin-right:.6em}"""
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2")


def episode_link(episode_id: str) -> str:
    """The episode's URL (ids hold slashes: they are quoted whole)."""
    return escape(f"/episode?{urlencode({'id': episode_id})}")


def page(title: str, body: str, skipped: dict[str, str]) -> str:
    """A whole page, with a warning naming every shard that could not be read."""
    warnings = "".join(f'<div class="warn skipped">cannot read {escape(path)}: {escape(why)}'
                       "</div>" for path, why in skipped.items())  # fmt: skip
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(title)}</title>"
            f"<style>{STYLE}</style></head><body><h1><a href='/'>trajectories</a> · "
            f"{escape(title)}</h1>{warnings}{body}</body></html>")  # fmt: skip


def filter_form(filters: Filters, choices: dict[str, list]) -> str:
    """One select per filter (its current value selected) and success yes/no/any."""
    current = filters.query()
    selects = []
    for name in CHOICES:
        options = "".join(
            f"<option value='{escape(str(v))}'{' selected' if str(current.get(name, '')) == str(v) else ''}>"
            f"{escape(str(v))}</option>" for v in choices.get(name, []))  # fmt: skip
        selects.append(f"<label>{name} <select name='{name}'><option value=''>any</option>"
                       f"{options}</select></label>")  # fmt: skip
    success = {"": "any", "true": "success", "false": "failure"}
    chosen = "" if filters.success is None else str(filters.success).lower()
    options = "".join(f"<option value='{k}'{' selected' if k == chosen else ''}>{v}</option>"
                      for k, v in success.items())  # fmt: skip
    selects.append(f"<label>outcome <select name='success'>{options}</select></label>")
    return f"<form id='filters' method='get' action='/'>{''.join(selects)}<button>filter</button></form>"


def episode_table(
    rows: list[dict], total: int, filters: Filters, offset: int, limit: int
) -> str:
    head = "".join(f"<th>{c}</th>" for c in COLUMNS)
    body = []
    for row in rows:
        cells = []
        for c in COLUMNS:
            value = escape(str(row[c]))
            if c == "episode_id":
                value = f"<a class='episode' href='{episode_link(row[c])}'>{value}</a>"
            cells.append(f"<td class='{c}'>{value}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    more = ""
    if offset + limit < total:
        link = urlencode({**filters.query(), "offset": offset + limit})
        more = f"<p><a id='next' href='/?{link}'>next {limit}</a></p>"
    return (f"<p id='count'>{total} episodes (showing {offset + 1 if rows else 0}–"
            f"{offset + len(rows)})</p><table id='episodes'><tr>{head}</tr>{''.join(body)}"
            f"</table>{more}")  # fmt: skip


def success_chart(points: list[dict]) -> str:
    """Success rate by round, one small panel per env, one line per method."""
    by_env = defaultdict(lambda: defaultdict(list))
    for p in points:
        by_env[p["env"]][p["method"]].append((int(p["round"]), float(p["rate"])))
    methods = sorted({p["method"] for p in points})
    rounds = sorted({int(p["round"]) for p in points}) or [0]
    lo, hi = rounds[0], max(rounds[-1], rounds[0] + 1)
    width, height, pad = 220, 140, 24
    panels = []
    for k, env in enumerate(sorted(by_env)):
        x0 = k * (width + 10)
        lines = [f"<text x='{x0 + pad}' y='12'>{escape(env)}</text>",
                 f"<rect x='{x0 + pad}' y='{pad}' width='{width - pad}' height='{height - 2 * pad}'"
                 " fill='none' stroke='#ccc'/>"]  # fmt: skip
        for m, method in enumerate(methods):
            series = sorted(by_env[env].get(method, []))
            coords = " ".join(f"{x0 + pad + (r - lo) / (hi - lo) * (width - pad):.1f},"
                              f"{height - pad - rate * (height - 2 * pad):.1f}" for r, rate in series)  # fmt: skip
            color = COLORS[m % len(COLORS)]
            if coords:
                lines.append(f"<polyline class='series' data-env='{escape(env)}' data-method='{escape(method)}' "
                             f"points='{coords}' fill='none' stroke='{color}'/>")  # fmt: skip
            lines += [f"<circle cx='{xy.split(',')[0]}' cy='{xy.split(',')[1]}' r='3' fill='{color}'>"
                      f"<title>{escape(method)}: {100 * rate:.0f} % at round {r}</title></circle>"
                      for xy, (r, rate) in zip(coords.split(), series, strict=True)]  # fmt: skip
        panels.append("".join(lines))
    legend = " ".join(f"<span style='color:{COLORS[m % len(COLORS)]}'>■ {escape(method)}</span>"
                      for m, method in enumerate(methods))  # fmt: skip
    total = max(1, len(by_env)) * (width + 10)
    return (f"<h2>success by round</h2><svg id='success-chart' width='{total}' height='{height}'>"
            f"{''.join(panels)}</svg><div>{legend} (x: round {lo}–{hi}, y: 0–100 %)</div>")  # fmt: skip


def turns(episode: dict) -> str:
    """An episode turn by turn: role, content, invalid-action notes, reward."""
    parts = []
    for i, message in enumerate(episode["messages"], start=1):
        role = escape(message["role"])
        notes = ""
        if message.get("valid") is False:
            notes += "<span class='invalid'>invalid action</span> "
        if message.get("reward") is not None:
            notes += f"<span class='reward'>reward {message['reward']:g}</span>"
        parts.append(f"<div class='turn {role}' data-index='{i}'><b>{i}. {role}</b> {notes}\n"
                     f"{escape(message['content'])}</div>")  # fmt: skip
    return "".join(parts)


def summary(episode: dict) -> str:
    keys = ("experiment", "method", "round", "client", "env", "task_id", "success", "reward",
            "n_turns", "n_invalid", "termination")  # fmt: skip
    cells = "".join(
        f"<tr><th>{k}</th><td class='{k}'>{escape(str(episode[k]))}</td></tr>"
        for k in keys
    )
    compare = urlencode(
        {"task_id": episode["task_id"], "env": episode["env"], "a": episode["method"]}
    )
    return (f"<table class='summary'>{cells}</table><p><a id='compare' href='/compare?{compare}'>"
            "compare with another method on this task</a></p>")  # fmt: skip


def comparison(
    task_id: str, env: str, sides: list[tuple[str, dict | None]], methods: list[str]
) -> str:
    """Two methods' episodes of one task, side by side, with a form to change them."""

    def chooser(name: str, chosen: str) -> str:
        options = "".join(f"<option{' selected' if m == chosen else ''}>{escape(m)}</option>"
                          for m in methods)  # fmt: skip
        return f"<select name='{name}'>{options}</select>"

    form = (f"<form id='pick' method='get' action='/compare'><input type='hidden' name='task_id' "
            f"value='{escape(task_id)}'><input type='hidden' name='env' value='{escape(env)}'>"
            f"{chooser('a', sides[0][0])} vs {chooser('b', sides[1][0])}<button>compare</button></form>")  # fmt: skip
    columns = []
    for method, episode in sides:
        inner = (
            (summary(episode) + turns(episode))
            if episode
            else "<p>no episode of this task</p>"
        )
        columns.append(
            f"<div class='side' data-method='{escape(method)}'><h2>{escape(method)}</h2>{inner}</div>"
        )
    return f"{form}<div class='sides'>{''.join(columns)}</div>"
