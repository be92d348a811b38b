"""The Spark session the audit and the sweeps run on: the active one, or one built for a master URL.

In a notebook (or a program that made its own) a session already exists, and its master, resources
and configuration are the user's: :func:`spark_session` returns it untouched. Under ``spark-submit``
the session it builds takes the submitted master and settings. Otherwise it builds one
for ``master`` (``local[N]``, ``spark://host:port``, ...; default ``local[*]``) with what the audit
wants and nothing that changes results: no UI or console progress bar, Arrow for DataFrames made
from local data, UTC session time, window buffers that hold a run in memory, and on a local master
half the machine's memory (up to 16g) for the driver and as many shuffle partitions as the master has cores (the checks shuffle
once, by run; Spark's default of 200 makes 200 tiny tasks of a small audit).

Python workers on this machine run this interpreter (it has msgpack, pyarrow, google-crc32c), unless
``PYSPARK_PYTHON`` says otherwise; remote workers need those packages in their own Python.
:func:`ship_packages` sends our own packages to the workers (a zip added to the session), so
executors need no kcontroller installation; the caller names the packages its tasks import
(the audit's readers need ``events`` and ``audit``, a sweep also ``sim``, ``controller``, ...).
"""
from __future__ import annotations

import hashlib
import importlib.util
import io
import os
import re
import sys
import tempfile
import zipfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from types import ModuleType

DEFAULT_MASTER = "local[*]"
def physical_memory() -> int:
    """This machine's memory in bytes (8 GiB when the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 << 30


def _local_driver_memory() -> str:
    """Half the machine's memory, at least 1g and at most 16g: in local mode the driver is the executor,
    and the checks' windows hold whole runs (an audit of 10 M transitions in 19 runs failed with 4g)."""
    return f"{max(1, min(16, physical_memory() // 2 >> 30))}g"


LOCAL_DRIVER_MEMORY = _local_driver_memory()
# The checks' windows are partitioned by run: a whole run goes through one window buffer. Spark's
# default spills that buffer to disk every 4096 rows; keep up to a few million rows in memory.
WINDOW_BUFFER = {"spark.sql.windowExec.buffer.in.memory.threshold": "2000000",
                 "spark.sql.windowExec.buffer.spill.threshold": "4000000"}


def under_spark_submit() -> bool:
    """Whether this process is a driver that spark-submit started (it hands the Python driver its JVM gateway
    in ``PYSPARK_GATEWAY_PORT``; a session a program builds itself does not set it in the environment). What an
    ``auto`` engine takes as "run me on Spark": a session merely left running in the process (a test suite's,
    a notebook's) is not."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def active_session():
    """The session already running in this process (spark-submit, a notebook), or None."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        return None
    return SparkSession.getActiveSession()


def _cores(master: str) -> int:
    m = re.fullmatch(r"local\[(\d+|\*)(?:,\s*\d+)?\]", master)
    if m:
        return (os.cpu_count() or 1) if m.group(1) == "*" else max(1, int(m.group(1)))
    return 1 if master == "local" else 0


# Spark's start-up chatter (its default log4j profile, hostname and native-library warnings) would bury
# the audit's own output on stderr; a session this module starts logs errors only.
_LOG4J2 = """rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
"""


def _content_file(subdir: str, prefix: str, suffix: str, data: bytes) -> str:
    """A file in the temporary directory holding ``data``, named by its content hash (written once,
    atomically: concurrent processes may ask for the same file)."""
    directory = os.path.join(tempfile.gettempdir(), subdir)
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"{prefix}{hashlib.sha256(data).hexdigest()[:16]}{suffix}")
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    return path


def _quiet_log4j2_option() -> str:
    path = _content_file("kcontroller-spark", "log4j2-", ".properties", _LOG4J2.encode())
    return f"-Dlog4j2.configurationFile=file:{path}"


def _submitted_conf():
    """The configuration ``spark-submit`` (or the ``pyspark`` shell) gave this process before any
    session exists — its ``--master``, ``--conf`` ... — or None when it was not started that way."""
    if "PYSPARK_GATEWAY_PORT" not in os.environ:   # set for the Python program by spark-submit's launcher
        return None
    from pyspark import SparkConf, SparkContext
    SparkContext._ensure_initialized()   # connects to the launcher's JVM: SparkConf() then reads its settings
    return SparkConf()


def spark_session(master: str | None = None, *, app_name: str = "kcontroller", conf: dict | None = None):
    """The active session if there is one and ``master`` is None or names its master; else a new one,
    with ``conf`` (Spark properties, e.g. ``spark.executor.memory``) over the settings below.

    A new session under ``spark-submit`` gets the master it was submitted with (unless ``master``
    says otherwise) and keeps every setting given there; the settings below fill in the others.
    Raises ImportError (with what to install) when pyspark is missing.
    """
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:  # pragma: no cover - pyspark is a required dependency
        raise ImportError("the Spark engine needs pyspark (pip install pyspark) and Java 17+") from exc
    active = SparkSession.getActiveSession()
    if active is not None and (master is None or active.sparkContext.master == master):
        return active
    submitted = _submitted_conf()
    if master is None and submitted is not None:
        master = submitted.get("spark.master", None)
    master = master or DEFAULT_MASTER
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    settings = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
                "spark.sql.execution.arrow.pyspark.enabled": "true", "spark.sql.session.timeZone": "UTC"}
    cores = _cores(master)
    if cores:
        settings.update({"spark.sql.shuffle.partitions": str(cores), "spark.default.parallelism": str(cores),
                         "spark.driver.memory": LOCAL_DRIVER_MEMORY})
    settings.update(WINDOW_BUFFER)
    if submitted is None:   # a JVM this process starts: quiet, unless the user configures its logging
        settings["spark.driver.extraJavaOptions"] = _quiet_log4j2_option()
    settings.update(conf or {})
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        if submitted is None or not submitted.contains(key) or key in (conf or {}):
            builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


_shipped: set[tuple] = set()


def ship_packages(spark, packages: Iterable[ModuleType | str]) -> str:
    """Add a zip of ``packages`` (package modules, or their top-level names) to ``spark``'s Python files.

    Every ``.py`` file under each package's directory goes in, as the driver has it, with fixed
    timestamps: the same sources make the same zip, named by its content hash (Spark refuses a
    second, different file of the same name). Names are located without being imported here, so
    a caller may ship packages this one must not import. Once per session and zip; returns the
    zip's path. The zip is not left on this process's own ``sys.path``.
    """
    roots = []
    for package in packages:
        if isinstance(package, ModuleType):
            roots.append(os.path.dirname(os.path.abspath(package.__file__)))
            continue
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise ImportError(f"cannot ship {package!r}: not a package on this Python's path")
        roots.append(os.path.abspath(list(spec.submodule_search_locations)[0]))
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w", zipfile.ZIP_DEFLATED) as zf:
        for root in sorted(set(roots)):
            parent = os.path.dirname(root)
            for directory, dirs, files in os.walk(root):
                dirs[:] = sorted(d for d in dirs if d != "__pycache__")
                for name in sorted(files):
                    if name.endswith(".py"):
                        path = os.path.join(directory, name)
                        info = zipfile.ZipInfo(os.path.relpath(path, parent), date_time=(1980, 1, 1, 0, 0, 0))
                        with open(path, "rb") as f:
                            zf.writestr(info, f.read())
    path = _content_file("kcontroller-pyfiles", "kcontroller-py-", ".zip", data.getvalue())
    sc = spark.sparkContext
    key = (sc.applicationId, path)
    if key not in _shipped:
        saved = list(sys.path)
        try:
            sc.addPyFile(path)
        finally:
            sys.path[:] = saved  # addPyFile also puts the zip on this process's path; we import from source
        _shipped.add(key)
    return path


@contextmanager
def local_workers_run_this_python(sc) -> Iterator[None]:
    """While in the block, Python functions handed to ``sc`` run on this interpreter (it has our
    dependencies) rather than whatever ``python3`` is on PATH — on a ``local`` master with no
    ``PYSPARK_PYTHON`` set only; elsewhere the session's own setting stands."""
    saved = sc.pythonExec
    if sc.master.startswith("local") and "PYSPARK_PYTHON" not in os.environ:
        sc.pythonExec = sys.executable
    try:
        yield
    finally:
        sc.pythonExec = saved
