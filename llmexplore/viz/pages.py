"""Static HTML pages: one per episode and an index linking all episodes of a run.

Plain HTML with relative links, so the folder can be copied or served as it is.
"""

from __future__ import annotations

from html import escape
from typing import Any, Mapping, Sequence

from llmexplore.viz.messages import CaptionStat

STYLE = """
body { font-family: sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: right; }
td.text, th.text { text-align: left; font-family: monospace; white-space: pre-wrap; max-width: 60em; }
.media img, .media video { display: block; margin-bottom: 0.5em; }
.meta { color: #555; }
"""


def _page(title: str, body: str) -> str:
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{escape(title)}</title>"
            f"<style>{STYLE}</style></head><body>\n{body}\n</body></html>\n")


def _num(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 1e6 else f"{value:.3e}"
    return escape(str(value))


def caption_table(rows: Sequence[CaptionStat], limit: int, label: str) -> str:
    """An HTML table of the first ``limit`` rows (steps, intrinsic reward in all and per step, extrinsic
    reward), saying how many more there are; ``label`` heads the text column."""
    shown = list(rows)[:limit]
    head = (f"<tr><th class=\"text\">{escape(label)}</th><th>steps</th><th>intrinsic reward</th>"
            f"<th>per step</th><th>extrinsic reward</th></tr>")
    body = "".join(
        f"<tr><td class=\"text\">{escape(r.text)}</td><td>{r.count:,}</td><td>{r.intrinsic:,.3f}</td>"
        f"<td>{r.intrinsic_mean:,.4f}</td><td>{r.extrinsic:,.2f}</td></tr>" for r in shown)
    more = f"<p class=\"meta\">{len(rows) - len(shown):,} more not shown.</p>" if len(rows) > len(shown) else ""
    return f"<table>{head}{body}</table>{more}"


def media_tag(name: str) -> str:
    """The HTML element that shows an animation: a looping, muted video for ``.mp4``, an image otherwise."""
    if name.endswith(".mp4"):
        return f"<video src=\"{escape(name)}\" controls loop muted></video>"
    return f"<img src=\"{escape(name)}\" alt=\"episode animation\">"


def episode_page(run: Mapping[str, Any], episode: Mapping[str, Any], captions: Sequence[CaptionStat],
                 limit: int, label: str) -> str:
    """One episode's HTML page: animation, reward plot, links to its files, top captions and stats."""
    files = episode["files"]
    stats = "".join(f"<tr><th class=\"text\">{escape(k)}</th><td>{_num(v)}</td></tr>"
                    for k, v in episode["stats"].items())
    body = f"""<p><a href="index.html">&larr; all episodes</a></p>
<h1>Seed {episode['seed']}: {escape(run['method'])} on {escape(run['task'])}</h1>
<p class="meta">{_run_line(run)}. {episode['length']:,} steps, return {episode['return']:.2f},
intrinsic return {episode['intrinsic_return']:.3f}{' (ended by the time limit)' if episode['truncated'] else ''}.</p>
<div class="media">{media_tag(files['animation'])}<img src="{escape(files['plot'])}" alt="rewards per step"></div>
<p>Files: <a href="{escape(files['log'])}">step log</a>, <a href="{escape(files['summary'])}">summary (JSON)</a>,
<a href="{escape(files['animation'])}">animation</a>, <a href="{escape(files['plot'])}">reward plot</a>.</p>
<h2>Most frequent {escape(label)}s</h2>
{caption_table(captions, limit, label)}
<h2>Episode stats</h2>
<table>{stats}</table>"""
    return _page(f"seed {episode['seed']} - {run['method']} on {run['task']}", body)


def index_page(run: Mapping[str, Any], episodes: Sequence[Mapping[str, Any]], captions: Sequence[CaptionStat],
               metrics: Mapping[str, float], metric: str, limit: int, label: str) -> str:
    """The run's HTML index: one row per episode linking its page, the captions over all episodes, and the
    benchmark metrics of these episodes."""
    rows = "".join(
        f"<tr><td><a href=\"{escape(e['files']['page'])}\">{e['seed']}</a></td><td>{e['length']:,}</td>"
        f"<td>{e['return']:.2f}</td><td>{e['intrinsic_return']:.3f}</td>"
        f"<td>{_num(e['stats'].get(metric, '-'))}</td>"
        f"<td class=\"text\">{escape(e['top_caption'])}</td>"
        f"<td><a href=\"{escape(e['files']['animation'])}\">animation</a></td></tr>" for e in episodes)
    summary = "".join(f"<tr><th class=\"text\">{escape(k)}</th><td>{_num(v)}</td></tr>" for k, v in metrics.items())
    body = f"""<h1>{escape(run['method'])} on {escape(run['task'])}</h1>
<p class="meta">{_run_line(run)}.</p>
<h2>Episodes</h2>
<table><tr><th>seed</th><th>steps</th><th>return</th><th>intrinsic return</th><th>{escape(metric)}</th>
<th class="text">most frequent {escape(label)}</th><th>animation</th></tr>{rows}</table>
<h2>Most frequent {escape(label)}s over all episodes</h2>
{caption_table(captions, limit, label)}
<h2>Benchmark metrics of these episodes</h2>
<table>{summary}</table>"""
    return _page(f"{run['method']} on {run['task']}", body)


def _run_line(run: Mapping[str, Any]) -> str:
    return (f"Run <code>{escape(run['run_dir'])}</code>, checkpoint <code>{escape(run['checkpoint'])}</code> "
            f"({run['env_steps']:,} env steps), actions {escape(run['action_selection'])}")
