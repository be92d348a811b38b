"""The aggregate numpy model that ``bench_simulation.py`` runs beside the simulator (issue 14's baseline).

The same workload as the benchmark's scenario, with none of the simulator's detail: a cluster of
``brokers`` brokers and ``partitions`` partitions (RF 3, replicas placed round-robin with a random
start as Kafka's ``assignReplicasToBrokers`` does, the first replica leading), producers adding
``rate`` 1 KiB messages a second, in batches of 16 (16 KiB) filling one partition after another,
one vectorised step per 100 ms producer tick over the partitions that got a batch; a broker killed
at second 10 of every minute and restarted at second 40. A killed broker's leaderships move when its
session expires (18 s, ZooKeeper's default timeout), to the first live replica of the ISR; its
replicas leave the ISRs then; a restarted broker catches up at once and rejoins every ISR. A batch whose
leader is dead, or whose live ISR is under 2, is counted as not acknowledged (the model does not retry).

It counts what the simulator counts (messages sent and acknowledged, clean elections) so the two
runs can be compared, and it is what "an aggregate model does the same work" means in
docs/benchmarks.md: arrays of log end offsets, high watermarks and ISR membership per partition,
no network, no controller, no per-message events.
"""
from __future__ import annotations

import time

import numpy as np

TICK_MS = 100
PER_BATCH = 16
SESSION_TIMEOUT_MS = 18_000


def aggregate_run(brokers: int, partitions: int, minutes: int, rate: int, seed: int = 1, faults: bool = True) -> dict:
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    rf = 3
    start = int(rng.integers(brokers))
    p = np.arange(partitions)
    shift = 1 + int(rng.integers(brokers - 1))
    replicas = np.empty((partitions, rf), dtype=np.int32)
    replicas[:, 0] = (start + p) % brokers
    for k in range(1, rf):
        replicas[:, k] = (replicas[:, 0] + (shift + (p // brokers) + k - 1) % (brokers - 1) + 1) % brokers
    leader_slot = np.zeros(partitions, dtype=np.int8)           # which replica leads
    in_isr = np.ones((partitions, rf), dtype=bool)
    leo = np.zeros((partitions, rf), dtype=np.int64)
    hw = np.zeros(partitions, dtype=np.int64)
    alive = np.ones(brokers, dtype=bool)
    setup_s = time.perf_counter() - t0

    duration_ms = minutes * 60_000
    kills = {m * 60_000 + 10_000: m % brokers for m in range(minutes if faults else 0)}
    expiries = {at + SESSION_TIMEOUT_MS: b for at, b in kills.items()}
    restarts = {m * 60_000 + 40_000: m % brokers for m in range(minutes if faults else 0)}
    sent = acked = elections = 0
    cursor = 0
    fill = 0
    for now in range(0, duration_ms + 1, TICK_MS):
        for events, action in ((kills, "kill"), (expiries, "expire"), (restarts, "restart")):
            b = events.get(now)
            if b is None:
                continue
            if action == "kill":
                alive[b] = False
            elif action == "expire":
                hosted = replicas == b
                in_isr &= ~hosted
                led = hosted[p, leader_slot]
                candidates = in_isr[led] & alive[replicas[led]]
                has = candidates.any(axis=1)
                leader_slot[np.flatnonzero(led)[has]] = np.argmax(candidates[has], axis=1)
                elections += int(has.sum())
            else:
                alive[b] = True
                hosted = replicas == b
                rows = np.flatnonzero(hosted.any(axis=1))
                leo[rows] = leo[rows, leader_slot[rows]][:, None]
                in_isr |= hosted
        due = rate * TICK_MS // 1000
        if not due:
            continue
        # The sticky partitioner: batches of PER_BATCH messages, one partition after another.
        first = fill
        counts = np.full((first + due + PER_BATCH - 1) // PER_BATCH, PER_BATCH, dtype=np.int64)
        counts[0] -= first
        last = (first + due) % PER_BATCH
        if last:
            counts[-1] = last
        idx = (cursor + np.arange(len(counts))) % partitions
        cursor = (cursor + (first + due) // PER_BATCH) % partitions
        fill = (first + due) % PER_BATCH
        sent += due
        lead = replicas[idx, leader_slot[idx]]
        ok = alive[lead]
        idx, counts = idx[ok], counts[ok]
        leaders = leader_slot[idx]
        leo[idx, leaders] += counts
        live_isr = in_isr[idx] & alive[replicas[idx]]
        leo[idx] = np.where(live_isr, leo[idx, leaders][:, None], leo[idx])
        isr_leo = np.where(in_isr[idx], leo[idx], np.iinfo(np.int64).max)
        new_hw = isr_leo.min(axis=1)
        enough = live_isr.sum(axis=1) >= 2
        acked += int(counts[enough].sum())
        hw[idx] = np.maximum(hw[idx], new_hw)
    return {"sent": sent, "acknowledged": acked, "elections": elections, "setup_s": setup_s,
            "wall_s": time.perf_counter() - t0, "simulated_s": duration_ms / 1000}
