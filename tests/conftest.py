"""Shared fixtures: a wired-up controller harness, a partition-state store that can be scripted, and the
one Spark session of the test run.

``make_harness(...)`` builds a ControllerContext, Journal (records kept in memory), ControllerChannel
(requests kept in ``channel.sent``), ControllerBrokerRequestBatch and both state machines, all sharing a
``ScriptedStore``: the in-memory ``/state`` store that records every call and lets a test hook a call to
raise (a ZooKeeper client exception), return its own result (an error code such as NODEEXISTS, or a
BADVERSION retry) or change the stored states first (a concurrent writer such as a partition leader).
"""
from __future__ import annotations

import logging
import os
import sys

import pytest
import structlog

from controller.context import ControllerContext
from controller.store.partition_state_store import InMemoryPartitionStateStore
from controller.request_batch import ControllerBrokerRequestBatch, ControllerChannel
from events.journal import Journal
from events.records import TransitionFailed
from statemachines.leader_and_isr import LeaderAndIsr, LeaderIsrAndControllerEpoch
from statemachines.partition_state_machine import PartitionStateMachine
from statemachines.replica_state_machine import ReplicaStateMachine


@pytest.fixture(scope="module")
def quiet_engine_logs():
    """The engine logs every step: nothing below CRITICAL while a module's runs go (loggers not cached), then
    structlog put back as it was. A module takes it with ``pytestmark = pytest.mark.usefixtures(...)``."""
    saved = structlog.get_config()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL),
                        cache_logger_on_first_use=False)
    try:
        yield
    finally:
        structlog.configure(**saved)


class ScriptedStore(InMemoryPartitionStateStore):
    """InMemoryPartitionStateStore whose calls are recorded and may be hooked.

    A hook gets the call's argument; it may raise, return a result to use instead of the real call's,
    or return None to let the real call run (possibly after changing ``self.states``).
    """

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, object]] = []
        self.on_get = None
        self.on_create = None
        self.on_update = None

    def ops(self) -> list[str]:
        return [name for name, _ in self.calls]

    def get_partition_states(self, partitions):
        partitions = list(partitions)
        self.calls.append(("get", tuple(partitions)))
        if self.on_get is not None and (out := self.on_get(partitions)) is not None:
            return out
        return super().get_partition_states(partitions)

    def create_partition_states(self, states, expected_controller_epoch_zk_version):
        self.calls.append(("create", dict(states)))
        if self.on_create is not None and (out := self.on_create(states)) is not None:
            return out
        return super().create_partition_states(states, expected_controller_epoch_zk_version)

    def update_leader_and_isr(self, states, controller_epoch, expected_controller_epoch_zk_version):
        self.calls.append(("update", dict(states)))
        if self.on_update is not None and (out := self.on_update(states)) is not None:
            return out
        return super().update_leader_and_isr(states, controller_epoch, expected_controller_epoch_zk_version)


class Harness:
    """One controller's state machines over a fresh context; Kafka's unit tests use controller 5, epoch 50."""

    def __init__(self, controller_id: int = 5, epoch: int = 50, **psm_kwargs) -> None:
        self.ctx = ControllerContext()
        self.ctx.epoch = epoch
        self.journal = Journal()
        self.journal.set_writer(controller_id, epoch)
        self.channel = ControllerChannel()
        self.store = ScriptedStore()
        self.batch = ControllerBrokerRequestBatch(controller_id, self.ctx, self.journal, self.channel)
        self.rsm = ReplicaStateMachine(controller_id, self.ctx, self.store, self.batch, self.journal)
        self.psm = PartitionStateMachine(controller_id, self.ctx, self.store, self.batch, self.journal, **psm_kwargs)

    def live(self, *broker_ids: int) -> None:
        """Register live brokers; broker b gets registration epoch 100 + b."""
        self.ctx.add_live_brokers({b: 100 + b for b in broker_ids})

    def leadership(self, tp, leader: int, isr, *, leader_epoch: int = 0, partition_epoch: int = 0,
                   controller_epoch: int | None = None, recovery_state: int = 0, context: bool = True,
                   store: bool = True) -> LeaderIsrAndControllerEpoch:
        """Put the same leader/ISR into the context cache and/or the store's ``/state`` znode."""
        info = LeaderIsrAndControllerEpoch(
            LeaderAndIsr(leader, leader_epoch, tuple(isr), recovery_state, partition_epoch),
            self.ctx.epoch if controller_epoch is None else controller_epoch)
        if context:
            self.ctx.put_partition_leadership_info(tp, info)
        if store:
            self.store.states[tp] = info
        return info

    def records(self, cls=None) -> list:
        return [r for r in self.journal.records if cls is None or isinstance(r, cls)]

    def failures(self) -> list:
        return self.records(TransitionFailed)

    def requests(self, api: int | None = None) -> list:
        return [r for r in self.channel.sent if api is None or r.api == api]

    def reset_output(self) -> None:
        self.journal.records.clear()
        self.channel.sent.clear()
        self.store.calls.clear()


@pytest.fixture
def make_harness():
    """Factory for a Harness (a factory rather than an instance so hypothesis tests can build fresh ones)."""
    return Harness


@pytest.fixture
def harness() -> Harness:
    return Harness()


@pytest.fixture
def quiet_cli_logging(monkeypatch):
    """For tests that call ``kcontroller.cli.main`` in process: main() configures structlog for the
    whole process (with cached loggers), after which tests that capture log lines would see nothing.
    Here it configures nothing, diagnostics stay quiet, and structlog's defaults come back after."""
    monkeypatch.setattr("kcontroller.cli.configure_logging", lambda level: None)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL),
                        cache_logger_on_first_use=False)
    yield
    structlog.reset_defaults()


@pytest.fixture(scope="session")
def spark():
    """The Spark session every ``spark``-marked test shares (one JVM per test run: starting one takes
    seconds): local[2], no UI, two shuffle partitions, Arrow for DataFrames made from local data.
    Skips the test when pyspark is not installed."""
    pyspark_sql = pytest.importorskip("pyspark.sql")
    # Python workers (Python Data Sources, if a test uses one) run with this interpreter.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    session = (pyspark_sql.SparkSession.builder.master("local[2]").appName("kcontroller-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.default.parallelism", "2")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true")
               .config("spark.sql.session.timeZone", "UTC")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
