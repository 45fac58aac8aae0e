"""Studies: a shipped sweep plus the analysis, table, plots and page of one classic
experiment of the field. `millinet study NAME` runs one."""

from millinet.studies import milliproxy, mptcp, train

STUDIES = {"milliproxy": milliproxy, "mptcp": mptcp, "train": train}

__all__ = ["STUDIES", "milliproxy", "mptcp", "train"]
