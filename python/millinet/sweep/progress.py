"""The sweep's progress line (outputs.md §4): runs done / total, failures, retries, rate, ETA."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn


class SweepProgress:
    """A rich progress bar on stderr; shows nothing when `quiet`. Runs skipped because
    the store has them count as done from the start, but not in the rate and ETA."""

    def __init__(self, name: str, total: int, skipped: int, quiet: bool):
        self.bar = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("runs, {task.fields[failed]} failed, {task.fields[retried]} retried,"),
            TextColumn("{task.fields[rate]} runs/s"),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            disable=quiet,
        )
        self.task = self.bar.add_task(name, total=total, completed=skipped, failed=0, retried=0, rate="-")

    def __enter__(self) -> SweepProgress:
        self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()

    def done(self, failed: bool) -> None:
        task = self.bar.tasks[0]
        self.bar.update(self.task, advance=1, failed=task.fields["failed"] + failed)
        speed = self.bar.tasks[0].speed
        self.bar.update(self.task, rate="-" if speed is None else f"{speed:.2f}")

    def retried(self) -> None:
        self.bar.update(self.task, retried=self.bar.tasks[0].fields["retried"] + 1)
