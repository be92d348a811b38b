"""The Spark session the audit and the sweeps run on: the active one, or one built for a master URL.

In a notebook a session already exists, and its master, resources and configuration are the
user's: :func:`spark_session` returns it untouched; under ``spark-submit`` the session it builds
takes its master and resources from spark-submit's options. Otherwise it builds one
for ``master`` (``local[N]``, ``spark://host:port``, ...; default ``local[*]``) with what the audit
wants and nothing that changes results: no UI or console progress bar, Arrow for DataFrames made
from local data, UTC session time, and as many shuffle partitions as the master has cores (the
checks shuffle once, by run; Spark's default of 200 makes 200 tiny tasks of a small audit).

Python workers on this machine run this interpreter (it has msgpack, pyarrow, google-crc32c), unless
``PYSPARK_PYTHON`` says otherwise; remote workers need those packages in their own Python.
"""
from __future__ import annotations

import os
import re
import sys

DEFAULT_MASTER = "local[*]"


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


def spark_session(master: str | None = None, *, app_name: str = "kcontroller", conf: dict | None = None):
    """The active session if there is one and ``master`` is None or names its master; else a new one,
    with ``conf`` (Spark properties, e.g. ``spark.executor.memory``) on top of the defaults above.

    Raises ImportError (with what to install) when pyspark is missing.
    """
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:  # pragma: no cover - pyspark is a required dependency
        raise ImportError("the Spark engine needs pyspark (pip install pyspark) and Java 17+") from exc
    active = SparkSession.getActiveSession()
    if active is not None and (master is None or active.sparkContext.master == master):
        return active
    # Under spark-submit (it starts the JVM and passes its port), the master and resources are the
    # ones given to spark-submit: set none of ours.
    submitted = master is None and "PYSPARK_GATEWAY_PORT" in os.environ
    if not submitted:
        master = master or DEFAULT_MASTER
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if not submitted:
        builder = builder.master(master)
    builder = (builder
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true")
               .config("spark.sql.session.timeZone", "UTC"))
    cores = 0 if submitted else _cores(master)
    if cores:
        builder = (builder.config("spark.sql.shuffle.partitions", str(cores))
                   .config("spark.default.parallelism", str(cores)))
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
