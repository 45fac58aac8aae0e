"""The simulator against real Linux TCP through the emulator (docs/validation.md): the CI
subset of `make crosscheck-linux`.

NewReno (the kernel's `reno`), 100 Mbit/s, queue 1 BDP, constant rate, 5 s, the same scenario
on both sides. Tolerances and why:
- goodput within 5%: both keep the bottleneck busy.
- retransmitted segments within 20% (or 10): drop-tail drops of the same slow-start overshoot
  and probes; Linux counts a few more (its retransmissions of the tail, RACK).
- RTOs within 1; mean RTT within 10% (queueing follows the same cwnd trajectory; Linux's RTT is
  its smoothed estimate sampled every 10 ms, the simulator's the mean of its samples).
- cwnd correlation above 0.7: the same sawtooth in phase.
- the same number of ssthresh reductions (multiplicative decreases). Linux's recovery from
  the slow-start overshoot halves twice, as the simulator does, but in about one run in twelve
  on this host it halves a third time (a retransmission lost in the queue the overshoot
  filled, found after recovery; which one depends on the host's timing), and a 5 s run then
  loses 12% of its goodput. That run is a different trajectory, not a fault of either side:
  the case is run once more, and only then, and the second run must agree on everything.
The 0.1 BDP case is left to the full table: its 19-packet queue makes Linux's goodput vary
from run to run by ±10% (which segment a burst loses depends on the host's timing), more than a
tolerance that could still catch a fault. CUBIC is left to the full table too: Linux's HyStart leaves slow start before the overshoot that
millinet's CUBIC (RFC 9438, no HyStart) pays with hundreds of retransmissions, and Linux keeps
CUBIC's Reno-friendly increase at 0.53 segment per RTT where RFC 9438 raises it to 1.
"""

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from crosscheck import linux, run  # noqa: E402

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the emulator makes network namespaces: root only")


def test_the_simulator_agrees_with_linux():
    case = run.Case("newreno", 1e8, False, 1.0, 1400, 5.0)
    row = linux.run_both(case)
    if row.reductions[0] != row.reductions[1]:
        row = linux.run_both(case)
    table = run.format_table([row], reference="Linux") + "\n" + row.note
    assert row.reductions[0] == row.reductions[1], table
    assert abs(row.diff("goodput_bps")) <= 0.05, table
    assert abs(row.millinet["retransmits"] - row.reference["retransmits"]) <= max(10, 0.2 * row.reference["retransmits"]), table
    assert abs(row.millinet["rtos"] - row.reference["rtos"]) <= 1, table
    assert abs(row.diff("rtt_ms_mean")) <= 0.10, table
    assert row.cwnd_corr >= 0.7, table
