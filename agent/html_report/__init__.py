"""report.html for a run and for a bench: one self-contained file (inline CSS, inline SVG charts,
a few lines of inline script, no network), rendered from the files the run or bench wrote.

Run (`runs/<id>/report.html`, `write_run_html`): the result, a chart of each attempt's speedup
over eager and over torch.compile with the best so far (on a CPU run, where nothing is timed, a
strip of each attempt's verdict instead), the attempts table, and per attempt: the feedback it
produced, the prompt that drafted it, the diff from the previous attempt's kernel, and for a timed
one the per-kernel profile breakdown and its place on the roofline.

Bench (`OUT/report.html`, `write_bench_html`): settings, pass@k and fast_p charts, the best speedup
per problem, the per-problem table (sortable) and the notes.

Charts are drawn here, as SVG, so the file opens offline and in any browser; the script only sorts
tables and records what was drawn (`data-charts`, `data-charts-drawn` on <body>, and JS errors in
`data-errors`) for the headless-browser test.
"""

from agent.html_report.bench import render_bench, write_bench_html
from agent.html_report.charts import Chart, nice_ticks
from agent.html_report.run import render_run, roofline_chart, write_run_html

__all__ = [
    "Chart",
    "nice_ticks",
    "render_bench",
    "render_run",
    "roofline_chart",
    "write_bench_html",
    "write_run_html",
]
