"""Value types of a partition's leadership: LeaderAndIsr, LeaderIsrAndControllerEpoch, ReplicaAssignment.

They mirror kafka.api.LeaderAndIsr, kafka.controller.LeaderIsrAndControllerEpoch and
kafka.controller.ReplicaAssignment, including the epoch rules of their ``new*`` methods and
the ``toString`` formats Kafka prints into state-change.log.
"""
from __future__ import annotations

from typing import NamedTuple

from events.records import NO_LEADER, RECOVERED, RECOVERING

_new = tuple.__new__

INITIAL_LEADER_EPOCH = 0
INITIAL_PARTITION_EPOCH = 0
RECOVERY_STATE_NAMES = {RECOVERED: "RECOVERED", RECOVERING: "RECOVERING"}


class TopicPartition(NamedTuple):
    """A (topic, partition) pair; prints as Kafka's ``TopicPartition.toString``: ``topic-0``."""
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class PartitionAndReplica(NamedTuple):
    """A replica of a partition; prints as Kafka's ``[Topic=t,Partition=0,Replica=1]``."""
    topic: str
    partition: int
    replica: int

    def __str__(self) -> str:
        return f"[Topic={self.topic},Partition={self.partition},Replica={self.replica}]"


class LeaderAndIsr(NamedTuple):
    """The content of a partition's ``/state`` znode; ``partition_epoch`` is its zkVersion."""
    leader: int
    leader_epoch: int
    isr: tuple
    recovery_state: int = RECOVERED
    partition_epoch: int = INITIAL_PARTITION_EPOCH

    # Built directly rather than with _replace, which is several times slower: these run per partition.
    def new_leader(self, leader: int) -> LeaderAndIsr:
        return _new(LeaderAndIsr, (leader, self[1] + 1, self[2], self[3], self[4]))

    def new_leader_and_isr(self, leader: int, isr: tuple) -> LeaderAndIsr:
        return _new(LeaderAndIsr, (leader, self[1] + 1, tuple(isr), self[3], self[4]))

    def new_recovering_leader_and_isr(self, leader: int, isr: tuple) -> LeaderAndIsr:
        return _new(LeaderAndIsr, (leader, self[1] + 1, tuple(isr), RECOVERING, self[4]))

    def new_epoch(self) -> LeaderAndIsr:
        return _new(LeaderAndIsr, (self[0], self[1] + 1, self[2], self[3], self[4]))

    def with_partition_epoch(self, partition_epoch: int) -> LeaderAndIsr:
        return _new(LeaderAndIsr, (self[0], self[1], self[2], self[3], partition_epoch))

    @property
    def has_leader(self) -> bool:
        return self.leader != NO_LEADER

    def kafka_str(self) -> str:
        """``LeaderAndIsr.toString`` as Kafka 3.5+ prints it."""
        isr = ", ".join(f"BrokerState(brokerId={b}, brokerEpoch=-1)" for b in self.isr)
        return (f"LeaderAndIsr(leader={self.leader}, leaderEpoch={self.leader_epoch}, "
                f"isrWithBrokerEpoch=List({isr}), leaderRecoveryState={RECOVERY_STATE_NAMES[self.recovery_state]}, "
                f"partitionEpoch={self.partition_epoch})")


class LeaderIsrAndControllerEpoch(NamedTuple):
    """A LeaderAndIsr with the epoch of the controller that wrote it."""
    leader_and_isr: LeaderAndIsr
    controller_epoch: int

    def kafka_str(self) -> str:
        """``LeaderIsrAndControllerEpoch.toString`` as Kafka 3.2+ prints it."""
        lai = self.leader_and_isr
        return (f"(Leader:{lai.leader},ISR:{','.join(map(str, lai.isr))},"
                f"LeaderRecoveryState:{RECOVERY_STATE_NAMES[lai.recovery_state]},LeaderEpoch:{lai.leader_epoch},"
                f"ZkVersion:{lai.partition_epoch},ControllerEpoch:{self.controller_epoch})")


class ReplicaAssignment(NamedTuple):
    """A partition's full assignment: RS plus the adding (AR) and removing (RR) replicas of a reassignment."""
    replicas: tuple
    adding_replicas: tuple = ()
    removing_replicas: tuple = ()

    @property
    def origin_replicas(self) -> tuple:
        """ORS = RS - AR."""
        adding = set(self.adding_replicas)
        return tuple(r for r in self.replicas if r not in adding)

    @property
    def target_replicas(self) -> tuple:
        """TRS = RS - RR."""
        removing = set(self.removing_replicas)
        return tuple(r for r in self.replicas if r not in removing)

    @property
    def is_being_reassigned(self) -> bool:
        return bool(self.adding_replicas or self.removing_replicas)

    def reassign_to(self, target: tuple) -> ReplicaAssignment:
        """RS = (target ++ ORS).distinct, AR = RS - ORS, RR = RS - target."""
        origin = self.origin_replicas
        full = tuple(dict.fromkeys(tuple(target) + origin))
        target_set, origin_set = set(target), set(origin)
        return ReplicaAssignment(full, tuple(r for r in full if r not in origin_set),
                                 tuple(r for r in full if r not in target_set))

    def remove_replica(self, replica: int) -> ReplicaAssignment:
        return ReplicaAssignment(tuple(r for r in self.replicas if r != replica),
                                 tuple(r for r in self.adding_replicas if r != replica),
                                 tuple(r for r in self.removing_replicas if r != replica))

    def __str__(self) -> str:
        def j(xs):
            return ",".join(map(str, xs))
        return (f"ReplicaAssignment(replicas={j(self.replicas)}, addingReplicas={j(self.adding_replicas)}, "
                f"removingReplicas={j(self.removing_replicas)})")
