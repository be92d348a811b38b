"""The simulated cluster around the embedded controller: a deterministic clock and scheduler,
brokers with a data plane, fault injection, scenarios and metrics, and the views an operator
gets of them (such as the KRaft metadata quorum as ``kafka-metadata-quorum.sh describe`` shows
it). Nothing here reads the wall clock; time is always passed in.
"""
