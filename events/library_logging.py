"""How kcontroller's packages log when used as a library: through the standard library's ``logging``.

Every module logs with structlog (``structlog.get_logger("kcontroller.<part>")``). Unless the program
has configured structlog itself, importing kcontroller routes those loggers to ``logging.getLogger`` of
the same name, each event rendered as ``message key=value ...``, and gives the ``kcontroller`` logger a
``NullHandler``: a program that uses the library sees nothing until it configures logging (e.g.
``logging.basicConfig(level=logging.INFO)``), and levels are filtered before a line is built. The
command line configures structlog itself (``kcontroller.logging_setup``).
"""
from __future__ import annotations

import logging

import structlog

ROOT = "kcontroller"


def _render(_logger, _name: str, event: dict) -> str:
    message = str(event.pop("event", ""))
    if not event:
        return message
    return message + " " + " ".join(f"{k}={v}" for k, v in event.items())


def route_to_standard_logging() -> None:
    """Send structlog's loggers to the standard library's (done at import unless structlog is configured)."""
    logging.getLogger(ROOT).addHandler(logging.NullHandler())
    structlog.configure(
        processors=[structlog.stdlib.filter_by_level, structlog.processors.format_exc_info, _render],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )


if not structlog.is_configured():
    route_to_standard_logging()
else:
    logging.getLogger(ROOT).addHandler(logging.NullHandler())
