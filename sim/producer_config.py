"""The producer client's configs a scenario may set (``workload.producers[].configs``), with Kafka 3.7's
defaults and bounds: the one definition the scenario parser checks against and the producer reads.

Only the configs that decide when batches go out, how many wait, and how errors are retried are
simulated; ``acks`` is the producer's own field of the scenario.
"""
from __future__ import annotations

from dataclasses import dataclass

INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1


@dataclass(frozen=True)
class ProducerConfigDef:
    name: str
    default: int
    minimum: int
    maximum: int
    doc: str


PRODUCER_CONFIGS: dict[str, ProducerConfigDef] = {d.name: d for d in (
    ProducerConfigDef("batch.size", 16384, 0, INT_MAX,
                      "bytes of messages per partition batch (0: one message per batch)"),
    ProducerConfigDef("linger.ms", 0, 0, LONG_MAX,
                      "how long a batch that is not full waits for more messages before its leader is ready"),
    ProducerConfigDef("max.in.flight.requests.per.connection", 5, 1, INT_MAX,
                      "produce requests a broker may have unanswered from this producer"),
    ProducerConfigDef("request.timeout.ms", 30000, 0, INT_MAX,
                      "how long the producer waits for an answer, and the produce request's timeout at the broker "
                      "(how long acks=all waits for the ISR)"),
    ProducerConfigDef("delivery.timeout.ms", 120000, 0, INT_MAX,
                      "how long after a batch was made it may still be sent or retried"),
    ProducerConfigDef("retries", INT_MAX, 0, INT_MAX, "how often a failed batch is sent again"),
    ProducerConfigDef("retry.backoff.ms", 100, 0, LONG_MAX, "the wait before a failed batch is sent again"),
    ProducerConfigDef("reconnect.backoff.ms", 50, 0, LONG_MAX,
                      "the wait before connecting again to a broker whose connection failed"),
    ProducerConfigDef("reconnect.backoff.max.ms", 1000, 0, LONG_MAX,
                      "the longest wait between reconnections (the wait doubles per failure up to it)"),
    ProducerConfigDef("metadata.max.age.ms", 300000, 0, LONG_MAX,
                      "the longest the producer goes without refreshing its metadata"),
)}


class ProducerConfigError(ValueError):
    """A producer config the simulation does not know, or a value Kafka would refuse."""


def producer_configs(values: dict[str, int]) -> dict[str, int]:
    """Every simulated producer config: ``values`` (name -> int) over Kafka's defaults, checked as Kafka's
    ProducerConfig checks them. Raises ProducerConfigError naming the config."""
    out = {name: d.default for name, d in PRODUCER_CONFIGS.items()}
    for name, value in values.items():
        d = PRODUCER_CONFIGS.get(name)
        if d is None:
            known = ", ".join(sorted(PRODUCER_CONFIGS))
            raise ProducerConfigError(f"{name}: not a producer config the simulation knows (known: {known}; "
                                      f"acks is the producer's own field)")
        if type(value) is not int or not d.minimum <= value <= d.maximum:
            raise ProducerConfigError(f"{name}: expected an integer in {d.minimum}..{d.maximum}, got {value!r:.60}")
        out[name] = value
    least = out["linger.ms"] + out["request.timeout.ms"]
    if out["delivery.timeout.ms"] < least:
        # KafkaProducer.configureDeliveryTimeout: a value set this small is refused; the default is raised.
        if "delivery.timeout.ms" in values:
            raise ProducerConfigError("delivery.timeout.ms should be equal to or larger than linger.ms + "
                                      "request.timeout.ms")
        out["delivery.timeout.ms"] = min(least, INT_MAX)
    return out
