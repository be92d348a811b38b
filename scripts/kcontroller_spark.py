"""Entry point for spark-submit: ``spark-submit [spark options] scripts/kcontroller_spark.py audit PATH...``.

Runs the ``kcontroller`` command inside the driver spark-submit starts, so the audit (or a sweep) uses
spark-submit's master, deploy mode and resources. The driver's Python needs kcontroller installed
(``pip install -e .``); the executors get the reader code from the job itself.
"""
import sys

from kcontroller.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
