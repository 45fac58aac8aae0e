"""Studies: a shipped sweep plus the analysis, table, plots and page of one classic
experiment of the field. `millinet study NAME` runs one."""

from millinet.studies import dense, e2e, l4s, lower_layer, milliproxy, mptcp, multiflow, spep, train, urban, web

STUDIES = {"dense": dense, "e2e": e2e, "l4s": l4s, "lower-layer": lower_layer, "milliproxy": milliproxy, "mptcp": mptcp, "multiflow": multiflow, "spep-emulation": spep, "train": train, "urban": urban, "web": web}

__all__ = ["STUDIES", "dense", "e2e", "l4s", "lower_layer", "milliproxy", "mptcp", "multiflow", "spep", "train", "urban", "web"]
