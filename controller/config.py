"""Broker configuration by Kafka's own names, with Kafka 3.7's defaults.

Values are kept as strings, as Kafka's configs are, and parsed on read. Unknown names are
allowed (a scenario may carry configs the engine does not use yet) but a misspelt known name
is an error, so ``unclean.leader.elections.enable`` does not silently do nothing. The value of
every known name is checked as Kafka's ConfigDef checks it (:data:`TYPES`: its type and range),
with Kafka's message: ``Invalid value abc for configuration min.insync.replicas: Not a number of
type INT``.
"""
from __future__ import annotations

import difflib
import re
from collections.abc import Mapping

DEFAULTS: dict[str, str] = {
    "unclean.leader.election.enable": "false",
    "auto.leader.rebalance.enable": "true",
    "leader.imbalance.per.broker.percentage": "10",
    "leader.imbalance.check.interval.seconds": "300",
    "delete.topic.enable": "true",
    "zookeeper.session.timeout.ms": "18000",
    "default.replication.factor": "1",
    "num.partitions": "1",
    "min.insync.replicas": "1",
    "controlled.shutdown.enable": "true",
    "controlled.shutdown.max.retries": "3",
    "controlled.shutdown.retry.backoff.ms": "5000",
    "replica.lag.time.max.ms": "30000",
    "request.timeout.ms": "30000",
    "replica.fetch.max.bytes": "1048576",
    "replica.fetch.response.max.bytes": "10485760",
    "replica.fetch.wait.max.ms": "500",
    "replica.fetch.backoff.ms": "1000",
    "num.replica.fetchers": "1",
    "inter.broker.protocol.version": "3.7",
}
# ConfigDef type and lower bound (None: any) of each name above and of the topic configs we use.
TYPES: dict[str, tuple[str, int | None]] = {
    "unclean.leader.election.enable": ("BOOLEAN", None),
    "auto.leader.rebalance.enable": ("BOOLEAN", None),
    "leader.imbalance.per.broker.percentage": ("INT", None),
    "leader.imbalance.check.interval.seconds": ("LONG", 1),
    "delete.topic.enable": ("BOOLEAN", None),
    "zookeeper.session.timeout.ms": ("INT", None),
    "default.replication.factor": ("INT", None),
    "num.partitions": ("INT", 1),
    "min.insync.replicas": ("INT", 1),
    "controlled.shutdown.enable": ("BOOLEAN", None),
    "controlled.shutdown.max.retries": ("INT", None),
    "controlled.shutdown.retry.backoff.ms": ("LONG", None),
    "replica.lag.time.max.ms": ("LONG", None),
    "request.timeout.ms": ("INT", None),
    "replica.fetch.max.bytes": ("INT", 0),
    "replica.fetch.response.max.bytes": ("INT", 0),
    "replica.fetch.wait.max.ms": ("INT", None),
    "replica.fetch.backoff.ms": ("INT", 0),
    "num.replica.fetchers": ("INT", None),
    "inter.broker.protocol.version": ("VERSION", None),
}
_BOUNDS = {"INT": (-2**31, 2**31 - 1), "LONG": (-2**63, 2**63 - 1)}
_NUMBER = re.compile(r"[-+]?[0-9]+")
_VERSION = re.compile(r"[0-9]{1,3}\.[0-9]{1,3}(\.[0-9]{1,3})?(-IV[0-9]{1,3})?")

# Kafka's log.dir default: the only log directory when log.dirs (default null: not in DEFAULTS) is not set.
DEFAULT_LOG_DIR = "/tmp/kafka-logs"


class ConfigError(ValueError):
    """A config name or value Kafka would reject."""


def check_config_name(name: str) -> None:
    """ConfigError for a name that is not a string, or is close to a known name without being one."""
    if not isinstance(name, str) or not name:
        raise ConfigError(f"a config name must be a non-empty string, got {name!r:.60}")
    if name not in TYPES:
        close = difflib.get_close_matches(name, TYPES, n=1, cutoff=0.85)
        if close:
            raise ConfigError(f"unknown config {name!r}; did you mean {close[0]!r}?")


def check_config_value(name: str, value: str) -> None:
    """ConfigError, with Kafka's ConfigException message, for a value of a known config that Kafka's
    ConfigDef would refuse (wrong type, out of range); values of other names are not checked."""
    kind, low = TYPES.get(name, (None, None))
    if kind is None:
        return
    text = value.strip()
    if kind == "BOOLEAN":
        if text.lower() not in ("true", "false"):
            raise ConfigError(f"Invalid value {value} for configuration {name}: Expected value to be either true "
                              "or false")
        return
    if kind == "VERSION":
        if not _VERSION.fullmatch(text):
            raise ConfigError(f"Invalid value {value} for configuration {name}: Version {value} is not a valid "
                              "version")
        return
    lo, hi = _BOUNDS[kind]
    if not _NUMBER.fullmatch(text) or len(text) > 20 or not lo <= int(text) <= hi:
        raise ConfigError(f"Invalid value {value} for configuration {name}: Not a number of type {kind}")
    if low is not None and int(text) < low:
        raise ConfigError(f"Invalid value {value} for configuration {name}: Value must be at least {low}")


class KafkaConfig(Mapping[str, str]):
    """Kafka broker configs: ``overrides`` on top of ``DEFAULTS``."""

    def __init__(self, overrides: Mapping[str, object] | None = None):
        values = dict(DEFAULTS)
        for name, value in (overrides or {}).items():
            check_config_name(name)
            values[name] = text = str(value).lower() if isinstance(value, bool) else str(value)
            check_config_value(name, text)
        self._values = values

    def __getitem__(self, name: str) -> str:
        return self._values[name]

    def __iter__(self):
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def get_bool(self, name: str) -> bool:
        value = self._values[name].strip().lower()
        if value not in ("true", "false"):
            raise ConfigError(f"{name} must be true or false, got {self._values[name]!r}")
        return value == "true"

    def get_int(self, name: str) -> int:
        try:
            return int(self._values[name])
        except ValueError:
            raise ConfigError(f"{name} must be an integer, got {self._values[name]!r}") from None

    def with_overrides(self, overrides: Mapping[str, object]) -> KafkaConfig:
        return KafkaConfig({**self._values, **overrides})

    @property
    def log_dirs(self) -> tuple[str, ...]:
        """KafkaConfig.logDirs: ``log.dirs`` (comma-separated) if set, else ``log.dir`` (default /tmp/kafka-logs)."""
        value = self._values.get("log.dirs") or self._values.get("log.dir") or DEFAULT_LOG_DIR
        return tuple(d.strip() for d in value.split(",") if d.strip())

    @property
    def leader_recovery_supported(self) -> bool:
        """IBP >= 3.2-IV0: unclean leaders start RECOVERING (KIP-704)."""
        major, minor = (int(x) for x in self._values["inter.broker.protocol.version"].split("-")[0].split(".")[:2])
        return (major, minor) >= (3, 2)

    @property
    def halt_broker_on_log_dir_failure(self) -> bool:
        """IBP < 1.0-IV0: a broker halts on any log directory failure (ReplicaManager's LogDirFailureHandler)."""
        major, minor = (int(x) for x in self._values["inter.broker.protocol.version"].split("-")[0].split(".")[:2])
        return (major, minor) < (1, 0)

    @property
    def leader_and_isr_topic_ids(self) -> bool:
        """IBP >= 2.8-IV1: LeaderAndIsr v5+, whose responses name topics by id (LeaderAndIsrResponse.partitionErrors
        drops the topics the controller no longer has an id for)."""
        major, minor = (int(x) for x in self._values["inter.broker.protocol.version"].split("-")[0].split(".")[:2])
        return (major, minor) >= (2, 8)

    @property
    def alter_partition_supported(self) -> bool:
        """IBP >= 2.7-IV2: leaders send AlterPartition instead of writing ISR change notifications."""
        major, minor = (int(x) for x in self._values["inter.broker.protocol.version"].split("-")[0].split(".")[:2])
        return (major, minor) >= (2, 7)
