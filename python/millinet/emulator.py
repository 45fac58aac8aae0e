"""Running a scenario in the emulator: real Linux TCP in network namespaces, through a
userspace link driven by the simulator's own channel and RAN models (docs/emulator.md)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from millinet import _core
from millinet._core import ScenarioError
from millinet.catalog import scenario_path
from millinet.runner import Overrides, RunResult, override_list, record


def emulate(
    scenario: str | Path,
    seed: int | None = None,
    overrides: Overrides = None,
    out: str | Path | None = None,
    pcap: Iterable[str] | None = None,
    client: str = "own",
    telemetry: str | Path | None = None,
    progress: Callable[[float, float], None] | None = None,
    command: Sequence[str] | None = None,
    server: str | None = None,
) -> RunResult:
    """Emulates `scenario` (a shipped name or a path to a TOML file) in real time, as root.

    Arguments and result as `millinet.run` (`pcap` names hosts — nodes where a flow starts
    or ends — to capture at, with tcpdump on their device; `client="iperf3"` runs iperf3 at both ends instead of the
    project's endpoints: goodput and the sender's cwnd/RTT per 0.1 s, no RTO count;
    `telemetry` is a Unix datagram socket the UEs' telemetry is sent to every
    `proxy.t_info_s`, `proxy.d_info_s` after sampling, docs/telemetry.md); the summary has an `emulator` section saying how
    late the link ever was. A scenario the emulator cannot host raises ScenarioError naming
    the field; Ctrl-C stops the emulation, removes the testbed and raises KeyboardInterrupt.

    With `command` (program and arguments) the user's own programs replace the scenario's
    flows: `command` runs in the UE's namespace (flow 0's `dst`) from the channel's time 0
    until it exits or the run reaches `duration_s`; `server`, a shell command line, runs in
    the server's (flow 0's `src`) and must listen within 10 s before `command` starts. Both
    get MILLINET_SERVER and MILLINET_UE (addresses) and MILLINET_SCENARIO. The summary's
    `flows` are then the connections the link carried, and `programs.exit_status` the
    command's (124 when the run reached its duration first), docs/emulator.md.
    """
    pcap_nodes = list(pcap or [])
    if pcap_nodes and out is None:
        raise ScenarioError("pcap capture needs an output directory (out=...)")
    path, overrides = scenario_path(scenario), override_list(overrides)

    def execute(writer):
        raw = _core.emulate(
            path, seed=seed, overrides=overrides, pcap_dir=out if pcap_nodes else None, pcap_nodes=pcap_nodes,
            client=client,
            telemetry_socket=telemetry,
            progress=progress,
            command=list(command or []),
            server=server,
        )
        writer.write(raw["series"])
        return raw

    return record(path, seed, overrides, out, execute)


def cleanup() -> list[str]:
    """Removes the namespaces of emulations that were killed; returns their names."""
    return _core.emulate_cleanup()
