"""kcontroller's lowest layer: record types, the msgpack codec, columnar batches and the append-only segmented log.

Imports nothing else of kcontroller (see DESIGN.md).
"""

from events import library_logging  # noqa: E402,F401  (the library logs through the standard library)
