"""The in-process cluster that embeds the controller: brokers around an embedded store (``cluster``),
snapshots of a whole cluster (``snapshot_state`` writes, ``cluster_snapshot`` restores), the demo
run and replay by re-execution. The top of ``controller``: nothing below imports it.
"""
