"""Kafka's ``ControllerState``: what the controller's event thread is busy with.

The value is Kafka's state byte (the ``kafka.controller:type=KafkaController,name=ControllerState``
gauge); most states also name the ``ControllerStats`` rate-and-time timer that measures how
long events of that state take to process.
"""
from __future__ import annotations

import enum


class ControllerState(enum.IntEnum):
    Idle = 0
    ControllerChange = 1
    BrokerChange = 2
    TopicChange = 3
    TopicDeletion = 4
    AlterPartitionReassignment = 5
    AutoLeaderBalance = 6
    ManualLeaderBalance = 7
    ControlledShutdown = 8
    IsrChange = 9
    LeaderAndIsrResponseReceived = 10
    LogDirChange = 11
    ControllerShutdown = 12
    UncleanLeaderElectionEnable = 13
    TopicUncleanLeaderElectionEnable = 14
    ListPartitionReassignment = 15
    UpdateMetadataResponseReceived = 16
    UpdateFeatures = 17

    @property
    def rate_and_time_metric_name(self) -> str | None:
        """Name of this state's ``ControllerStats`` timer, or None if it has none."""
        return _METRIC_NAMES[self]


def _metric_name(state: ControllerState) -> str | None:
    if state in (ControllerState.Idle, ControllerState.UpdateMetadataResponseReceived):
        return None
    # Two legacy names kept by Kafka for compatibility of dashboards.
    if state is ControllerState.BrokerChange:
        return "LeaderElectionRateAndTimeMs"
    if state is ControllerState.AlterPartitionReassignment:
        return "PartitionReassignmentRateAndTimeMs"
    # ``name``, not ``str()``: since Python 3.11 an IntEnum formats as its number.
    return f"{state.name}RateAndTimeMs"


_METRIC_NAMES = {state: _metric_name(state) for state in ControllerState}
