"""millinet-proxyd's sealed telemetry as an edge site deploys it (docs/telemetry.md, "Over the
network"): a gNB seals each record with HMAC-SHA256 under the key file it shares with the
daemon and sends it over UDP. The records here are sealed by Python's own `hmac` and `struct`
from the documented layout, not by the project's Rust, so the test holds the daemon to the
document. A good record is applied; a forged, a replayed and a stale one are counted and never
applied. The daemon runs in a network namespace the test makes and removes."""

import hashlib
import hmac
import os
import re
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DAEMON = ROOT / "target" / "release" / "millinet-proxyd"
PORT, METRICS = 9470, "127.0.0.1:9464"

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None, reason="needs root and ip(8) for a network namespace")


def record(ue: str, t_ns: int, rlc_bytes: int, rate_bps: float, sinr_db: float) -> bytes:
    """A version-1 telemetry record (docs/telemetry.md)."""
    return b"MNTL" + bytes([1, 0, 0, 0]) + bytes(map(int, ue.split("."))) + struct.pack(">QQdd", t_ns, rlc_bytes, rate_bps, sinr_db)


def seal(key: bytes, publisher: int, sequence: int, inner: bytes) -> bytes:
    head = b"MNTS" + bytes([1, 0, 0, 0]) + struct.pack(">IQ", publisher, sequence) + inner
    return head + hmac.new(key, head, hashlib.sha256).digest()


def in_namespace(ns: str, code: str, *args: str) -> str:
    result = subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    return result.stdout


SEND = f"""
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for datagram in sys.argv[1:]:
    s.sendto(bytes.fromhex(datagram), ("127.0.0.1", {PORT}))
"""
METRICS_TEXT = f"import urllib.request; print(urllib.request.urlopen('http://{METRICS}/metrics', timeout=5).read().decode())"


def metric(text: str, name: str) -> float:
    return float(re.search(rf"^millinet_proxy_{name} (\S+)$", text, re.M).group(1))


@pytest.fixture
def daemon(tmp_path):
    if not DAEMON.exists():
        pytest.fail(f"{DAEMON} missing: `make build` builds it")
    ns = f"mn-tel-{os.getpid()}"
    key = os.urandom(32)
    key_file = tmp_path / "telemetry.key"
    key_file.write_bytes(key)
    key_file.chmod(0o600)
    subprocess.run(["ip", "netns", "add", ns], check=True)
    log = open(tmp_path / "daemon.log", "w")
    child = None
    try:
        subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True)
        child = subprocess.Popen(
            ["ip", "netns", "exec", ns, DAEMON, "--ue-net", "10.45.0.0/16", "--queue", "3", "--metrics", METRICS,
             "--telemetry-udp", f"127.0.0.1:{PORT}", "--telemetry-key", key_file, "--set", "proxy.telemetry_max_age_s=1"],
            stdout=log, stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 10
        while "metrics http" not in (tmp_path / "daemon.log").read_text():
            assert child.poll() is None and time.monotonic() < deadline, (tmp_path / "daemon.log").read_text()
            time.sleep(0.05)
        yield ns, key
    finally:
        if child is not None:
            child.terminate()
            child.wait(timeout=10)
        log.close()
        subprocess.run(["ip", "netns", "del", ns], check=False)


def test_good_records_apply_and_forged_replayed_and_stale_ones_never_do(daemon):
    ns, key = daemon
    now = time.clock_gettime_ns(time.CLOCK_REALTIME)
    good = seal(key, 7, 1, record("10.45.0.1", now, 1000, 1e9, 20.0))
    forged = seal(os.urandom(32), 7, 2, record("10.45.0.2", now, 1000, 1e9, 20.0))
    altered = bytearray(seal(key, 7, 3, record("10.45.0.3", now, 1000, 1e9, 20.0)))
    altered[40] ^= 1  # the UE's record, after sealing
    stale = seal(key, 7, 4, record("10.45.0.4", now - 5_000_000_000, 1000, 1e9, 20.0))
    other_publisher = seal(key, 8, 1, record("10.45.0.5", now, 1000, 1e9, 20.0))
    in_namespace(ns, SEND, *(d.hex() for d in (good, forged, bytes(altered), good, stale, other_publisher, good[:95])))
    deadline = time.monotonic() + 5
    while True:
        text = in_namespace(ns, METRICS_TEXT)
        if metric(text, "telemetry_malformed_total") >= 1 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert metric(text, "telemetry_forged_total") == 2, text  # another key; a byte altered
    assert metric(text, "telemetry_replayed_total") == 1, text  # good, sent again
    assert metric(text, "telemetry_malformed_total") == 1, text  # cut short
    # Authentic and new: the good one, the stale one, the other publisher's first.
    assert metric(text, "telemetry_received_total") == 3, text
    assert metric(text, "telemetry_late_total") == 1, text  # 5 s old against a 1 s limit
    assert metric(text, "telemetry_ues") == 2, "records held: the good one's UE and the other publisher's"
    assert 0 <= metric(text, "telemetry_age_seconds") < 5, "the newest record's age, on the daemon's own clock"
