"""The batch forms of the partition-state store (``statemachines.ports``): ``/state`` reads and fenced
conditional writes of many partitions of one topic, as columns.

``PartitionStateColumnsMixin`` gives any store with the per-partition methods (``get_partition_states``,
``update_leader_and_isr``, ``create_partition_states``) the column methods, issuing exactly the same
requests in the same order; a store with a columnar layout overrides them.
"""
from __future__ import annotations

import numpy as np

from statemachines.errors import ControllerMovedError, StoreError
from statemachines.leader_and_isr import LeaderAndIsr, LeaderIsrAndControllerEpoch
from statemachines.ports import ColumnWriteResult, PartitionStateColumns


def columns_from_states(states: list) -> PartitionStateColumns:
    """Columns of a list of LeaderIsrAndControllerEpoch (None: no znode)."""
    n = len(states)
    exists = np.fromiter((s is not None for s in states), dtype=bool, count=n)
    width = max((len(s.leader_and_isr.isr) for s in states if s is not None), default=0)
    isr = np.full((n, max(width, 1)), -1, dtype=np.int32)
    ce = np.zeros(n, dtype=np.int32)
    leader = np.full(n, -1, dtype=np.int32)
    epoch = np.full(n, -1, dtype=np.int32)
    recovery = np.zeros(n, dtype=np.uint8)
    version = np.full(n, -1, dtype=np.int32)
    for i, s in enumerate(states):
        if s is None:
            continue
        lai = s.leader_and_isr
        ce[i], leader[i], epoch[i], recovery[i], version[i] = (s.controller_epoch, lai.leader, lai.leader_epoch,
                                                               lai.recovery_state, lai.partition_epoch)
        if lai.isr:
            isr[i, :len(lai.isr)] = lai.isr
    return PartitionStateColumns(exists, ce, leader, epoch, isr, recovery, version)


class PartitionStateColumnsMixin:
    """Column methods over a store's per-partition ones (same requests, same order)."""

    def read_partition_state_columns(self, topic: str, partitions: np.ndarray) -> PartitionStateColumns:
        tps = [(topic, p) for p in partitions.tolist()]
        states = self.get_partition_states(tps)
        return columns_from_states([states[tp] for tp in tps])

    def write_leader_and_isr_columns(self, topic: str, partitions: np.ndarray, leader: np.ndarray,
                                     leader_epoch: np.ndarray, isr: np.ndarray, recovery: np.ndarray,
                                     expected_version: np.ndarray, controller_epoch: int,
                                     expected_controller_epoch_zk_version: int) -> ColumnWriteResult:
        n = len(partitions)
        new = tuple.__new__
        rows = zip(partitions.tolist(), leader.tolist(), leader_epoch.tolist(), isr.tolist(), recovery.tolist(),
                   expected_version.tolist())
        states = {(topic, p): new(LeaderAndIsr, (ld, le, tuple(r for r in i if r >= 0), rc, v))
                  for p, ld, le, i, rc, v in rows}
        version = np.full(n, -2, dtype=np.int32)
        errors: dict = {}
        try:
            result = self.update_leader_and_isr(states, controller_epoch, expected_controller_epoch_zk_version)
        except ControllerMovedError as e:
            return ColumnWriteResult(version, {}, e)
        retry = set(result.to_retry)
        for i, tp in enumerate(states):
            if tp in retry:
                version[i] = -1
                continue
            res = result.finished[tp]
            if isinstance(res, (Exception, StoreError)):
                errors[i] = res
            else:
                version[i] = res.partition_epoch
        return ColumnWriteResult(version, errors, None)

    def create_partition_states_columns(self, segments, controller_epoch: int,
                                        expected_controller_epoch_zk_version: int) -> list[dict]:
        """``create_partition_states`` of the rows of ``segments``, each (topic, partition ids, leader, ISR
        matrix[, leader epoch, leader recovery state]): row i's /state is ``LeaderIsrAndControllerEpoch(
        LeaderAndIsr(leader[i], leader epoch[i] or 0, the non-negative entries of isr[i] in order, recovery
        state[i] or 0), controller_epoch)``. Returns per segment the rows not created, with their error (the
        outcome of their (topic, partition)); raises what ``create_partition_states`` raises."""
        new = tuple.__new__
        states: dict = {}
        keys = []
        for seg in segments:
            topic, ps, leader, isr = seg[:4]
            n = len(ps)
            epoch = seg[4] if len(seg) > 4 else np.zeros(n, dtype=np.int32)
            recovery = seg[5] if len(seg) > 5 else np.zeros(n, dtype=np.uint8)
            rows = []
            for p, ld, le, i, rc in zip(np.asarray(ps).tolist(), np.asarray(leader).tolist(),
                                        np.asarray(epoch).tolist(), np.asarray(isr).tolist(),
                                        np.asarray(recovery).tolist()):
                tp = (topic, p)
                states[tp] = new(LeaderIsrAndControllerEpoch, (new(LeaderAndIsr, (
                    ld, le, tuple(r for r in i if r >= 0), rc, 0)), controller_epoch))
                rows.append(tp)
            keys.append(rows)
        if not states:
            return [{} for _ in segments]
        out = self.create_partition_states(states, expected_controller_epoch_zk_version)
        return [{i: out[tp] for i, tp in enumerate(rows) if out.get(tp) is not None} for rows in keys]
