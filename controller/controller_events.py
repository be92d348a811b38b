"""The base of the controller's events, and the one event the event manager itself uses.

A ``ControllerEvent`` is what the event manager queues and hands to the processor (the
controller). Each concrete event class names its :class:`ControllerState` and may override
``preempt()``, which runs instead of processing when the event is drained from the queue
(``clear_and_put``, controller shutdown), e.g. to answer a pending request with an error.
The concrete events of the KafkaController follow, named as in Kafka 3.7.
"""
from __future__ import annotations

from typing import ClassVar

from controller.controller_state import ControllerState


class ControllerEvent:
    """Base class of controller events; subclasses set the class attribute ``state``."""

    # Empty slots so that slotted subclasses stay small and cheap to create.
    __slots__ = ()

    state: ClassVar[ControllerState]

    def preempt(self) -> None:
        """Called instead of processing when the event is dropped from the queue."""

    def __repr__(self) -> str:
        return type(self).__name__


class ShutdownEventThread(ControllerEvent):
    """Put by ``ControllerEventManager.close()`` to wake and stop the event thread.

    The event manager never passes it to the processor.
    """

    __slots__ = ()
    state = ControllerState.ControllerShutdown


SHUTDOWN_EVENT_THREAD = ShutdownEventThread()


class _Singleton(ControllerEvent):
    __slots__ = ()


class Startup(_Singleton):
    """Enqueued by ``KafkaController.startup()``: watch ``/controller`` and run for election."""
    __slots__ = ()
    state = ControllerState.ControllerChange


class ControllerChange(_Singleton):
    """``/controller`` was created or changed: resign if this broker lost the role."""
    __slots__ = ()
    state = ControllerState.ControllerChange


class Reelect(_Singleton):
    """``/controller`` was deleted: resign if needed, then run for election."""
    __slots__ = ()
    state = ControllerState.ControllerChange


class RegisterBrokerAndReelect(_Singleton):
    """A new store session was initialised: register the broker again, then re-elect."""
    __slots__ = ()
    state = ControllerState.ControllerChange


class Expire(_Singleton):
    """The store session is about to be re-initialised (it expired): resign (put with clear_and_put)."""
    __slots__ = ()
    state = ControllerState.ControllerChange


class BrokerChange(_Singleton):
    """The children of ``/brokers/ids`` changed."""
    __slots__ = ()
    state = ControllerState.BrokerChange


class BrokerModifications(ControllerEvent):
    """The data of ``/brokers/ids/<id>`` changed."""
    __slots__ = ("broker_id",)
    state = ControllerState.BrokerChange

    def __init__(self, broker_id: int):
        self.broker_id = broker_id

    def __repr__(self) -> str:
        return f"BrokerModifications({self.broker_id})"


class TopicChange(_Singleton):
    """The children of ``/brokers/topics`` changed."""
    __slots__ = ()
    state = ControllerState.TopicChange


class PartitionModifications(ControllerEvent):
    """The data of ``/brokers/topics/<topic>`` changed (partitions added, or a reassignment)."""
    __slots__ = ("topic",)
    state = ControllerState.TopicChange

    def __init__(self, topic: str):
        self.topic = topic

    def __repr__(self) -> str:
        return f"PartitionModifications({self.topic})"


class IsrChangeNotification(_Singleton):
    """The children of ``/isr_change_notification`` changed."""
    __slots__ = ()
    state = ControllerState.IsrChange


class AlterPartitionReceived(ControllerEvent):
    """An AlterPartition request from a partition leader; ``callback`` gets the response.

    ``partitions`` is ``{(topic, partition): LeaderAndIsr}`` as the leader proposes it.
    """
    __slots__ = ("broker_id", "broker_epoch", "partitions", "callback")
    state = ControllerState.IsrChange

    def __init__(self, broker_id: int, broker_epoch: int, partitions: dict, callback):
        self.broker_id = broker_id
        self.broker_epoch = broker_epoch
        self.partitions = partitions
        self.callback = callback

    def preempt(self) -> None:
        self.callback(AlterPartitionResponse(NOT_CONTROLLER, {}))

    def __repr__(self) -> str:
        return f"AlterPartitionReceived(broker={self.broker_id}, partitions={len(self.partitions)})"


class LeaderAndIsrResponseReceived(ControllerEvent):
    """A broker answered a LeaderAndIsr request (the request batch's callback puts it, as Kafka's
    ControllerBrokerRequestBatch.handleLeaderAndIsrResponse does): ``error`` for the whole request,
    ``partition_errors`` {(topic, partition): error name}."""
    __slots__ = ("broker_id", "error", "partition_errors")
    state = ControllerState.LeaderAndIsrResponseReceived

    def __init__(self, broker_id: int, error: str, partition_errors: dict):
        self.broker_id = broker_id
        self.error = error
        self.partition_errors = partition_errors

    def __repr__(self) -> str:
        return (f"LeaderAndIsrResponseReceived({self.broker_id}, {self.error}, "
                f"{len(self.partition_errors)} partitions)")


class LogDirEventNotification(_Singleton):
    """The children of ``/log_dir_event_notification`` changed (a broker's log directory failed)."""
    __slots__ = ()
    state = ControllerState.LogDirChange


class UncleanLeaderElectionEnable(_Singleton):
    """The broker default ``unclean.leader.election.enable`` was turned on."""
    __slots__ = ()
    state = ControllerState.UncleanLeaderElectionEnable


class TopicUncleanLeaderElectionEnable(ControllerEvent):
    """A topic's ``unclean.leader.election.enable`` was turned on."""
    __slots__ = ("topic",)
    state = ControllerState.TopicUncleanLeaderElectionEnable

    def __init__(self, topic: str):
        self.topic = topic

    def __repr__(self) -> str:
        return f"TopicUncleanLeaderElectionEnable({self.topic})"


class ControlledShutdown(ControllerEvent):
    """A ControlledShutdown request from broker ``broker_id``; ``callback`` gets (error, remaining partitions)."""
    __slots__ = ("broker_id", "broker_epoch", "callback")
    state = ControllerState.ControlledShutdown

    def __init__(self, broker_id: int, broker_epoch: int, callback):
        self.broker_id = broker_id
        self.broker_epoch = broker_epoch
        self.callback = callback

    def preempt(self) -> None:
        self.callback(NOT_CONTROLLER, ())

    def __repr__(self) -> str:
        return f"ControlledShutdown({self.broker_id}, {self.broker_epoch})"


# ElectionType (org.apache.kafka.common.ElectionType) and ElectionTrigger.
PREFERRED = 0
UNCLEAN = 1
ELECTION_TYPE_NAMES = {PREFERRED: "PREFERRED", UNCLEAN: "UNCLEAN"}
ZK_TRIGGERED = "ZkTriggered"
ADMIN_CLIENT_TRIGGERED = "AdminClientTriggered"
AUTO_TRIGGERED = "AutoTriggered"


class ReplicaLeaderElection(ControllerEvent):
    """ElectLeaders (AdminClientTriggered, ``partitions`` given) or ``/admin/preferred_replica_election``
    created (ZkTriggered, ``partitions`` None: read from the znode). ``callback`` gets
    {(topic, partition): (error, leader)}."""
    __slots__ = ("partitions", "election_type", "trigger", "callback")
    state = ControllerState.ManualLeaderBalance

    def __init__(self, partitions, election_type: int, trigger: str, callback=None):
        self.partitions = partitions
        self.election_type = election_type
        self.trigger = trigger
        self.callback = callback

    def preempt(self) -> None:
        if self.callback is not None:
            self.callback({tp: (NOT_CONTROLLER, -1) for tp in (self.partitions or ())})

    def __repr__(self) -> str:
        n = "all" if self.partitions is None else len(self.partitions)
        return f"ReplicaLeaderElection({ELECTION_TYPE_NAMES[self.election_type]}, {n} partitions, {self.trigger})"


class AutoPreferredReplicaLeaderElection(_Singleton):
    """The scheduled auto-leader-rebalance-task fired."""
    __slots__ = ()
    state = ControllerState.AutoLeaderBalance


class TopicDeletion(_Singleton):
    """The children of ``/admin/delete_topics`` changed."""
    __slots__ = ()
    state = ControllerState.TopicDeletion


class TopicDeletionStopReplicaResponseReceived(ControllerEvent):
    """A StopReplica(delete=true) response for partitions of topics being deleted."""
    __slots__ = ("replica_id", "request_error", "partition_errors")
    state = ControllerState.TopicDeletion

    def __init__(self, replica_id: int, request_error: str, partition_errors: dict):
        self.replica_id = replica_id
        self.request_error = request_error
        self.partition_errors = partition_errors

    def __repr__(self) -> str:
        return (f"TopicDeletionStopReplicaResponseReceived({self.replica_id}, {self.request_error}, "
                f"{len(self.partition_errors)} partitions)")


class ZkPartitionReassignment(_Singleton):
    """``/admin/reassign_partitions`` was created."""
    __slots__ = ()
    state = ControllerState.AlterPartitionReassignment


class ApiPartitionReassignment(ControllerEvent):
    """AlterPartitionReassignments: {(topic, partition): target replicas or None (cancel)};
    ``callback`` gets (request error, {(topic, partition): error})."""
    __slots__ = ("reassignments", "callback")
    state = ControllerState.AlterPartitionReassignment

    def __init__(self, reassignments: dict, callback=None):
        self.reassignments = reassignments
        self.callback = callback

    def preempt(self) -> None:
        if self.callback is not None:
            self.callback(NOT_CONTROLLER, {})

    def __repr__(self) -> str:
        return f"ApiPartitionReassignment({len(self.reassignments)} partitions)"


class PartitionReassignmentIsrChange(ControllerEvent):
    """The ``/state`` of a partition being reassigned changed (IBPs before AlterPartition)."""
    __slots__ = ("partition",)
    state = ControllerState.AlterPartitionReassignment

    def __init__(self, partition: tuple):
        self.partition = partition

    def __repr__(self) -> str:
        return f"PartitionReassignmentIsrChange({self.partition[0]}-{self.partition[1]})"


class ListPartitionReassignments(ControllerEvent):
    """ListPartitionReassignments; ``callback`` gets (error, {(topic, partition): ReplicaAssignment})."""
    __slots__ = ("partitions", "callback")
    state = ControllerState.ListPartitionReassignment

    def __init__(self, partitions, callback):
        self.partitions = partitions
        self.callback = callback

    def preempt(self) -> None:
        self.callback(NOT_CONTROLLER, {})


# Kafka's error codes, by name (org.apache.kafka.common.protocol.Errors).
NONE = "NONE"
NOT_CONTROLLER = "NOT_CONTROLLER"
STALE_BROKER_EPOCH = "STALE_BROKER_EPOCH"
FENCED_LEADER_EPOCH = "FENCED_LEADER_EPOCH"
INVALID_UPDATE_VERSION = "INVALID_UPDATE_VERSION"
INVALID_REQUEST = "INVALID_REQUEST"
INELIGIBLE_REPLICA = "INELIGIBLE_REPLICA"
UNKNOWN_TOPIC_OR_PARTITION = "UNKNOWN_TOPIC_OR_PARTITION"
STALE_CONTROLLER_EPOCH = "STALE_CONTROLLER_EPOCH"
UNKNOWN_SERVER_ERROR = "UNKNOWN_SERVER_ERROR"
BROKER_NOT_AVAILABLE = "BROKER_NOT_AVAILABLE"
ELECTION_NOT_NEEDED = "ELECTION_NOT_NEEDED"
PREFERRED_LEADER_NOT_AVAILABLE = "PREFERRED_LEADER_NOT_AVAILABLE"
ELIGIBLE_LEADERS_NOT_AVAILABLE = "ELIGIBLE_LEADERS_NOT_AVAILABLE"
INVALID_TOPIC_EXCEPTION = "INVALID_TOPIC_EXCEPTION"
INVALID_REPLICA_ASSIGNMENT = "INVALID_REPLICA_ASSIGNMENT"
NO_REASSIGNMENT_IN_PROGRESS = "NO_REASSIGNMENT_IN_PROGRESS"
KAFKA_STORAGE_ERROR = "KAFKA_STORAGE_ERROR"


class AlterPartitionResponse:
    """``error`` for the whole request; ``partitions`` maps (topic, partition) to an error name or the
    LeaderAndIsr now stored."""
    __slots__ = ("error", "partitions")

    def __init__(self, error: str, partitions: dict):
        self.error = error
        self.partitions = partitions

    def __repr__(self) -> str:
        return f"AlterPartitionResponse({self.error}, {self.partitions})"
