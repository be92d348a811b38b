"""An in-memory stand-in for the partitions' ``/state`` znodes, fenced by the controller epoch's zkVersion.

It implements ``statemachines.ports.PartitionStateStore`` with ZooKeeper's semantics for these
nodes: create fails with NODEEXISTS, a conditional set fails with BADVERSION, and every write
carries the writer's ``/controller_epoch`` zkVersion, whose mismatch raises
``ControllerMovedError``. The full metadata store (ephemerals, watches, the whole znode tree)
builds on the same rules.
"""
from __future__ import annotations

from collections.abc import Iterable

from statemachines.errors import ControllerMovedError, StoreError
from statemachines.leader_and_isr import LeaderAndIsr, LeaderIsrAndControllerEpoch
from controller.store.state_columns import PartitionStateColumnsMixin
from statemachines.ports import UpdateLeaderAndIsrResult


class InMemoryPartitionStateStore(PartitionStateColumnsMixin):
    """``/state`` znodes keyed by (topic, partition); ``partition_epoch`` is the znode version."""

    def __init__(self) -> None:
        self.states: dict[tuple, LeaderIsrAndControllerEpoch] = {}
        self.controller_epoch_zk_version = 0

    def _check_controller_epoch(self, expected: int) -> None:
        if expected != self.controller_epoch_zk_version:
            raise ControllerMovedError(
                f"Controller epoch zkVersion check fails. Expected zkVersion = {expected}")

    def get_partition_states(self, partitions: Iterable[tuple]) -> dict[tuple, LeaderIsrAndControllerEpoch | None]:
        states = self.states
        return {tp: states.get(tp) for tp in partitions}

    def create_partition_states(self, states: dict[tuple, LeaderIsrAndControllerEpoch],
                                expected_controller_epoch_zk_version: int) -> dict[tuple, Exception | None]:
        self._check_controller_epoch(expected_controller_epoch_zk_version)
        out: dict[tuple, Exception | None] = {}
        for tp, info in states.items():
            if tp in self.states:
                out[tp] = StoreError("NODEEXISTS")  # Kafka builds this one from the result code alone
            else:
                if info.leader_and_isr.partition_epoch != 0:  # a created znode has version 0
                    info = info._replace(leader_and_isr=info.leader_and_isr.with_partition_epoch(0))
                self.states[tp] = info
                out[tp] = None
        return out

    def update_leader_and_isr(self, states: dict[tuple, LeaderAndIsr], controller_epoch: int,
                              expected_controller_epoch_zk_version: int) -> UpdateLeaderAndIsrResult:
        self._check_controller_epoch(expected_controller_epoch_zk_version)
        finished: dict = {}
        retry: list = []
        for tp, lai in states.items():
            cur = self.states.get(tp)
            if cur is None:
                finished[tp] = StoreError("NONODE", state_path(tp))
            elif cur.leader_and_isr.partition_epoch != lai.partition_epoch:
                retry.append(tp)
            else:
                new = lai.with_partition_epoch(lai.partition_epoch + 1)
                self.states[tp] = LeaderIsrAndControllerEpoch(new, controller_epoch)
                finished[tp] = new
        return UpdateLeaderAndIsrResult(finished, retry)

    def delete_topic(self, topic: str) -> None:
        for tp in [tp for tp in self.states if tp[0] == topic]:
            del self.states[tp]


def state_path(tp: tuple) -> str:
    return f"/brokers/topics/{tp[0]}/partitions/{tp[1]}/state"
