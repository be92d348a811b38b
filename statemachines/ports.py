"""What the state machines need from the layers above them, as Protocols.

The state machines live below ``controller`` (see DESIGN.md), so they cannot import the
controller context, the request batch or the metadata store. They are handed objects that
satisfy these protocols; ``controller`` provides the real ones.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple, Protocol

import numpy as np

from statemachines.leader_and_isr import LeaderAndIsr, LeaderIsrAndControllerEpoch, ReplicaAssignment


class UpdateLeaderAndIsrResult(NamedTuple):
    """Outcome of a conditional multi-partition ``/state`` write (Kafka's UpdateLeaderAndIsrResult)."""
    finished: dict          # tp -> LeaderAndIsr (with its new partition_epoch) or an Exception
    to_retry: list          # tps whose write hit BADVERSION: read again and retry


class PartitionStateColumns(NamedTuple):
    """The ``/state`` of many partitions of one topic, as columns (rows in the order asked)."""
    exists: np.ndarray            # bool: the znode exists (the other columns are 0 / -1 padded where not)
    controller_epoch: np.ndarray  # int32
    leader: np.ndarray            # int32
    leader_epoch: np.ndarray      # int32
    isr: np.ndarray               # int32 (n, width), -1 padded, in stored order
    recovery: np.ndarray          # uint8 LeaderRecoveryState
    version: np.ndarray           # int32: the znode's version, i.e. the partition epoch


class ColumnWriteResult(NamedTuple):
    """Outcome of ``write_leader_and_isr_columns``: rows in the order written."""
    version: np.ndarray           # int32: the new zkVersion; -1 where the write hit BADVERSION; -2 on another error
    errors: dict                  # row -> the exception, for rows with version -2
    check_failed: Exception | None  # the ControllerMovedError to raise once every batch of the round is written


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

    # The batch path's forms (optional: a store without them gets the per-partition path). The same
    # requests in the same order as the per-partition calls: one fenced conditional write per partition.
    def read_partition_state_columns(self, topic: str, partitions: np.ndarray) -> PartitionStateColumns:
        ...

    def write_leader_and_isr_columns(self, topic: str, partitions: np.ndarray, leader: np.ndarray,
                                     leader_epoch: np.ndarray, isr: np.ndarray, recovery: np.ndarray,
                                     expected_version: np.ndarray, controller_epoch: int,
                                     expected_controller_epoch_zk_version: int) -> ColumnWriteResult:
        ...

    def create_partition_states_columns(self, segments: list[tuple], controller_epoch: int,
                                        expected_controller_epoch_zk_version: int) -> list[dict[int, Exception]]:
        """``create_partition_states`` of (topic, partitions, leader, -1 padded ISR matrix) segments: per segment
        {row: error} of the partitions whose ``/state`` was not created."""
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

    # The batch path's forms (optional): a topic's partitions as arrays, their states read from the context.
    def add_leader_and_isr_columns(self, ts, parts: np.ndarray, recipients: np.ndarray, is_new: bool,
                                   update_metadata: bool = True) -> None: ...

    def add_leader_and_isr_segments(self, segments: list, is_new: bool, update_metadata: bool = True) -> None: ...

    def add_stop_replica_columns(self, broker_id: int, ts, parts: np.ndarray, delete_partition: bool) -> None: ...
