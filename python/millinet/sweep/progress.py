"""The sweep's progress (docs/sweeps.md): runs done / total, failures, retries, rate, ETA.

On a terminal, one live line that fits the terminal's width: the sweep's name and the bar
give way (the name is cut with an ellipsis, the bar shrinks), the counts and times never do.
Into a log (stderr not a terminal), a plain line each tenth of the runs and a last one, the
same text, so a log of a long sweep says how far it got and how fast."""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.progress import Progress, Task
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

# Log lines: one per this fraction of the runs.
LOG_STEP = 0.1


def status(task: Task) -> str:
    """"48/216 runs, 0 failed, 6.5 runs/s, ETA 0:00:25" ("N retried" after the failures
    when a worker died). Runs the store already had count as done but not in the rate and
    ETA."""
    retried = task.fields["retried"]
    remaining = task.time_remaining if task.completed < (task.total or 0) else 0.0
    return (
        f"{int(task.completed)}/{int(task.total or 0)} runs, {task.fields['failed']} failed"
        + (f", {retried} retried" if retried else "")
        + f", {'-' if task.speed is None else f'{task.speed:.1f}'} runs/s, ETA {clock(remaining)}"
    )


def clock(seconds: float | None) -> str:
    if seconds is None:
        return "-:--:--"
    whole = int(seconds)
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


class SweepLine:
    """The live line at the console's width: the status whole, then the name (cut with an
    ellipsis where it would leave the bar less than 10 columns) and the bar in the rest."""

    def __init__(self, task: Task):
        self.task = task

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        text = status(self.task)
        room = max(options.max_width - len(text) - 2, 0)
        name = Text(self.task.description, style="bold", no_wrap=True, overflow="ellipsis")
        name.truncate(max(min(len(name), room - 10), 1), overflow="ellipsis")
        bar_width = room - len(name)
        line = Table.grid(padding=(0, 1))
        line.add_row(name, *([ProgressBar(total=self.task.total, completed=self.task.completed, width=bar_width)] if bar_width > 0 else []), text)
        yield line


class _LiveLine(Progress):
    def get_renderables(self) -> Iterable[RenderableType]:
        yield from (SweepLine(task) for task in self.tasks)


class SweepProgress:
    """The progress of one sweep on stderr; shows nothing when `quiet`."""

    def __init__(self, name: str, total: int, skipped: int, quiet: bool):
        console = Console(stderr=True)
        live = not quiet and console.is_terminal
        self.logs = not quiet and not live
        self.bar = _LiveLine(console=console, disable=not live)
        self.task = self.bar.add_task(name, total=total, completed=skipped, failed=0, retried=0)
        # The first log line comes at the first tenth (a rate and ETA to give), or at the end.
        self.logged_step = 0
        self.logged_completed = -1.0

    def __enter__(self) -> SweepProgress:
        self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()
        if self.logs and self._task().completed != self.logged_completed:
            self._log()

    def done(self, failed: bool) -> None:
        self.bar.update(self.task, advance=1, failed=self._task().fields["failed"] + failed)
        if self.logs and self._step() > self.logged_step:
            self._log()

    def retried(self) -> None:
        self.bar.update(self.task, retried=self._task().fields["retried"] + 1)

    def _task(self) -> Task:
        return self.bar.tasks[0]

    def _step(self) -> int:
        """How many tenths of the runs are done."""
        return int(self._task().percentage / 100 / LOG_STEP + 1e-9)

    def _log(self) -> None:
        task = self._task()
        self.logged_step, self.logged_completed = self._step(), task.completed
        self.bar.console.print(f"{task.description}: {status(task)}", soft_wrap=True, highlight=False, markup=False)
