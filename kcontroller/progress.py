"""Progress bars of the long commands (``simulate``, ``sweep``, ``replay``, ``audit``, ``log``), one mechanism
for all: tqdm on stderr, shown when stderr is a terminal (``--progress auto``, the default) or always
(``--progress always``), never otherwise, so a pipe or a file gets the output alone.

A bar is redrawn at most ten times a wall second and erased when its command is done (stdout keeps only the
output). ``simulate`` shows simulated seconds; ``replay`` and ``log`` records read (the log's last offset is
the total); ``sweep`` runs done out of the seeds; ``audit`` the bytes of its inputs read so far, sampled from
the process's own I/O counter (``/proc/self/io``; where there is none, the time spent) while the audit runs.
Work on Spark shows Spark's own progress instead (:class:`SparkTasks`): the tasks done of the command's jobs,
read from the driver's status tracker.
"""
from __future__ import annotations

import glob
import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator

from tqdm import tqdm

MODES = ("auto", "always", "never")


def add_option(p) -> None:
    """The ``--progress`` option of a long command."""
    p.add_argument("--progress", choices=MODES, default="auto",
                   help="progress bar on stderr: auto shows it when stderr is a terminal (default: %(default)s)")


def shown(mode: str | None, stream=None) -> bool:
    stream = stream if stream is not None else sys.stderr
    if mode == "always":
        return True
    if mode == "never":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def bar(mode: str | None, *, total: float | None = None, unit: str = "it", desc: str | None = None,
        unit_scale: bool = True) -> tqdm:
    """A tqdm bar on stderr, disabled (every call a no-op) unless :func:`shown`."""
    return tqdm(total=total, unit=unit, desc=desc, file=sys.stderr, disable=not shown(mode), leave=False,
                mininterval=0.1, dynamic_ncols=True, unit_scale=unit_scale)


class SimulatedTime:
    """``simulate``'s bar: the callback ``Simulation.run(progress)`` calls with (now_ms, duration_ms)."""

    def __init__(self, mode: str | None):
        self.bar = bar(mode, unit="sim s", desc="simulated")

    def __call__(self, now_ms: int, duration_ms: int) -> None:
        if self.bar.disable:
            return
        if self.bar.total is None:
            self.bar.total = duration_ms / 1000
        self.bar.update(now_ms / 1000 - self.bar.n)

    def close(self) -> None:
        self.bar.close()


def records(items: Iterable, mode: str | None, total: int | None, desc: str = "records") -> Iterator:
    """``items`` (records, or columnar batches of them) passed through, counting records on a bar of ``total``."""
    with bar(mode, total=total, unit="rec", desc=desc) as b:
        if b.disable:
            yield from items
            return
        for item in items:
            b.update(len(item) if not isinstance(item, tuple) else 1)
            yield item


class Poller:
    """A bar updated from a background thread by ``sample()`` (the done count) every ``interval`` seconds: for
    work whose code has no progress callback (a sweep's runs counted by their finished log directories, an
    audit by the bytes read). A context manager; the final sample is drawn on exit."""

    def __init__(self, mode: str | None, sample: Callable[[], float], *, total: float | None, unit: str,
                 desc: str, interval: float = 0.25, unit_scale: bool = True):
        self.bar = bar(mode, total=total, unit=unit, desc=desc, unit_scale=unit_scale)
        self.sample = sample
        self.interval = interval
        self._stop = threading.Event()
        self._thread = None if self.bar.disable else threading.Thread(target=self._run, daemon=True,
                                                                       name="kcontroller-progress")

    def _draw(self, final: bool = False) -> None:
        try:
            done = self.sample()
        except OSError:
            return
        if self.bar.total is not None:
            done = min(done, self.bar.total)
        done = max(done, self.bar.n)      # a sample never takes the bar back (a child process's count moving)
        if done != self.bar.n:
            self.bar.update(done - self.bar.n)
            if final:       # update() draws at most every mininterval: the last count must be shown
                self.bar.refresh()
        else:
            self.bar.refresh()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._draw()

    def __enter__(self) -> Poller:
        if self._thread is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._draw(final=True)
        self.bar.close()


def bytes_read() -> int:
    """Bytes this process and its live child processes (an audit's reading workers) have read (``rchar`` of
    /proc/<pid>/io: files and pipes; a child's count joins its parent's when it ends); OSError where there is
    none for this process."""
    total = _rchar("/proc/self/io")
    for pid in _children():
        try:
            total += _rchar(f"/proc/{pid}/io")
        except (OSError, ValueError):
            pass            # ended meanwhile
    return total


def _rchar(path: str) -> int:
    with open(path, "rb") as f:
        for line in f:
            if line.startswith(b"rchar:"):
                return int(line.split()[1])
    raise OSError(f"no rchar in {path}")


def _children() -> list[str]:
    """The pids of this process's children (/proc/self/task/*/children); none where the kernel does not say."""
    pids: list[str] = []
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return pids
    for tid in tasks:
        try:
            with open(f"/proc/self/task/{tid}/children") as f:
                pids += f.read().split()
        except OSError:
            pass
    return pids


def input_bytes(paths: Iterable[str]) -> int:
    """The size of the files under ``paths`` (files, directories, globs): an audit's input."""
    total = 0
    for pattern in paths:
        for path in glob.glob(pattern) or [pattern]:
            if os.path.isdir(path):
                for root, _, files in os.walk(path):
                    for name in files:
                        try:
                            total += os.path.getsize(os.path.join(root, name))
                        except OSError:
                            pass
            else:
                try:
                    total += os.path.getsize(path)
                except OSError:
                    pass
    return total


class _TasksBar(Poller):
    """A bar of Spark tasks done whose total grows as stages are planned; ``counts()`` says (done, total)."""

    def counts(self) -> tuple[int, int]:
        raise NotImplementedError

    def _tasks_done(self) -> float:
        done, total = self.counts()
        if total and self.bar.total != total:
            self.bar.total = total
        return done


class SparkTasks(_TasksBar):
    """A bar of the Spark tasks done, out of the tasks of every stage of the jobs started inside the ``with``
    block (what Spark's console progress bar shows, summed over the command's jobs). The jobs are found by a
    job group set for the block on the calling thread (PySpark pins it to the JVM thread that runs the jobs)
    and cleared after; ``sample`` reads ``SparkContext.statusTracker()`` from the poller's thread."""

    _groups = 0

    def __init__(self, mode: str | None, spark, *, desc: str, interval: float = 0.5):
        SparkTasks._groups += 1
        self.sc = spark.sparkContext
        self.group = f"kcontroller-{os.getpid()}-{SparkTasks._groups}"
        self.desc = desc
        super().__init__(mode, self._tasks_done, total=None, unit="task", desc=desc, interval=interval,
                         unit_scale=False)

    def counts(self) -> tuple[int, int]:
        """(tasks done, tasks in all) of the block's jobs so far (stages not planned yet are not counted)."""
        tracker = self.sc.statusTracker()
        return _tasks(tracker, tracker.getJobIdsForGroup(self.group))


    def __enter__(self) -> SparkTasks:
        self.sc.setJobGroup(self.group, self.desc)
        return super().__enter__()

    def __exit__(self, *exc_info) -> None:
        try:
            super().__exit__(*exc_info)
        finally:
            self.sc.setLocalProperty("spark.jobGroup.id", None)
            self.sc.setLocalProperty("spark.job.description", None)


def _tasks(tracker, job_ids) -> tuple[int, int]:
    """(tasks done, tasks in all) of the stages of ``job_ids`` (a SparkContext's status tracker)."""
    done = total = 0
    for job_id in job_ids:
        job = tracker.getJobInfo(job_id)
        for stage_id in (job.stageIds if job is not None else ()):
            stage = tracker.getStageInfo(stage_id)
            if stage is not None:
                done += stage.numCompletedTasks
                total += stage.numTasks
    return done, total


def _active_spark_context():
    """The process's running SparkContext, or None (no pyspark, or no session yet)."""
    try:
        from pyspark import SparkContext
    except ImportError:
        return None
    return SparkContext._active_spark_context


class LateSparkTasks(_TasksBar):
    """The bar of :class:`SparkTasks` for work that makes (or finds) its Spark session itself, after the bar
    starts (``kcontroller audit``: the engine is chosen, and the session made, inside the audit): it counts the
    tasks of the jobs, outside any job group, that the process's SparkContext started during the block."""

    def __init__(self, mode: str | None, *, desc: str, interval: float = 0.5):
        self._before: set | None = None
        super().__init__(mode, self._tasks_done, total=None, unit="task", desc=desc, interval=interval,
                         unit_scale=False)

    def _job_ids(self) -> set:
        sc = _active_spark_context()
        return set() if sc is None else set(sc.statusTracker().getJobIdsForGroup(None))

    def counts(self) -> tuple[int, int]:
        sc = _active_spark_context()
        if sc is None:
            return 0, 0
        tracker = sc.statusTracker()
        return _tasks(tracker, sorted(set(tracker.getJobIdsForGroup(None)) - (self._before or set())))


    def __enter__(self) -> LateSparkTasks:
        self._before = self._job_ids()
        return super().__enter__()
