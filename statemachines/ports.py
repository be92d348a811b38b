"""What the state machines need from the layers above them, as Protocols.

The state machines live below ``controller`` (see DESIGN.md), so they cannot import the
controller context, the request batch or the metadata store. They are handed objects that
satisfy these protocols; ``controller`` provides the real ones.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple, Protocol

from statemachines.leader_and_isr import LeaderAndIsr, LeaderIsrAndControllerEpoch, ReplicaAssignment


class UpdateLeaderAndIsrResult(NamedTuple):
    """Outcome of a conditional multi-partition ``/state`` write (Kafka's UpdateLeaderAndIsrResult)."""
    finished: dict          # tp -> LeaderAndIsr (with its new partition_epoch) or an Exception
    to_retry: list          # tps whose write hit BADVERSION: read again and retry


class PartitionStateStore(Protocol):
    """The ``/brokers/topics/<t>/partitions/<p>/state`` znodes, with controller-epoch fencing.

    Writes carry the writer's ``/controller_epoch`` zkVersion; a mismatch raises
    ``ControllerMovedError`` (Kafka wraps these writes in a multi-op with a CheckOp).
    """

    def get_partition_states(self, partitions: Iterable[tuple]) -> dict[tuple, LeaderIsrAndControllerEpoch | None]:
        ...

    def create_partition_states(self, states: dict[tuple, LeaderIsrAndControllerEpoch],
                                expected_controller_epoch_zk_version: int) -> dict[tuple, Exception | None]:
        ...

    def update_leader_and_isr(self, states: dict[tuple, LeaderAndIsr], controller_epoch: int,
                              expected_controller_epoch_zk_version: int) -> UpdateLeaderAndIsrResult:
        ...


class RequestBatch(Protocol):
    """Kafka's ControllerBrokerRequestBatch as the state machines use it."""

    def new_batch(self) -> None: ...

    def send_requests_to_brokers(self, controller_epoch: int) -> object: ...

    def add_leader_and_isr_request_for_brokers(self, broker_ids: Iterable[int], tp: tuple,
                                               info: LeaderIsrAndControllerEpoch, assignment: ReplicaAssignment,
                                               is_new: bool) -> None: ...

    def add_stop_replica_request_for_brokers(self, broker_ids: Iterable[int], tp: tuple,
                                             delete_partition: bool) -> None: ...

    def add_update_metadata_request_for_brokers(self, broker_ids: Iterable[int],
                                                partitions: Iterable[tuple] = ()) -> None: ...
