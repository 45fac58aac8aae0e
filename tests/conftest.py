"""Shared helpers: the `millinet` command run as a user runs it, one short run, and a quick
study with its store."""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from millinet import store

# One simulated second keeps every run in the suite fast.
SHORT = ["--set", "duration_s=1"]


def millinet(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Runs `millinet ARGS...` in a child process; its output is captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "millinet", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )


def ok(result: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert result.returncode == 0, f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    return result


@pytest.fixture(scope="session")
def short_run(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """`millinet run dumbbell` for one second into the default run directory."""
    cwd = tmp_path_factory.mktemp("cwd")
    result = ok(millinet("run", "dumbbell", *SHORT, cwd=cwd))
    return cwd / "runs" / "dumbbell-1", result


def quick_study(tmp_path_factory, name: str) -> tuple[Path, str, dict]:
    """`millinet study NAME --quick` into a fresh directory: (its directory, what it
    printed, its summary.json)."""
    out = tmp_path_factory.mktemp(name) / "quick"
    result = ok(millinet("study", name, "--quick", "--out", out))
    return out, result.stdout, json.loads((out / "summary.json").read_text())


def assert_quick_page(study: tuple[Path, str, dict], name: str, titles: list[str]) -> str:
    """The quick study NAME printed each of `titles` and wrote a self-contained page (nothing
    fetched from the network) that says how to reproduce it; returns the page."""
    out, stdout, summary = study
    assert all(title in stdout for title in titles), stdout
    page = (out / "index.html").read_text()
    command = f"millinet study {name} --quick"
    assert summary["command"] == command and f"Reproduce: {command}." in page
    assert "src='http" not in page
    return page


def assert_reruns_identically(run_dir: Path, again: Path) -> None:
    """`millinet run RUN_DIR/scenario.toml` gives the run's time series byte for byte and its
    summary.json but for the wall-clock fields and the scenario's name (the file's, here)."""
    ok(millinet("run", run_dir / "scenario.toml", "--out", again, "--quiet"))
    tables = sorted(path.name for path in run_dir.glob("*.parquet"))
    assert tables and tables == sorted(path.name for path in again.glob("*.parquet"))
    for name in tables:
        assert (run_dir / name).read_bytes() == (again / name).read_bytes(), name
    first, second = (json.loads((d / "summary.json").read_text()) for d in (run_dir, again))
    for summary in (first, second):
        summary.pop("scenario")
        summary["sim"].pop("wall_s")
        summary["sim"].pop("events_per_s")
    assert first == second


@pytest.fixture(scope="module")
def runs(study):
    """The results table of the store of the test module's own `study` fixture (quick_study)."""
    out, _, _ = study
    return store.load(out / "store")


def saved_table(out: Path, run_key: str, table: str) -> pd.DataFrame:
    """One saved time-series table of a run in a study's store."""
    return pq.read_table(store.run_dir(out / "store", run_key) / f"{table}.parquet").to_pandas()


# Headless Chromium's flags: no GPU, no sandbox (tests run as root), its log on stderr, where
# each console message of the page (console.error, an uncaught exception) is a CONSOLE line.
CHROMIUM_FLAGS = ["--headless", "--disable-gpu", "--no-sandbox", "--enable-logging=stderr", "--v=0", "--hide-scrollbars"]
BROWSER_TIMEOUT_S = 60


def chromium() -> str:
    """Debian's chromium (`make deps` installs it); in CI its absence is a failure, elsewhere
    the test is skipped, saying how to install it."""
    path = shutil.which("chromium")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed although `make deps` installs it (APT_PACKAGES)")
        pytest.skip("chromium is not installed: `make deps` installs Debian's chromium")
    return path


def in_browser(page: Path | str, *flags: str) -> subprocess.CompletedProcess:
    """Opens `page` (a file, or a URL given as a string) in headless Chromium with `flags` and
    a fresh profile directory, removed afterwards; the browser's whole process group is killed
    if it takes longer than BROWSER_TIMEOUT_S, which fails the test."""
    url = page if isinstance(page, str) else page.resolve().as_uri()
    with tempfile.TemporaryDirectory(prefix="millinet-chromium-") as profile:
        args = [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *flags, url]
        browser = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, start_new_session=True)
        try:
            stdout, stderr = browser.communicate(timeout=BROWSER_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(browser.pid, signal.SIGKILL)
            browser.communicate()
            pytest.fail(f"chromium took over {BROWSER_TIMEOUT_S} s on {page}")
    return subprocess.CompletedProcess(args, browser.returncode, stdout, stderr)


def console_messages(stderr: str) -> list[str]:
    """The page's console messages in Chromium's log (its own errors, such as a missing D-Bus,
    are not the page's)."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]
