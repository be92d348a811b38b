"""The controller: context, event manager, request batch and (later) the event handlers."""
