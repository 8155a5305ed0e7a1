"""Layer 6, reports of a battery: the terminal, HTML, JSON and JUnit reports, merging shards, comparing two runs."""

from chaoskit.report._compare import Comparison, compare_results, render_comparison
from chaoskit.report._html import render_html, write_html
from chaoskit.report._json import load_results, write_json
from chaoskit.report._junit import write_junit
from chaoskit.report._merge import merge_results
from chaoskit.report._text import render_text

__all__ = [
    "Comparison",
    "compare_results",
    "load_results",
    "merge_results",
    "render_comparison",
    "render_html",
    "render_text",
    "write_html",
    "write_json",
    "write_junit",
]
