"""The simulated cluster around the embedded controller: a deterministic clock and scheduler,
brokers with a data plane, fault injection, scenarios and metrics, and the views an operator
gets of them (such as the KRaft metadata quorum as ``kafka-metadata-quorum.sh describe`` shows
it). Nothing here reads the wall clock; time is always passed in.

The pieces:

- ``event_loop`` — simulated time and the (time, sequence) event heap, with the run's one
  seeded random source.
- ``network`` — latency, FIFO links, network partitions (cut links) and slow nodes between
  brokers, the metadata store (``"zk"``) and clients.
- ``simulation`` and ``sim_broker`` — the engine: broker processes with store sessions and
  heartbeats, each running Kafka's controller candidate, requests and responses over the network
  (the control plane so far; the data plane is next).
- ``scenario`` — the YAML scenario format (docs/scenarios.md) and its validation.
- ``describe_parser`` and ``whatif`` — a real cluster's ``kafka-topics.sh --describe`` (or a
  reassignment JSON) rebuilt around the controller, and what broker failures or shutdowns do to it.
- ``quorum`` — the KRaft metadata quorum's leader-side replica tracking and its describe output;
  ``kraft_quorum`` runs it in a simulation (a scenario's ``quorum`` section), the brokers fetching.
"""
