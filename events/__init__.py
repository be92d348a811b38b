"""kcontroller's lowest layer: record types, the msgpack codec, columnar batches and the append-only segmented log.

Imports nothing else of kcontroller (see DESIGN.md).
"""
