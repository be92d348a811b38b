"""The metadata store: an embedded ZooKeeper model and Kafka's ZooKeeper client on top of it.

``zookeeper`` is the server model (znodes, sessions, ephemerals, watches, multi), ``state_table`` its
partitions' ``/state`` znodes as columns (and their bodies), ``zk_data`` the znode paths and Kafka's
JSON bodies, ``kafka_zk_client`` Kafka's ``KafkaZkClient`` (fenced writes, batched reads),
``state_columns`` the column methods of the partition-state store over the per-partition ones,
``partition_state_store`` a bare in-memory ``/state`` store for state-machine tests.
Nothing here imports the rest of ``controller``.
"""
