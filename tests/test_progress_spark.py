"""The Spark progress bar (kcontroller.progress.SparkTasks): it counts the tasks of the jobs started in its
block, and only those, and leaves the thread's job group as it found it."""
import io

import pytest

from kcontroller import progress

pytestmark = pytest.mark.spark


def test_it_counts_the_tasks_of_the_jobs_of_its_block(spark, monkeypatch):
    sc = spark.sparkContext
    sc.parallelize(range(10), 3).count()            # a job before the block: not counted
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    with progress.SparkTasks("always", spark, desc="test", interval=0.05) as tasks:
        sc.parallelize(range(100), 4).map(lambda x: x * 2).count()
        sc.parallelize(range(100), 5).count()
        assert tasks.counts() == (9, 9)
    assert tasks.bar.n == 9 and tasks.bar.total == 9
    assert "test" in err.getvalue() and "9/9" in err.getvalue()
    assert sc.getLocalProperty("spark.jobGroup.id") is None
    with progress.SparkTasks("never", spark, desc="quiet") as quiet:
        sc.parallelize(range(10), 2).count()
    assert quiet.counts() == (2, 2) and quiet.bar.disable


def test_a_shuffle_counts_both_stages(spark):
    with progress.SparkTasks("never", spark, desc="shuffle") as tasks:
        spark.sparkContext.parallelize([(i % 3, i) for i in range(30)], 3).reduceByKey(lambda a, b: a + b,
                                                                                       2).collect()
    assert tasks.counts() == (5, 5)


def test_the_late_bar_counts_the_jobs_started_in_its_block_once_a_session_runs(spark):
    sc = spark.sparkContext
    sc.parallelize(range(10), 3).count()            # before the block: not counted
    with progress.LateSparkTasks("never", desc="late") as tasks:
        sc.parallelize(range(10), 2).count()
        sc.parallelize(range(10), 4).count()
        assert tasks.counts() == (6, 6)
    with progress.SparkTasks("never", spark, desc="grouped"):   # a job group's jobs are another command's
        with progress.LateSparkTasks("never", desc="late") as late:
            sc.parallelize(range(10), 2).count()
    assert late.counts() == (0, 0)


def test_kcontroller_audit_on_spark_shows_spark_tasks(spark, tmp_path, monkeypatch, capsys):
    from controller.state_machine_harness import ScriptSpec, run_scripted
    from events.log import FsyncPolicy, LogWriter
    from kcontroller.cli import main
    monkeypatch.setattr("kcontroller.cli.configure_logging", lambda level: None)
    with LogWriter(tmp_path / "run", fsync=FsyncPolicy.none()) as writer:
        run_scripted(ScriptSpec(brokers=3, partitions=6, kill=(1,), seed=1), writer.append)
    assert main(["audit", str(tmp_path / "run"), "--engine", "spark", "--master", sc_master(spark),
                 "--progress", "always"]) == 0
    err = capsys.readouterr().err
    assert "audit (Spark tasks)" in err and "task" in err


def sc_master(spark) -> str:
    return spark.sparkContext.master
