"""The HTML report: `build_report(run_dirs, out)` reads run folders (`collect`), draws the plots
(`plots`), shapes funnels and trajectories for the page (`funnels`, `trajectories`) and renders
`page.html.j2` (`build`).
"""

from repogym.evaluate.report.build import ReportResult, build_report

__all__ = ["ReportResult", "build_report"]
