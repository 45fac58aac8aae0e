"""The `millinet` command line."""

import json
import os
import sys
import tempfile
from pathlib import Path

import click
from rich import box
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

import millinet
from millinet import _core, outputs
from millinet import web as webpages
from millinet._core import ScenarioError
from millinet._toml import tomllib


class UsageProblem(Exception):
    """A mistake on the command line that the CLI itself detects (exit status 2)."""


def main() -> None:
    """Entry point: user mistakes become one `error:` line on stderr, never a traceback."""
    try:
        cli()
    except (ScenarioError, UsageProblem) as e:
        _fail(e, 2)
    except OSError as e:
        _fail(e, 1)


def _fail(error: Exception, status: int) -> None:
    message = " ".join(str(error).split("\n")).removeprefix("error: ")
    click.echo(f"error: {message}", err=True)
    sys.exit(status)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="millinet")
def cli() -> None:
    """millinet: packet-level simulation of TCP over 5G mmWave links."""


scenario_argument = click.argument("scenario")
seed_option = click.option("--seed", type=int, help="Overrides the scenario's seed.")
set_option = click.option(
    "--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Overrides a scenario field, e.g. flows.0.cc=newreno."
)


@cli.command()
@scenario_argument
@seed_option
@set_option
@click.option("--out", type=click.Path(path_type=Path), help="Run directory [default: runs/<scenario>-<seed>].")
@click.option("--pcap", default="", metavar="NODES", help="Comma-separated node names to capture into the run directory.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def run(scenario: str, seed: int | None, overrides: tuple[str, ...], out: Path | None, pcap: str, quiet: bool) -> None:
    """Runs SCENARIO (a shipped name or a .toml file) and prints its summary."""
    resolved, out = _run_dir(scenario, seed, overrides, out, "")
    with progress_bar("simulated", "{task.completed:.3f} / {task.total:.3f} s", quiet) as bar:
        task = bar.add_task("run", total=resolved["duration_s"])
        result = millinet.run(
            scenario,
            seed=seed,
            overrides=overrides,
            out=out,
            pcap=_nodes(pcap),
            progress=lambda sim_s, total_s: bar.update(task, completed=sim_s, total=total_s),
        )
    Console().print(summary_table(result.summary))
    sim = result.summary["sim"]
    click.echo(
        f"simulated {sim['sim_time_s']:.3f} s in {sim['wall_s']:.2f} s wall, "
        f"{sim['events']:,} events ({sim['events_per_s'] / 1e6:.2f} M events/s)"
    )
    click.echo(f"output: {out}")


@cli.command()
@click.argument("scenario", required=False)
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="[-- COMMAND [ARGS]...]")
@seed_option
@set_option
@click.option("--server", "server_command", metavar="'COMMAND'", help="With -- COMMAND: a shell command run first in the server's namespace, which must listen within 10 s.")
@click.option("--out", type=click.Path(path_type=Path), help="Run directory [default: runs/<scenario>-<seed>-emulated].")
@click.option("--pcap", default="", metavar="NODES", help="Comma-separated flow endpoints (e.g. server,ue) to capture into the run directory.")
@click.option("--client", type=click.Choice(["own", "iperf3"]), default="own", help="The endpoints: millinet's own (TCP_INFO every step) or iperf3.")
@click.option("--telemetry", type=click.Path(path_type=Path), help="Unix datagram socket to send the UE's telemetry to (docs/telemetry.md).")
@click.option("--cleanup", is_flag=True, help="Only remove what killed emulations left behind.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
def emulate(
    scenario: str | None,
    command: tuple[str, ...],
    seed: int | None,
    overrides: tuple[str, ...],
    server_command: str | None,
    out: Path | None,
    pcap: str,
    client: str,
    telemetry: Path | None,
    cleanup: bool,
    quiet: bool,
) -> None:
    """Emulates SCENARIO with real Linux TCP (root): a namespace for each host, and a userspace
    link driven in real time by the simulator's channel and RAN models. After `--`, COMMAND
    runs in the UE's namespace instead of the scenario's flows, and millinet exits with its
    status (docs/emulator.md, "Your own programs")."""
    if cleanup:
        removed = millinet.emulator.cleanup()
        click.echo(f"removed {len(removed)} namespaces" + (": " + " ".join(removed) if removed else ""))
        return
    if scenario is None:
        raise UsageProblem("missing argument SCENARIO (or --cleanup)")
    if server_command is not None and not command:
        raise UsageProblem("--server: a server command runs beside a UE command; give it after --")
    if command and client != "own":
        raise UsageProblem(f"--client {client} and -- COMMAND: the command replaces the endpoints; give one")
    resolved, out = _run_dir(scenario, seed, overrides, out, "-emulated")
    if command:
        sys.exit(run_programs(scenario, list(command), server_command, seed, overrides, out, _nodes(pcap), telemetry))
    with progress_bar("emulated", "{task.completed:.1f} / {task.total:.1f} s", quiet) as bar:
        task = bar.add_task("emulate", total=resolved["duration_s"])
        result = millinet.emulate(
            scenario,
            seed=seed,
            overrides=overrides,
            out=out,
            pcap=_nodes(pcap),
            client=client,
            telemetry=telemetry,
            progress=lambda elapsed_s, total_s: bar.update(task, completed=elapsed_s, total=total_s),
        )
    Console().print(summary_table(result.summary))
    link = result.summary["emulator"]
    click.echo(
        f"real Linux TCP (kernel {link['kernel']}), capacity scale {link['capacity_scale']:g}; the link was at most "
        f"{link['max_lateness_ms']:.2f} ms late, {link['frames_over_1ms_late']:,} frames over 1 ms late"
    )
    click.echo(f"output: {out}")


def run_programs(
    scenario: str,
    command: list[str],
    server_command: str | None,
    seed: int | None,
    overrides: tuple[str, ...],
    out: Path,
    pcap_nodes: list[str],
    telemetry: Path | None,
) -> int:
    """Runs the user's programs over the emulated path into run directory `out`; reports on
    stderr (the command owns the terminal and standard output) and returns the command's
    exit status."""
    result = millinet.emulate(
        scenario,
        seed=seed,
        overrides=overrides,
        out=out,
        pcap=pcap_nodes,
        telemetry=telemetry,
        command=command,
        server=server_command,
    )
    console = Console(stderr=True)
    console.print(connections_table(result.summary))
    programs, link = result.summary["programs"], result.summary["emulator"]
    ended = "the run reached duration_s" if programs["ended_by"] == "duration" else "the command exited"
    console.print(
        f"{ended} after {programs['measured_s']:.2f} s (exit status {programs['exit_status']}); "
        f"the link was at most {link['max_lateness_ms']:.2f} ms late\noutput: {out}",
        highlight=False,
    )
    return programs["exit_status"]


def connections_table(summary: dict) -> Table:
    """Per connection the programs made: its ends and what the link carried each way."""
    table = Table(box=box.SIMPLE_HEAD)
    for header in ("conn", "UE", "peer", "to UE MB", "from UE MB", "dropped MB", "RAN latency ms"):
        table.add_column(header, justify="right")
    for flow in summary["flows"]:
        dropped = flow["to_ue"]["dropped_bytes"] + flow["from_ue"]["dropped_bytes"]
        table.add_row(
            f"{flow['id']} {flow['kind']}",
            flow["ue"],
            flow["peer"],
            f"{flow['to_ue']['delivered_bytes'] / 1e6:.3f}",
            f"{flow['from_ue']['delivered_bytes'] / 1e6:.3f}",
            f"{dropped / 1e6:.3f}",
            _cell(flow["ran_latency_ms"].get("mean"), ".2f"),
        )
    return table


@cli.command()
@scenario_argument
@seed_option
@set_option
@click.option("--server", "server_command", metavar="'COMMAND'", help="A shell command run first in the server's namespace, which must listen within 10 s.")
@click.option("--out", type=click.Path(path_type=Path), help="Run directory [default: runs/<scenario>-<seed>-emulated].")
def shell(scenario: str, seed: int | None, overrides: tuple[str, ...], server_command: str | None, out: Path | None) -> None:
    """Opens an interactive shell in the UE's namespace of SCENARIO's emulated path (root);
    the prompt names the scenario. The run lasts until the shell exits, or at most an hour
    unless `--set duration_s=...` says otherwise (docs/emulator.md, "Your own programs")."""
    if not any(o.split("=", 1)[0].strip() == "duration_s" for o in overrides):
        overrides = (*overrides, f"duration_s={SHELL_DURATION_S}")
    name = Path(scenario).stem
    user_shell = os.environ.get("SHELL") or "/bin/sh"
    with tempfile.TemporaryDirectory() as directory:
        if Path(user_shell).name == "bash":
            # bash takes its prompt from its start-up files: read the usual ones, then prefix.
            rcfile = Path(directory) / "bashrc"
            rcfile.write_text(
                "[ -f /etc/bash.bashrc ] && . /etc/bash.bashrc\n[ -f ~/.bashrc ] && . ~/.bashrc\n"
                f'PS1="[millinet {name}] $PS1"\n'
            )
            os.chmod(directory, 0o755)
            rcfile.chmod(0o644)
            command = [user_shell, "--rcfile", str(rcfile), "-i"]
        else:
            os.environ["PS1"] = f"[millinet {name}] $ "
            command = [user_shell, "-i"]
        out = _run_dir(scenario, seed, overrides, out, "-emulated")[1]
        sys.exit(run_programs(scenario, command, server_command, seed, overrides, out, [], None))


# An interactive shell's run lasts this long unless the user sets duration_s.
SHELL_DURATION_S = 3600


def _run_dir(scenario: str, seed: int | None, overrides: tuple[str, ...], out: Path | None, suffix: str) -> tuple[dict, Path]:
    """The resolved scenario, and its run directory: OUT, or runs/<scenario>-<seed><suffix>."""
    resolved = tomllib.loads(millinet.resolve(scenario, seed, overrides))
    return resolved, out or Path("runs") / f"{Path(scenario).stem}-{resolved['seed']}{suffix}"


def _nodes(pcap: str) -> list[str]:
    """--pcap's comma-separated node names."""
    return [node.strip() for node in pcap.split(",") if node.strip()]


def progress_bar(label: str, figures: str, quiet: bool) -> Progress:
    """A one-run progress bar on stderr (off with --quiet or when stderr is no terminal)."""
    console = Console(stderr=True)
    return Progress(
        TextColumn(label),
        BarColumn(),
        TextColumn(figures),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=quiet or not console.is_terminal,
    )


def summary_table(summary: dict) -> Table:
    """Per flow: goodput, RTT, retransmissions, RTOs and what limited the sender ("-" where
    a flow has no such figure, e.g. RTT of a UDP flow)."""
    table = Table(box=box.SIMPLE_HEAD)
    for header in ("flow", "goodput Mbit/s", "RTT mean ms", "RTT p95 ms", "retx", "RTOs"):
        table.add_column(header, justify="right")
    table.add_column("limited by", no_wrap=True)
    for index, flow in enumerate(summary["flows"]):
        rtt = flow.get("rtt_ms") or {}
        shares = sorted((flow.get("limited_by") or {}).items(), key=lambda item: -item[1])
        table.add_row(
            f"{index} {flow.get('kind', '')}",
            _cell(flow["goodput_bps"] / 1e6, ".2f"),
            _cell(rtt.get("mean"), ".2f"),
            _cell(rtt.get("p95"), ".2f"),
            _cell(flow.get("retransmits"), "d"),
            _cell(flow.get("rtos"), "d"),
            ", ".join(f"{name} {share:.0%}" for name, share in shares if f"{share:.0%}" != "0%") or "-",
        )
    return table


def _cell(value: float | int | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


@cli.command()
def scenarios() -> None:
    """Lists the shipped scenarios."""
    entries = millinet.scenarios()
    width = max((len(name) for name, _ in entries), default=0)
    for name, description in entries:
        click.echo(f"{name:<{width}}  {description}")


@cli.command()
@scenario_argument
@seed_option
@set_option
def show(scenario: str, seed: int | None, overrides: tuple[str, ...]) -> None:
    """Prints SCENARIO fully resolved (every default filled in), as TOML."""
    text = millinet.resolve(scenario, seed, overrides)
    click.echo(text, nl=not text.endswith("\n"))


@cli.command()
@click.option("--ues-per-sector", type=click.IntRange(min=1), default=200, show_default=True, help="UEs dropped in each of the 57 sectors.")
@click.option("--seed", type=int, default=1, show_default=True, help="Seeds the drop.")
@click.option("--out", type=click.Path(path_type=Path), default=Path("runs/calibration"), show_default=True, help="Directory for the results.")
def calibrate(ues_per_sector: int, seed: int, out: Path) -> None:
    """Reproduces TR 38.901's large-scale calibration (UMa and UMi, 30 GHz, 19 sites × 3 sectors) against the 3GPP baseline."""
    from millinet import calibration  # matplotlib is slow to import: only this command needs it

    summary = calibration.run(out, ues_per_sector, seed)
    click.echo(calibration.table(summary), nl=False)
    click.echo(f"wrote {out}: summary.json, table.md, drops.parquet, " + ", ".join(f"calibration-{s}.png" for s in calibration.SCENARIOS))


@cli.command(name="plot")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), help="PNG file [default: RUN_DIR/plot.png].")
def plot_command(run_dir: Path, out: Path | None) -> None:
    """Draws the time series saved in RUN_DIR as stacked panels into a PNG."""
    from millinet import plot  # matplotlib is slow to import: only this command needs it

    if not run_dir.is_dir():
        raise UsageProblem(f"{run_dir}: no such run directory")
    out = out or run_dir / "plot.png"
    panels = plot.plot_run(run_dir, out)
    if not panels:
        raise UsageProblem(f"{run_dir}: no time series to plot (no Parquet tables with known columns)")
    click.echo(f"wrote {out}: {', '.join(panels)}")


@cli.command(name="packetdrill")
@click.argument("scripts", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--cc", default="cubic", show_default=True, help="The endpoint's congestion control, a name from millinet's registry (a script's setsockopt TCP_CONGESTION overrides it).")
@click.option("--tolerance-ms", type=float, help="Timing tolerance of outbound packets [default: the script's --tolerance_usecs, else packetdrill's 4 ms].")
def packetdrill_command(scripts: tuple[Path, ...], cc: str, tolerance_ms: float | None) -> None:
    """Runs packetdrill SCRIPTS against one millinet TCP endpoint in virtual time
    (docs/validation.md, "packetdrill scripts"): one line per script, PASS or FAIL with the
    first mismatch and its line. Exit status 1 if a script fails, 2 if one is not a valid
    script."""
    status = 0
    for script, (outcome, message) in zip(scripts, _core.packetdrill(list(scripts), cc, tolerance_ms)):
        if outcome == "pass":
            click.echo(f"PASS {script} ({message})")
        elif outcome == "fail":
            click.echo(f"FAIL {script}: {message}")
            status = max(status, 1)
        else:
            click.echo(f"error: {script}: {message}", err=True)
            status = 2
    if status:
        sys.exit(status)


@cli.group()
def trace() -> None:
    """Converts link traces (docs/models/channel.md §10) between formats, and records them from runs."""


trace_in = click.argument("trace_in", metavar="IN", type=click.Path(path_type=Path))
trace_out = click.argument("out", type=click.Path(dir_okay=False, path_type=Path))


def _write(out: Path, text: str) -> None:
    out.write_text(text)
    click.echo(f"wrote {out}")


@trace.command(name="to-mahimahi")
@trace_in
@trace_out
@click.option(
    "--duration-s",
    type=click.FloatRange(min=0, min_open=True),
    help="Period of the Mahimahi trace [default: up to the last row plus one more step as long as the last interval].",
)
def to_mahimahi(trace_in: Path, out: Path, duration_s: float | None) -> None:
    """Exports the capacity CSV IN (time_s,rate_bps) as the Mahimahi trace OUT."""
    _write(out, _core.mahimahi_from_capacity_csv(trace_in, duration_s))


@trace.command(name="from-mahimahi")
@trace_in
@trace_out
@click.option("--bin-ms", type=click.IntRange(min=1), default=10, show_default=True, help="Bin in which delivery opportunities are counted.")
def from_mahimahi(trace_in: Path, out: Path, bin_ms: int) -> None:
    """Imports the Mahimahi trace IN as the capacity CSV OUT (one period)."""
    _write(out, _core.capacity_csv_from_mahimahi(trace_in, bin_ms))


@trace.command(name="from-5gophers")
@trace_in
@trace_out
@click.option("--carrier", type=click.Choice(["verizon", "tmobile", "sprint"]), default="verizon", show_default=True)
@click.option(
    "--gaps",
    type=click.Choice(["interpolate", "hold", "zero"]),
    default="interpolate",
    show_default=True,
    help="What the seconds missing from the drive become.",
)
def from_5gophers(trace_in: Path, out: Path, carrier: str, gaps: str) -> None:
    """Converts the 5Gophers drive CSV IN (one row per second, Mbit/s per carrier) into the
    capacity CSV OUT, with the dataset's CC BY 4.0 attribution in its header comment."""
    _write(out, _core.capacity_csv_from_5gophers(trace_in, carrier, gaps))


@trace.command(name="from-run")
@click.argument("run_dir", type=click.Path(path_type=Path))
@trace_out
@click.option("--ue", type=click.IntRange(min=0), default=0, show_default=True, help="The UE whose SINR is recorded.")
def from_run(run_dir: Path, out: Path, ue: int) -> None:
    """Records the SINR of a UE in the run saved in RUN_DIR as the SINR trace OUT
    (time_s,sinr_db): a route's channel, replayed with `blockage = "sinr-trace"`."""
    if not run_dir.is_dir():
        raise UsageProblem(f"{run_dir}: no such run directory")
    try:
        text = outputs.sinr_trace_csv(run_dir, ue)
    except ValueError as e:
        raise UsageProblem(str(e)) from None
    _write(out, text)


def engine_options(command):
    """--engine, --address and --workers: where a sweep's runs execute."""
    for option in reversed(
        [
            click.option("--engine", type=click.Choice(["local", "ray"]), default="local", show_default=True, help="Process pool on this machine, or a Ray cluster."),
            click.option("--address", help="Address of an existing Ray cluster [default: start a local one]."),
            click.option("--workers", type=click.IntRange(min=1), help="Worker processes (local) or CPUs of the local Ray cluster [default: all cores]."),
        ]
    ):
        command = option(command)
    return command


@cli.group()
def web() -> None:
    """Web pages over the emulated path: generated pages, a server for them, and headless
    Chromium's page load time (docs/emulator.md, "Web pages")."""


@web.command(name="site")
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--seed", type=int, default=1, show_default=True, help="Seeds the objects' random bytes.")
def web_site(directory: Path, seed: int) -> None:
    """Writes the pages (few and many objects, small and large) into DIRECTORY/NAME/."""
    for name in webpages.write_site(directory, seed):
        objects, size = webpages.PAGES[name]
        click.echo(f"{directory / name / 'index.html'}: {objects} objects of {size:,} bytes")


@web.command(name="serve")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--port", type=click.IntRange(1, 65535), default=8000, show_default=True)
def web_serve(directory: Path, port: int) -> None:
    """Serves DIRECTORY over HTTP/1.1 (persistent connections) until killed."""
    webpages.serve(directory, port)


@web.command(name="load")
@click.argument("url")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0, min_open=True), default=60.0, show_default=True, help="Seconds.")
def web_load(url: str, timeout_s: float) -> None:
    """Loads URL in headless Chromium with a fresh profile and prints its navigation timing
    (load_ms, dom_content_loaded_ms, response_end_ms) as JSON."""
    try:
        click.echo(json.dumps(webpages.load(url, timeout_s)))
    except webpages.LoadFailed as e:
        raise UsageProblem(str(e)) from None


@cli.group()
def quic() -> None:
    """QUIC over the emulated path: an HTTP/3 file server and client on aioquic
    (docs/emulator.md, "QUIC")."""


quic_cc = click.option("--cc", "congestion_control", type=click.Choice(["reno", "cubic"]), default="cubic", show_default=True, help="aioquic's congestion control.")


@quic.command(name="serve")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--port", type=click.IntRange(1, 65535), default=4433, show_default=True, help="UDP port.")
@quic_cc
def quic_serve(directory: Path, port: int, congestion_control: str) -> None:
    """Serves DIRECTORY over HTTP/3 (a self-signed certificate) until killed."""
    from millinet import quic as quic_stack  # aioquic and cryptography are slow to import

    quic_stack.serve_directory(directory, port, congestion_control)


@quic.command(name="get")
@click.argument("url")
@click.option("--out", "-o", type=click.Path(dir_okay=False, path_type=Path), help="Write the body here.")
@quic_cc
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0, min_open=True), default=60.0, show_default=True, help="Seconds.")
def quic_get(url: str, out: Path | None, congestion_control: str, timeout_s: float) -> None:
    """Fetches URL (https://HOST:PORT/PATH) over HTTP/3 and prints the bytes received and the
    time from the connection's start to the last byte as JSON."""
    from millinet import quic as quic_stack

    try:
        body, time_s = quic_stack.get(url, congestion_control, timeout_s)
    except quic_stack.QuicFailed as e:
        raise UsageProblem(str(e)) from None
    if out is not None:
        out.write_bytes(body)
    click.echo(json.dumps({"bytes": len(body), "time_s": time_s}))


@cli.command(name="sweep")
@click.argument("sweep_file", metavar="SWEEP")
@engine_options
@click.option("--out", "store", type=click.Path(path_type=Path), help="Result store [default: runs/sweeps/<sweep>].")
@click.option("--retries", type=click.IntRange(min=0), default=2, show_default=True, help="Tries again a run whose worker died, this many times.")
@set_option
@click.option("--quiet", is_flag=True, help="No progress bar and no closing line.")
def sweep_command(sweep_file: str, engine: str, address: str | None, workers: int | None, store: Path | None, retries: int, overrides: tuple[str, ...], quiet: bool) -> None:
    """Runs the sweep SWEEP (a shipped name or a .toml file) into a result store, skipping
    the runs the store already has."""
    from millinet.sweep import load_sweep, run_sweep  # pandas and the engines: only this command needs them

    loaded = load_sweep(sweep_file, overrides)
    store = store or Path("runs") / "sweeps" / loaded.name
    frame = run_sweep(loaded, store, engine=engine, workers=workers, address=address, retries=retries, quiet=quiet)
    if not quiet:
        counts = frame["status"].value_counts().to_dict()
        click.echo(f"{len(frame)} runs: " + ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) + f"; results in {store}")


@cli.command(name="report")
@click.argument("store", type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), help="Directory of report.md and report.html [default: STORE/report].")
@click.option("--run", "run_key", metavar="RUN_KEY", help="The run whose time series are drawn [default: the first successful run].")
def report_command(store: Path, out: Path | None, run_key: str | None) -> None:
    """Summarises the result store STORE: means with 95% intervals per parameter point,
    paired ratios, plots; writes a Markdown table and a self-contained HTML page."""
    from millinet.report import write_report  # matplotlib is slow to import

    page = write_report(store, out, run_key)
    click.echo(f"wrote {page} and {page.with_name('report.md')}")


# The studies `millinet study` runs (millinet.studies.STUDIES; named and described here so
# that --help and `millinet studies` do not import pandas and matplotlib).
STUDY_DESCRIPTIONS = {
    "dense": "Dense urban street grid: 8 interfering micro gNBs, 100 UEs with handover; cell-edge against cell-centre, with and without interference",
    "e2e": "End-to-end TCP over 28 GHz (docs/studies.md#e2e): human blockers, buildings, forced outages, a drive trace",
    "l4s": "L4S over mmWave against milliProxy: drop-tail, CoDel and DualPI2 RLC buffers, milliProxy alone and over DualPI2, CUBIC/BBR/DCTCP/Prague",
    "lower-layer": "Link-level retransmissions (§6): RLC AM/UM x HARQ on/off x remote/edge server, long flows and downloads",
    "milliproxy": "The milliProxy evaluation (§1): TCP with and without a proxy at the gNB or the edge, and split-TCP",
    "mptcp": "Multipath TCP over mmWave and LTE (§5): 28 GHz + LTE and 28 + 73 GHz, coupled and uncoupled CC",
    "multiflow": "Several flows per UE, RAPID's setting: CUBIC and BBR on one UE, no proxy, milliProxy (calibrated, bdp) and RAPID",
    "spep-emulation": "Operator split proxies under mmWave-like dynamics (§7): downloads of 1 kB-1 MB with and without a split proxy",
    "train": "The high-speed train (§2): mmWave with an LTE anchor and LTE only, buffers, CCs and MSS 1400/14000",
    "urban": "Dense urban, multi-user (§3): ten UEs on one gNB in LOS, NLOS and indoors, edge and remote servers, four CCs",
    "web": "Page load time in headless Chromium over the emulated mmWave route: no proxy, milliProxy, split proxy (root)",
}
# The studies that only the emulator runs: real programs over the emulated path (root, one
# run at a time on this machine), no sweep engine.
REAL_PATH_STUDIES = ("web",)
STUDY_NAMES = list(STUDY_DESCRIPTIONS)
# The studies with a reduced grid for the emulator (sweeps NAME-emulated).
EMULATED_STUDIES = ("l4s", "milliproxy", "mptcp", "spep-emulation")


@cli.command(name="study")
@click.argument("name", type=click.Choice(STUDY_NAMES))
@click.option("--runs", type=click.IntRange(min=1), help="Paired seeds per point [default: milliproxy 50, spep-emulation, multiflow and l4s 20, others 10; --quick: milliproxy 30, spep-emulation 5, l4s 3, multiflow 2, others 1].")
@click.option("--quick", is_flag=True, help="The short variant, under a minute on 2 cores (milliproxy: the demo, 8 s runs, about two minutes).")
@click.option("--cwnd-growth", type=click.Choice(["cwnd-limited", "always"]), help="How the servers' cwnd grows [default: the scenario's, cwnd-limited].")
@click.option("--tcp-profile", type=click.Choice(["modern", "ns3-2017"]), help="The servers' TCP as a whole (docs/scenario-reference.md, TCP profiles) [default: the scenario's, modern].")
@click.option("--policies", callback=lambda _ctx, _param, value: _policy_list(value), help="milliproxy: run every milliProxy arm once per flow-window policy, comma-separated, e.g. bdp,target-queue (docs/proxy.md) [default: calibrated,bdp].")
@click.option("--emulate", is_flag=True, help="Run the study's reduced grid (sweep NAME-emulated) on the emulator: real Linux TCP, root, one run at a time [l4s, milliproxy, mptcp, spep-emulation].")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Overrides a scenario field in every run of the study, e.g. proxy.target_queue_gain=0.25.")
@click.option("--out", type=click.Path(path_type=Path), help="Study directory [default: runs/study-NAME, -quick or -emulated appended].")
@engine_options
@click.option("--quiet", is_flag=True, help="No progress bar and no table.")
def study_command(
    name: str,
    runs: int | None,
    quick: bool,
    emulate: bool,
    cwnd_growth: str | None,
    tcp_profile: str | None,
    policies: tuple[str, ...] | None,
    overrides: tuple[str, ...],
    out: Path | None,
    engine: str,
    address: str | None,
    workers: int | None,
    quiet: bool,
) -> None:
    """Runs the study NAME (docs/studies.md): its sweep into OUT/store, then
    the tables, plots, summary.json and a self-contained index.html in OUT. Runs already in
    the store are reused."""
    from millinet.studies import STUDIES  # pandas, matplotlib and the engines
    from millinet.studies.common import Options

    if name in REAL_PATH_STUDIES:
        given = [flag for flag, on in (("--emulate", emulate), ("--cwnd-growth", cwnd_growth), ("--tcp-profile", tcp_profile), ("--policies", policies), ("--engine ray", engine != "local"), ("--workers", workers and workers > 1)) if on]
        if given:
            raise click.UsageError(f"{', '.join(given)}: the {name} study runs real programs on the emulator, one run at a time, with the kernel's TCP; it takes --runs, --quick, --set, --out and --quiet")
    if emulate and name not in EMULATED_STUDIES:
        raise click.UsageError(f"--emulate: the {name} study has no emulated grid; allowed: {', '.join(EMULATED_STUDIES)}")
    if emulate and quick:
        raise click.UsageError("--emulate and --quick: the emulated grid is already a reduced one; give one of them")
    out = out or Path("runs") / (f"study-{name}" + ("-quick" if quick else "") + ("-emulated" if emulate else ""))
    if emulate and tcp_profile:
        raise click.UsageError("--emulate and --tcp-profile: an emulated server runs the kernel's TCP, whose settings a profile does not reach")
    if policies and name != "milliproxy":
        raise click.UsageError(f"--policies: only the milliproxy study runs flow-window policies, not {name}")
    options = Options(name, runs, quick, cwnd_growth, tcp_profile, engine, workers, address, quiet, emulate, policies, overrides)
    result = STUDIES[name].run(out, options)
    if not quiet:
        # Piped output (logs, CI) gets a width that fits the tables; a terminal its own.
        console = Console(width=None if sys.stdout.isatty() else 150)
        for line in result.summary.get("verdict", []):
            console.print(line, highlight=False, markup=False, soft_wrap=True)
        for title, frame in result.tables.items():
            profile = "" if result.summary.get("tcp_profile", "modern") == "modern" else f", TCP profile {result.summary['tcp_profile']}"
            # A study of the kernel's TCP (web) has no cwnd growth rule of its own to name.
            growth = f" ({result.summary['cwnd_growth']} cwnd growth{profile})" if "cwnd_growth" in result.summary else ""
            heading = f"{name} study: {result.summary['runs']} runs{growth}; {title}"
            console.print(_rich_table(frame, heading))
        click.echo(f"wrote {out / 'summary.json'}, {out / 'table.md'}, {out / 'index.html'} and {out / 'plots'}")


def _policy_list(value: str | None) -> tuple[str, ...] | None:
    """--policies: names separated by commas, each once (unknown names are refused by the
    scenario check, which lists the policies there are)."""
    if value is None:
        return None
    names = tuple(name.strip() for name in value.split(","))
    if not all(names):
        raise click.BadParameter(f"{value!r}: an empty name; give policy names separated by commas, e.g. bdp,target-queue")
    if len(set(names)) != len(names):
        raise click.BadParameter(f"{value!r}: a policy named twice")
    return names


@cli.command(name="studies")
@click.option("--index", "parent", type=click.Path(file_okay=False, path_type=Path), help="Also write PARENT/index.html linking every study page under PARENT.")
def studies_command(parent: Path | None) -> None:
    """Lists the studies `millinet study NAME` runs, one line each."""
    for name, description in STUDY_DESCRIPTIONS.items():
        click.echo(f"{name:14} {description}")
    if parent is not None:
        from millinet.report.page import write_study_index

        click.echo(f"wrote {write_study_index(parent)}")


def _rich_table(frame, title: str) -> Table:
    """A study's table for the terminal: label columns (every cell starts with a letter,
    e.g. cc, proxy, radio) to the left, figures to the right."""
    table = Table(box=box.SIMPLE_HEAD, title=title)
    for column in frame.columns:
        labels = all(str(cell)[:1].isalpha() for cell in frame[column])
        table.add_column(column, justify="left" if labels else "right")
    for row in frame.itertuples(index=False):
        table.add_row(*(str(cell) for cell in row))
    return table
