"""The controller: Kafka's ``KafkaController`` with its context, FIFO event manager, event handlers,
per-broker request batch, reassignment and topic deletion.

Sub-packages, bottom to top: ``store`` (the ZooKeeper model and Kafka's ZooKeeper client; imports
nothing else of ``controller``), this package's own modules, and ``embedding`` (the in-process
cluster around the controller; nothing else here imports it).
"""
