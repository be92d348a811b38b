"""The base of the controller's events, and the one event the event manager itself uses.

A ``ControllerEvent`` is what the event manager queues and hands to the processor (the
controller). Each concrete event class names its :class:`ControllerState` and may override
``preempt()``, which runs instead of processing when the event is drained from the queue
(``clear_and_put``, controller shutdown), e.g. to answer a pending request with an error.
The concrete events of the controller are defined elsewhere.
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
