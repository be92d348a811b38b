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
        super().__init__(f"KeeperErrorCode = {_READABLE.get(code, code)}" + (f" for {path}" if path else ""))
        self.code = code
        self.path = path

    @property
    def kafka_name(self) -> str:
        return f"org.apache.zookeeper.KeeperException${_KEEPER_CLASS.get(self.code, 'SystemErrorException')}"


_READABLE = {"NODEEXISTS": "NodeExists", "NONODE": "NoNode", "BADVERSION": "BadVersion"}
_KEEPER_CLASS = {"NODEEXISTS": "NodeExistsException", "NONODE": "NoNodeException",
                 "BADVERSION": "BadVersionException"}


def kafka_name(exc: BaseException) -> str:
    """The Kafka/JVM exception class name to report for ``exc``."""
    return getattr(exc, "kafka_name", type(exc).__name__)
