"""Exceptions of the state machines, named after Kafka's so logs and records read the same."""
from __future__ import annotations


class StateChangeFailedError(Exception):
    """Kafka's StateChangeFailedException: a transition could not be completed."""

    kafka_name = "StateChangeFailedException"


class InvalidTransitionError(Exception):
    """Kafka's IllegalStateException raised for a transition not in ``valid_previous_states``."""

    kafka_name = "IllegalStateException"


class ControllerMovedError(Exception):
    """Kafka's ControllerMovedException: a write fenced by ``/controller_epoch`` failed; the controller must resign."""

    kafka_name = "ControllerMovedException"


class StoreError(Exception):
    """A metadata-store error for one partition (Kafka's KeeperException); ``code`` is ZooKeeper's name, e.g. NODEEXISTS."""

    def __init__(self, code: str, path: str = ""):
        # ZooKeeper's KeeperException message: the readable code name, then the path if known.
        super().__init__(f"KeeperErrorCode = {KEEPER_MESSAGES.get(code, code)}" + (f" for {path}" if path else ""))
        self.code = code
        self.path = path

    @property
    def kafka_name(self) -> str:
        return f"org.apache.zookeeper.KeeperException${KEEPER_CLASSES.get(self.code, 'SystemErrorException')}"


# ZooKeeper's KeeperException.Code: the name its messages print, and the exception class.
KEEPER_MESSAGES = {
    "OK": "ok", "SYSTEMERROR": "SystemError", "RUNTIMEINCONSISTENCY": "RuntimeInconsistency",
    "CONNECTIONLOSS": "ConnectionLoss", "BADARGUMENTS": "BadArguments", "NONODE": "NoNode",
    "BADVERSION": "BadVersion", "NOCHILDRENFOREPHEMERALS": "NoChildrenForEphemerals", "NODEEXISTS": "NodeExists",
    "NOTEMPTY": "Directory not empty", "SESSIONEXPIRED": "Session expired",
}
KEEPER_CLASSES = {
    "SYSTEMERROR": "SystemErrorException", "RUNTIMEINCONSISTENCY": "RuntimeInconsistencyException",
    "CONNECTIONLOSS": "ConnectionLossException", "BADARGUMENTS": "BadArgumentsException",
    "NONODE": "NoNodeException", "BADVERSION": "BadVersionException",
    "NOCHILDRENFOREPHEMERALS": "NoChildrenForEphemeralsException", "NODEEXISTS": "NodeExistsException",
    "NOTEMPTY": "NotEmptyException", "SESSIONEXPIRED": "SessionExpiredException",
}


def kafka_name(exc: BaseException) -> str:
    """The Kafka/JVM exception class name to report for ``exc``."""
    return getattr(exc, "kafka_name", type(exc).__name__)


class RecordValueError(ValueError):
    """A record of a log whose values the engine cannot hold or act on (a forged or damaged log: a replica
    list holding a string, a partition beyond what the columns hold); the message names the record."""
