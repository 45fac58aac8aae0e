"""The sweep's progress as a user sees it: on an 80-column terminal one live line whose counts
and ETA are never cut (a long sweep name gives way), and in a log (stderr not a terminal)
plain lines with the same counts, the last one saying every run is done."""

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import time

SWEEP = 'description = "progress"\nscenario = "dumbbell"\nseeds = 12\n[set]\nduration_s = 0.5\n'
# Long enough that name, bar and counts cannot all fit in 80 columns.
LONG_NAME = "a-sweep-whose-name-is-far-too-long-to-fit-beside-its-counts-on-one-line"
COUNTS = re.compile(r"(\d+)/12 runs, (\d+) failed, (?:-|[\d.]+) runs/s, ETA (?:-:--:--|\d+:\d\d:\d\d)$")


def test_a_terminal_of_80_columns_shows_whole_counts_and_eta(tmp_path):
    sweep = tmp_path / f"{LONG_NAME}.toml"
    sweep.write_text(SWEEP)
    primary, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "TERM")} | {"TERM": "xterm-256color"}
    child = subprocess.Popen(
        [sys.executable, "-m", "millinet", "sweep", sweep, "--out", tmp_path / "store", "--workers", "1"],
        stdin=secondary, stdout=secondary, stderr=secondary, env=env, close_fds=True,
    )
    os.close(secondary)
    screen = b""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            chunk = os.read(primary, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        screen += chunk
    assert child.wait(timeout=10) == 0, screen.decode(errors="replace")
    os.close(primary)
    # What the terminal showed: each redraw of the live line, without its control sequences.
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen.decode())
    frames = [f.rstrip() for f in re.split(r"[\r\n]+", text) if "runs/s" in f]
    assert frames, text
    for frame in frames:
        assert len(frame) <= 80, frame
        assert COUNTS.search(frame), frame
        assert "…" in frame, "the name gives way, not the counts"
    assert COUNTS.search(frames[-1]).group(1) == "12"


def test_a_log_gets_lines_each_tenth_with_whole_counts(tmp_path):
    sweep = tmp_path / f"{LONG_NAME}.toml"
    sweep.write_text(SWEEP)
    result = subprocess.run(
        [sys.executable, "-m", "millinet", "sweep", sweep, "--out", tmp_path / "store", "--workers", "1"],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if "runs/s" in line]
    # 12 runs: a line at each tenth reached (runs 2, 3, 4, 5, 6, 8, 9, 10, 11, 12), none cut.
    done = [int(COUNTS.search(line).group(1)) for line in lines]
    assert all(line.startswith(f"{LONG_NAME}: ") for line in lines), lines
    assert done == sorted(set(done)) and done[-1] == 12 and len(done) >= 9, lines
    assert "ETA 0:00:00" in lines[-1]
    # Quiet: nothing.
    quiet = subprocess.run(
        [sys.executable, "-m", "millinet", "sweep", sweep, "--out", tmp_path / "store2", "--workers", "1", "--quiet"],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120,
    )
    assert quiet.returncode == 0 and "runs/s" not in quiet.stderr, quiet.stderr
