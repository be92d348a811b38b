"""The offline half of kcontroller: audits of event logs and of Kafka's own log files.

Works from records alone and never imports the engine (``controller``/``sim``): anything that
can be turned into :class:`audit.rows.AuditRow` rows — our msgpack logs, Kafka's
``state-change.log`` and ``controller.log`` — is checked the same way, in process for small
inputs or on Spark for large ones.
"""
