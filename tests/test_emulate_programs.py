"""Users' own programs on the emulated path (`millinet emulate SCENARIO -- COMMAND`, `--server`,
`millinet shell`): real programs in namespaces this suite makes, bounded in time, always
removed."""

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

import millinet
from conftest import millinet as cli
from conftest import ok

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the emulator makes network namespaces: root only")

FILE_BYTES = 20_000_000
# Python's own HTTP server, from the standard library, in the server's namespace.
HTTP_SERVER = "exec {python} -m http.server 8000 --directory {www} >/dev/null 2>&1"


def summary_of(cwd: Path, run: str) -> dict:
    return json.loads((cwd / "runs" / run / "summary.json").read_text())


def served_file(tmp_path: Path) -> tuple[Path, str]:
    """A directory with `file.bin` of random bytes, and the file's SHA-256."""
    www = tmp_path / "www"
    www.mkdir()
    data = os.urandom(FILE_BYTES)
    (www / "file.bin").write_bytes(data)
    return www, hashlib.sha256(data).hexdigest()


def http_server(www: Path) -> str:
    return HTTP_SERVER.format(python=sys.executable, www=www)


def test_the_commands_exit_status_is_millinets(tmp_path):
    """The run ends when the command exits, with its status; a command still running at
    duration_s is ended, and millinet exits with timeout(1)'s 124."""
    result = cli("emulate", "dumbbell", "--", "sh", "-c", 'echo "$MILLINET_UE $MILLINET_SERVER"; exit 7', cwd=tmp_path)
    assert result.returncode == 7, result.stderr
    assert result.stdout.split() == ["10.0.0.3", "10.0.0.1"], "the UE's and the server's addresses"
    programs = summary_of(tmp_path, "dumbbell-1-emulated")["programs"]
    assert (programs["exit_status"], programs["ended_by"]) == (7, "command") and programs["measured_s"] < 1.0
    started = time.monotonic()
    result = cli("emulate", "dumbbell", "--set", "duration_s=1", "--", "sleep", "30", cwd=tmp_path)
    assert result.returncode == 124 and time.monotonic() - started < 10, result.stderr
    assert summary_of(tmp_path, "dumbbell-1-emulated")["programs"]["ended_by"] == "duration"


def test_curl_downloads_from_a_real_http_server_byte_for_byte_in_the_simulators_time(tmp_path):
    """curl fetches a 20 MB file from Python's HTTP server over the 200 Mbit/s dumbbell: the
    bytes hash to the file's, and the download takes the simulator's `file` application's time
    over the same scenario within 10% (curl's adds the HTTP request's round trip, 22 ms)."""
    www, digest = served_file(tmp_path)
    got = tmp_path / "got.bin"
    rate = "links.1.rate_bps=200e6"
    download = f'curl -sS -o {got} -w "%{{time_total}}" http://$MILLINET_SERVER:8000/file.bin'
    result = ok(cli("emulate", "dumbbell", "--set", rate, "--server", http_server(www), "--", "sh", "-c", download, cwd=tmp_path))
    assert hashlib.sha256(got.read_bytes()).hexdigest() == digest
    simulated = millinet.run("dumbbell", overrides=[rate, 'flows.0.app="file"', f"flows.0.file_bytes={FILE_BYTES}"])
    assert float(result.stdout) == pytest.approx(simulated.summary["flows"][0]["download_time_s"], rel=0.10)
    (connection,) = summary_of(tmp_path, "dumbbell-1-emulated")["flows"]
    assert connection["kind"] == "tcp" and connection["peer"] == "10.0.0.1:8000"
    # The payload plus at least 40 bytes of headers per 1400-byte segment.
    assert connection["to_ue"]["delivered_bytes"] >= FILE_BYTES * 1440 / 1400


def test_what_the_link_counts_per_connection_is_what_the_rlc_delivered(tmp_path):
    """Two downloads at once over the milliproxy route's cell: two connections, each with the
    RAN latency of its packets, whose bytes toward the UE add up to what the UE's RLC delivered
    (two independent counters: the link's per connection, the RAN's per UE)."""
    www, digest = served_file(tmp_path)
    both = (
        "curl -sS -o {d}/a.bin http://$MILLINET_SERVER:8000/file.bin & "
        "curl -sS -o {d}/b.bin http://$MILLINET_SERVER:8000/file.bin; wait"
    ).format(d=tmp_path)
    ok(cli("emulate", "milliproxy", "--set", 'proxy.node=""', "--server", http_server(www), "--", "sh", "-c", both, cwd=tmp_path))
    for name in ("a.bin", "b.bin"):
        assert hashlib.sha256((tmp_path / name).read_bytes()).hexdigest() == digest
    summary = summary_of(tmp_path, "milliproxy-1-emulated")
    connections = summary["flows"]
    assert len(connections) == 2 and connections[0]["ue"] != connections[1]["ue"]
    assert all(c["ran_latency_ms"]["mean"] > 0 for c in connections)
    to_ue = sum(c["to_ue"]["delivered_bytes"] for c in connections)
    assert to_ue == summary["ues"][0]["downlink"]["bytes_delivered"]
    # Nothing counted twice or lost: what entered the network was delivered, dropped, or still
    # on its way when curl exited, having read everything: toward the UE a FIN at most, from
    # it the ACKs of the last tens of milliseconds.
    on_the_way = lambda way: way["sent_bytes"] - way["delivered_bytes"] - way["dropped_bytes"]  # noqa: E731
    for c in connections:
        assert 0 <= on_the_way(c["to_ue"]) <= 3000 and 0 <= on_the_way(c["from_ue"]) <= 0.01 * c["to_ue"]["delivered_bytes"], c


def test_programs_run_as_the_user_who_ran_millinet_through_sudo(tmp_path):
    env = {**os.environ, "SUDO_UID": "65534", "SUDO_GID": "65534", "SUDO_USER": "nobody"}
    result = subprocess.run(
        [sys.executable, "-m", "millinet", "emulate", "dumbbell", "--", "id", "-u"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert result.returncode == 0 and result.stdout.strip() == "65534", result.stderr
    assert summary_of(tmp_path, "dumbbell-1-emulated")["programs"]["user"] == "nobody"


def test_a_shell_on_the_path_names_the_scenario_and_ends_with_its_status(tmp_path):
    """`millinet shell` runs the user's shell (here bash) in the UE's namespace, its prompt
    prefixed with the scenario's name; the run ends when it exits, with its status."""
    result = subprocess.run(
        [sys.executable, "-m", "millinet", "shell", "dumbbell"],
        cwd=tmp_path,
        env={**os.environ, "SHELL": "/bin/bash"},
        input='echo "on $MILLINET_UE"\nexit 5\n',
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 5, result.stderr
    assert "on 10.0.0.3" in result.stdout and "[millinet dumbbell]" in result.stderr


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        (["--server", "true"], 2, "--server"),
        (["--server", "exit 3", "--", "true"], 1, "ended (exit status 3) before it listened"),
        (["--", "/nonexistent/program"], 1, "cannot start the UE command"),
        (["--client", "iperf3", "--", "true"], 2, "client"),
    ],
)
def test_programs_that_cannot_run_are_named(tmp_path, args, status, message):
    result = cli("emulate", "dumbbell", *args, cwd=tmp_path)
    assert result.returncode == status and message in result.stderr and "Traceback" not in result.stderr, result.stderr


@contextlib.contextmanager
def emulated_sleep(tmp_path: Path, marker: str):
    """`millinet emulate dumbbell -- sh -c "sleep MARKER"` (a 30 s run, stderr piped) once the
    sleep runs in the emulation's namespaces; yields the process and a function saying whether
    the sleep or the namespaces are still there. Killed whatever happens."""
    whole, fraction = marker.split(".")
    # The shell expands the sleep's command line, which millinet's own therefore lacks.
    child = subprocess.Popen(
        [sys.executable, "-m", "millinet", "emulate", "dumbbell", "--set", "duration_s=30", "--", "sh", "-c", f"sleep $(({whole})).{fraction}"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    sleeping = lambda: subprocess.run(["pgrep", "-f", f"sleep {marker}"], capture_output=True).returncode == 0  # noqa: E731
    namespaces = lambda: list(Path("/var/run/netns").glob(f"mn-{child.pid}-*")) if Path("/var/run/netns").exists() else []  # noqa: E731
    try:
        deadline = time.monotonic() + 20
        while not sleeping() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sleeping() and namespaces(), "the command runs in the emulation's namespaces"
        yield child, lambda: sleeping() or bool(namespaces())
    finally:
        child.kill()
        subprocess.run(["pkill", "-f", f"sleep {marker}"])


def gone_within(left, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while left() and time.monotonic() < deadline:
        time.sleep(0.05)
    return not left()


def test_killing_millinet_mid_command_leaves_no_process_behind(tmp_path):
    """SIGKILL of millinet while the user's command runs: the command and the namespaces go
    (the cleanup watchdog kills what runs in them)."""
    with emulated_sleep(tmp_path, "299.25") as (child, left):
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
        assert gone_within(left, 10)


def test_iperf3_udp_above_the_capacity_is_delivered_at_the_capacity(tmp_path):
    """iperf3 sends UDP at 600 Mbit/s toward the UE of a 100 MHz cell (320 Mbit/s in LOS):
    the RLC buffer stays full, the rest is dropped, and in every second after its first (which
    holds the test's start) in which the buffer stayed backlogged iperf3's receiver gets the
    cell's rate within 3% (its 1400-byte payloads are 98% of the IP bytes the cell carries).
    iperf3 asks for a 2 MB socket buffer (`-w`; the kernel's 208 kB default is 5 ms of the
    cell). Skipped, saying so, when a second falls short and the UE's kernel dropped datagrams
    at that socket (`RcvbufErrors`): the host's receiver fell short, not the path."""
    # In LOS the walk keeps the cell at its peak rate: with the route's obstacles the rate falls
    # in the run's last second, which a 4 s average against the steady rate would miscount.
    sets = ["proxy.node=\"\"", "ues.0.blockage=\"none\"", "cells.0.bandwidth_hz=100e6", "cells.0.peak_rate_bps=320e6", "duration_s=6"]
    report, snmp = tmp_path / "iperf3.json", tmp_path / "snmp"
    # The UE namespace's UDP counters, read in it after iperf3 ends (/proc/net is per namespace).
    send = f"iperf3 -c $MILLINET_SERVER -u -b 600M -l 1400 -w 2M -t 4 -R -J > {report}; grep ^Udp: /proc/net/snmp > {snmp}"
    args = [a for s in sets for a in ("--set", s)]
    ok(cli("emulate", "milliproxy", *args, "--server", "exec iperf3 -s -1 >/dev/null", "--", "sh", "-c", send, cwd=tmp_path))
    intervals = [i["sum"] for i in json.loads(report.read_text())["intervals"]]
    ues = pd.read_parquet(tmp_path / "runs" / "milliproxy-1-emulated" / "ues.parquet")
    sending = ues[(ues["t"] > 1.0) & (ues["t"] < 4.0)]
    assert sending["rate_bps"].min() == sending["rate_bps"].max(), "the cell's rate is steady"
    # Full but when iperf3's sender stalls on a busy host (it once did long enough to empty the
    # 10 MB buffer, 250 ms of the cell): full at the median.
    assert sending["rlc_bytes"].median() > 0.95 * 10_000_000, "the RLC buffer stays full"
    assert len(intervals) == 4
    # iperf3's second k starts somewhat after the run's second k (its connection first): a
    # second is held to the rate where the buffer never emptied from k - 0.1 to k + 1.5 s.
    backlogged = [k for k in range(1, 4) if (ues[(ues["t"] > k - 0.1) & (ues["t"] < k + 1.5)]["rlc_bytes"] > 0).all()]
    assert backlogged, "no second with the buffer backlogged"
    udp = [c for c in summary_of(tmp_path, "milliproxy-1-emulated")["flows"] if c["kind"] == "udp"]
    assert len(udp) == 1 and udp[0]["to_ue"]["dropped_bytes"] > 0.3 * udp[0]["to_ue"]["sent_bytes"]
    # A receiver that a loaded host holds back overflows its socket even at 2 MB (which the
    # kernel doubles, and charges each datagram's buffers to): a second then falls short by
    # what the kernel dropped there, the host's shortfall and not the path's, and the test says
    # so. Drops alone are no shortfall: a run here dropped 165 datagrams and every second held
    # (outside the seconds counted). With the default 208 kB buffer a run here lost 15 MB,
    # another a fifth of one second's packets.
    names, values = (line.split()[1:] for line in snmp.read_text().splitlines())
    socket_drops = int(dict(zip(names, values))["RcvbufErrors"])
    expected_bps = sending["rate_bps"].iloc[0] * 1400 / (1400 + 28)
    for k in backlogged:
        if intervals[k]["bits_per_second"] < 0.97 * expected_bps and socket_drops:
            pytest.skip(f"this host's iperf3 fell behind: its socket dropped {socket_drops} datagrams (RcvbufErrors)")
        assert intervals[k]["bits_per_second"] == pytest.approx(expected_bps, rel=0.03), intervals[k]


def test_ping_crosses_the_path_and_measures_its_round_trip(tmp_path):
    """ICMP is carried as any traffic: ping's five echoes over the milliproxy route are all
    answered after the wires' 2 x (10 + 1) ms plus the RAN's slots (empty queues, LOS), and
    the link records them as one icmp connection of 5 x 84 bytes each way."""
    result = ok(cli("emulate", "milliproxy", "--", "sh", "-c", "ping -n -c 5 -i 0.2 $MILLINET_SERVER", cwd=tmp_path))
    assert "5 received" in result.stdout
    rtt_min, rtt_avg, rtt_max = (float(x) for x in result.stdout.split("rtt min/avg/max/mdev = ")[1].split("/")[:3])
    assert 22.0 <= rtt_min and rtt_max < 26.0, result.stdout
    (echo,) = summary_of(tmp_path, "milliproxy-1-emulated")["flows"]
    assert echo["kind"] == "icmp" and echo["to_ue"]["delivered_bytes"] == echo["from_ue"]["delivered_bytes"] == 5 * 84
    assert echo["ran_latency_ms"]["mean"] > 0


def test_headless_chromium_loads_pages_over_the_route_in_physical_time(tmp_path):
    """`millinet web` pages served over HTTP/1.1 from the server's namespace, loaded by headless
    Chromium in the UE's: each page's own navigation timing is there, the HTML's response
    ends no sooner than two round trips of the wires' 22 ms (connection, then request), and
    48 objects take longer to load than 4 small ones."""
    site = tmp_path / "site"
    ok(cli("web", "site", site))
    millinet_cli = f"{sys.executable} -m millinet"
    pages = ("few-small", "many-small")
    loads = "; ".join(f"{millinet_cli} web load http://$MILLINET_SERVER:8000/{page}/index.html" for page in pages)
    result = ok(cli("emulate", "milliproxy", "--server", f"exec {millinet_cli} web serve {site}", "--", "sh", "-c", loads, cwd=tmp_path))
    timings = dict(zip(pages, (json.loads(line) for line in result.stdout.splitlines())))
    for timing in timings.values():
        assert 44.0 <= timing["response_end_ms"] <= timing["dom_content_loaded_ms"] <= timing["load_ms"], timings
    assert timings["many-small"]["load_ms"] > timings["few-small"]["load_ms"], timings


def test_the_split_proxy_relays_a_programs_connections(tmp_path):
    """With the split proxy at the PGW, the UE's command is told the proxy's address as the
    server's: the proxy relays each port the server command listens on, so curl's download
    crosses two connections, UE-proxy and proxy-server, and arrives byte for byte."""
    www, digest = served_file(tmp_path)
    got = tmp_path / "got.bin"
    download = f"curl -sS -o {got} http://$MILLINET_SERVER:8000/file.bin && echo $MILLINET_SERVER"
    sets = ["--set", "proxy.node=pgw", "--set", "proxy.kind=split"]
    result = ok(cli("emulate", "milliproxy", *sets, "--server", http_server(www), "--", "sh", "-c", download, cwd=tmp_path))
    assert result.stdout.strip() == "10.0.0.2", "the PGW's address"
    assert hashlib.sha256(got.read_bytes()).hexdigest() == digest
    summary = summary_of(tmp_path, "milliproxy-1-emulated")
    assert summary["proxy"]["kind"] == "split" and summary["proxy"]["bytes_relayed_toward_ue"] > FILE_BYTES
    legs = {(c["ue"].split(":")[0], c["peer"]): c["to_ue"]["delivered_bytes"] for c in summary["flows"]}
    assert set(legs) == {("10.0.0.4", "10.0.0.2:8000"), ("10.0.0.2", "10.0.0.1:8000")}, legs
    assert all(delivered > FILE_BYTES for delivered in legs.values())


def test_a_quic_download_crosses_the_route_beside_tcp(tmp_path):
    """HTTP/3 over aioquic (`millinet quic`) on the milliproxy route past its obstacles, next to
    curl over TCP on the same seed: both files arrive byte for byte, and the link carries the
    QUIC download as one UDP connection of at least the file's bytes toward the UE."""
    www = tmp_path / "www"
    www.mkdir()
    data = os.urandom(5_000_000)
    (www / "file.bin").write_bytes(data)
    millinet_cli = f"{sys.executable} -m millinet"
    got = tmp_path / "quic.bin"
    fetch = f"{millinet_cli} quic get https://$MILLINET_SERVER:4433/file.bin -o {got}"
    result = ok(cli("emulate", "milliproxy", "--server", f"exec {millinet_cli} quic serve {www}", "--", "sh", "-c", fetch, cwd=tmp_path))
    assert got.read_bytes() == data
    assert json.loads(result.stdout)["time_s"] >= 0.044, "at least the handshake's and the request's round trips"
    (udp,) = [c for c in summary_of(tmp_path, "milliproxy-1-emulated")["flows"] if c["kind"] == "udp"]
    assert udp["peer"] == "10.0.0.1:4433" and udp["to_ue"]["delivered_bytes"] > len(data)
    tcp_got = tmp_path / "tcp.bin"
    download = f"curl -sS -o {tcp_got} http://$MILLINET_SERVER:8000/file.bin"
    ok(cli("emulate", "milliproxy", "--server", http_server(www), "--", "sh", "-c", download, cwd=tmp_path))
    assert tcp_got.read_bytes() == data


def test_a_command_killed_by_a_signal_ends_the_run_with_the_shells_status(tmp_path):
    """SIGKILL of the command: the run ends at once and millinet exits with 128 + 9, as a shell
    reports it; nothing of it is left."""
    result = cli("emulate", "dumbbell", "--", "sh", "-c", "kill -9 $$", cwd=tmp_path)
    assert result.returncode == 137, result.stderr
    programs = summary_of(tmp_path, "dumbbell-1-emulated")["programs"]
    assert (programs["exit_status"], programs["ended_by"]) == (137, "command")


def test_ctrl_c_stops_the_run_and_leaves_no_process_behind(tmp_path):
    """SIGINT to millinet (Ctrl-C) mid-command: one line saying so, no traceback, and neither
    the command nor the namespaces remain."""
    with emulated_sleep(tmp_path, "298.75") as (child, left):
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=20)
        assert child.returncode != 0 and "Traceback" not in stderr, stderr
        assert gone_within(left, 10)
