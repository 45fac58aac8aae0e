"""Reports of a result store (docs/sweeps.md): statistics per parameter point, paired
ratios of arms, and a Markdown + self-contained HTML report.

    import millinet.store, millinet.report
    df = millinet.store.load("runs/quick")
    millinet.report.aggregate(df, ["flows.0.goodput_bps"], by=["flows.0.cc", "arm"])
    millinet.report.paired_ratios(df, "gnb-vs-none", "flows.0.ran_latency_ms.mean")
    millinet.report.write_report("runs/quick")          # runs/quick/report/report.html
"""

from millinet.report.page import write_report
from millinet.report.stats import aggregate, paired_ratios

__all__ = ["aggregate", "paired_ratios", "write_report"]
