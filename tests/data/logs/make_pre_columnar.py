"""Writes tests/data/logs/pre-columnar with the code of a given checkout (run at e4954f9), and
tests/data/logs/snapshot-format-2 (run at cd57079):
    python tests/data/logs/make_pre_columnar.py <checkout> <output dir>"""
import sys, shutil
sys.path.insert(0, sys.argv[1])
from controller.embedding.cluster import Cluster
from events.log import LogWriter, FsyncPolicy
out = sys.argv[2]
shutil.rmtree(out, ignore_errors=True)
with LogWriter(out, fsync=FsyncPolicy.none()) as w:
    c = Cluster(seed=5, sink=w.append)
    c.start_brokers(range(4))
    c.create_topic("big", 80, 3)
    c.create_topic("small", 3, 2)
    c.checkpoint()
    c.snapshot()
    c.kill_broker(1, at=1_000)
    c.advance_to(40_000)
    c.start_broker(1, at=41_000)
    c.stop_broker(2, at=42_000)
    c.checkpoint()
    c.snapshot()
    c.create_topic("later", 70, 2, at=50_000)
    c.checkpoint()
