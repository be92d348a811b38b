"""KRaft-era Kafka logs (3.3 to 4.x): broker and QuorumController lines read into KRaft rows, and the KRaft checks.

Three parts: single lines of every template (exact texts of apache/kafka, and the traps: the 3.6+ Follower
line's "previous" fields, the ELR line's ``leader=-2``, lines without a controller prefix); the synthetic
fixtures of tests/data/kraft (no ../shared needed), each with the violations and findings it was written to
show; the eight real KRaft files of ../shared/real-logs, each with the findings it shows, checked
against the file's own lines (skipped without ../shared); the decoded metadata log folded with Kafka's
merge semantics (a hypothesis property against a reference fold); any KRaft-like line read without raising.
"""
from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audit import checks, local_engine
from audit import kraft_rows as kr
from audit.kafka_text_logs import ERA_2_6, ERA_KRAFT, read_kafka_lines, read_kafka_log
from audit.kraft_controller_lines import parse_registration
from audit.runner import run_audit

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "kraft"
LAYOUT_FIXTURE = ROOT / "tests" / "data" / "layouts" / "base.log"
REAL_LOGS = Path(os.environ.get("KCONTROLLER_REAL_LOGS") or ROOT.parent / "shared" / "real-logs")
KRAFT_REAL = ["ammar-kafka-4.0-controller-fencing.log", "ammar-kafka-4.0-state-change.log",
              "betrajj-kafka-kraft-3.9-controller-2025-02-07-11.log",
              "betrajj-kafka-kraft-3.9-controller-2025-02-11-14.log",
              "betrajj-kafka-kraft-3.9-controller-2025-02-11-15.log", "betrajj-kafka-kraft-3.9-state-change.log",
              "graphlogistics-kafka-4.1.1-controller-elr.log", "graphlogistics-kafka-4.1.1-state-change.log"]
needs_real_logs = pytest.mark.skipif(not all((REAL_LOGS / n).is_file() for n in KRAFT_REAL),
                                     reason=f"no real KRaft logs at {REAL_LOGS}")
TS = "[2025-03-01 10:00:00,000]"
QC = "org.apache.kafka.controller.QuorumController"
RCM = "org.apache.kafka.controller.ReplicationControlManager"
CCM = "org.apache.kafka.controller.ClusterControlManager"


def line(message: str, logger: str = "state.change.logger", level: str = "INFO") -> str:
    return f"{TS} {level} {message} ({logger})"


def kraft(*lines: str):
    return read_kafka_lines(list(lines), source="k.log")


def audited(reading) -> checks.Report:
    return local_engine.audit([], kraft_rows=reading.kraft_rows)


def kinds_at(report: checks.Report) -> list[tuple[int, str]]:
    return [(v.position, v.kind) for v in report.violations + report.findings]


TRANSITIONING = line("[Broker id=1] Transitioning 1 partition(s) to local leaders.")


# --- single lines -----------------------------------------------------------------------------------------------
def test_broker_leader_follower_and_creating_lines():
    r = kraft(TRANSITIONING,
              line("[Broker id=1] Creating new partition t-3 with topic id yAKEixxUT1yJzTyrH9xg3A."),
              line("[Broker id=1] Leader t-3 with topic id Some(yAKEixxUT1yJzTyrH9xg3A) starts at leader epoch 7 from "
                   "offset 12 with partition epoch 9, high watermark 12, ISR [1,2,3], adding replicas [] and removing "
                   "replicas [] . Previous leader Some(2) and previous leader epoch was 6."),
              # 3.6+: the Follower line's "previous" fields print the new values; they are not read.
              line("[Broker id=2] Follower t-3 starts at leader epoch 7 from offset 12 with partition epoch 9 and high "
                   "watermark 12. Current leader is 1. Previous leader Some(1) and previous leader epoch was 7."))
    assert r.era == ERA_KRAFT and r.rows == [] and r.counts.not_understood == 0
    created, leader, follower = r.kraft_rows
    assert (created.kind, created.node, created.topic, created.partition, created.topic_id) == (
        kr.KRAFT_PARTITION_CREATED, 1, "t", 3, "yAKEixxUT1yJzTyrH9xg3A")
    assert (leader.kind, leader.node, leader.leader, leader.leader_epoch, leader.partition_epoch, leader.isr,
            leader.epoch) == (kr.KRAFT_LEADER, 1, 1, 7, 9, (1, 2, 3), 6)
    # The Follower line prints no topic id: broker 2 has not named one for t-3 (broker 1's is not its own).
    assert (follower.kind, follower.node, follower.leader, follower.leader_epoch, follower.partition_epoch,
            follower.topic_id) == (kr.KRAFT_FOLLOWER, 2, 1, 7, 9, None)
    assert (r.counts.rows, r.counts.other) == (3, 1)


def test_the_3_3_leader_line_and_its_previous_leader_epoch():
    r = kraft(TRANSITIONING,
              line("[Broker id=0] Leader t-0 with topic id Some(sJISq1r0TeuuvViIeWa0A) starts at leader epoch 0 from "
                   "offset 0 with partition epoch 0, high watermark 0, ISR [0], adding replicas [] and removing "
                   "replicas []. Previous leader epoch was -1."))
    (row,) = r.kraft_rows
    assert (row.topic_id, row.leader_epoch, row.isr, row.epoch) == ("sJISq1r0TeuuvViIeWa0A", 0, (0,), -1)


def test_zookeeper_mode_leader_lines_make_no_kraft_rows():
    # A ZooKeeper-mode 3.x broker prints the same Leader line; without KRaft evidence it is not a KRaft row.
    r = kraft(line("[Broker id=0] Leader t-0 with topic id Some(sJISq1r0TeuuvViIeWa0A) starts at leader epoch 0 "
                   "from offset 0 with partition epoch 0, high watermark 0, ISR [0], adding replicas [] and removing "
                   "replicas []. Previous leader epoch was -1."))
    assert not r.kraft and r.kraft_rows == [] and r.era == ERA_2_6 and r.counts.other == 1


def test_controller_record_lines():
    reg = ("PartitionRegistration(replicas=[1, 2], directories=[AEIYNdxdco-wXF23huo6dw, AEIYNdxdco-wXF23huo6dw], "
           "isr=[1], removingReplicas=[], addingReplicas=[], elr=[2], lastKnownElr=[2], leader=1, "
           "leaderRecoveryState=RECOVERED, leaderEpoch=4, partitionEpoch=6)")
    r = kraft(line(f"[QuorumController id=3] Replayed TopicRecord for topic t with topic ID U1.", RCM),
              line(f"[QuorumController id=3] Replayed PartitionRecord for new partition t-0 with topic ID U1 and "
                   f"{reg}.", RCM),
              line("[QuorumController id=3] Replayed RemoveTopicRecord for topic t with ID U1.", RCM))
    topic, partition, removed = r.kraft_rows
    assert (topic.kind, topic.topic, topic.topic_id, topic.node) == (kr.KRAFT_TOPIC_CREATED, "t", "U1", 3)
    assert (partition.kind, partition.topic, partition.partition, partition.replicas, partition.isr, partition.elr,
            partition.leader, partition.leader_epoch, partition.partition_epoch, partition.recovering) == (
        kr.KRAFT_REGISTRATION, "t", 0, (1, 2), (1,), (2,), 1, 4, 6, False)
    assert (removed.kind, removed.topic_id) == (kr.KRAFT_TOPIC_REMOVED, "U1")
    assert parse_registration(reg)["directories"].startswith("[AEIY")


def test_the_elr_line_names_the_leader_its_change_record_prints_as_minus_2():
    r = kraft(line("[QuorumController id=1] Replayed TopicRecord for topic t with topic ID U1.", RCM),
              line("Setting new leader for topicId U1, partition 30 to 1 using ELR. Previous partition: "
                   "PartitionRegistration(replicas=[1, 2], directories=[A, B], isr=[], removingReplicas=[], "
                   "addingReplicas=[], elr=[1, 2], lastKnownElr=[1], leader=-1, leaderRecoveryState=RECOVERED, "
                   "leaderEpoch=49, partitionEpoch=49), change record: PartitionChangeRecord(partitionId=30, topicId=U1, "
                   "isr=null, leader=-2, replicas=null)", "org.apache.kafka.controller.PartitionChangeBuilder"))
    _topic, before, election = r.kraft_rows
    # No controller prefix on the ELR line: its node is the controller named last.
    assert (before.kind, before.node, before.topic, before.leader, before.leader_epoch, before.elr) == (
        kr.KRAFT_REGISTRATION, 1, "t", -1, 49, (1, 2))
    assert (election.kind, election.detail, election.leader, election.isr, election.elr, election.replicas) == (
        kr.KRAFT_ELECTION, kr.ELECTED_FROM_ELR, 1, (1,), (2,), (1, 2))
    assert kinds_at(audited(r)) == [(2, checks.KRAFT_ELR_ELECTION)]


def test_the_unclean_partition_change_line():
    r = kraft(line("[QuorumController id=1] UNCLEAN partition change for drill.m19.unclean-0 with topic ID U1: "
                   "isr: [1] -> [2], leader: 1 -> 2, leaderRecoveryState: RECOVERED -> RECOVERING, leaderEpoch: 2 -> 3, "
                   "partitionEpoch: 5 -> 6", RCM))
    (row,) = r.kraft_rows
    assert (row.topic, row.partition, row.leader, row.leader_epoch, row.partition_epoch, row.isr, row.recovering,
            row.detail) == ("drill.m19.unclean", 0, 2, 3, 6, (2,), True, kr.ELECTED_UNCLEAN)
    assert kinds_at(audited(r)) == [(1, checks.KRAFT_UNCLEAN_ELECTION)]


@pytest.mark.parametrize("message, logger, expected", [
    ("Replayed initial RegisterBrokerRecord for broker 10: RegisterBrokerRecord(brokerId=10, isMigratingZkBroker=false, "
     "incarnationId=OBrv820yTC6fTrgENx176Q, brokerEpoch=123, endPoints=[], features=[], rack=null, fenced=true)", CCM,
     (kr.KRAFT_BROKER_REGISTERED, 10, 123, kr.REGISTERED_INITIAL)),
    ("Replayed RegisterBrokerRecord establishing a new incarnation of broker 10: RegisterBrokerRecord(brokerId=10, "
     "isMigratingZkBroker=false, incarnationId=RnJ_0YBhS5OaxvgWtPxHHQ, brokerEpoch=2157, endPoints=[])", CCM,
     (kr.KRAFT_BROKER_REGISTERED, 10, 2157, kr.REGISTERED_INCARNATION)),
    ("Replayed BrokerRegistrationChangeRecord modifying the registration for broker 10: BrokerRegistrationChangeRecord("
     "brokerId=10, brokerEpoch=123, fenced=1, inControlledShutdown=0, logDirs=[])", CCM,
     (kr.KRAFT_BROKER_CHANGED, 10, 123, kr.FENCED)),
    ("Replayed BrokerRegistrationChangeRecord modifying the registration for broker 2: BrokerRegistrationChangeRecord("
     "brokerId=2, brokerEpoch=7, fenced=0, inControlledShutdown=1, logDirs=[])", CCM,
     (kr.KRAFT_BROKER_CHANGED, 2, 7, kr.CONTROLLED_SHUTDOWN)),
    ("Fencing broker 10 at epoch 123 because its session has timed out.", RCM, (kr.KRAFT_BROKER_FENCED, 10, 123, None)),
    ("The request from broker 10 to unfence has been granted because it has caught up with the offset of its register "
     "broker record 2133.", "org.apache.kafka.controller.BrokerHeartbeatManager", (kr.KRAFT_UNFENCE_GRANTED, 10, None, None)),
    ("Unfenced broker 10 has requested and been granted an immediate shutdown.",
     "org.apache.kafka.controller.BrokerHeartbeatManager", (kr.KRAFT_SHUTDOWN_GRANTED, 10, None, "immediate")),
    ("The request from broker 2 to shut down has been granted since the lowest active offset 9223372036854775807 is now "
     "greater than the broker's controlled shutdown offset 93620.", "org.apache.kafka.controller.BrokerHeartbeatManager",
     (kr.KRAFT_SHUTDOWN_GRANTED, 2, None, "controlled")),
    ("In the new epoch 619, the leader is (none).", QC, (kr.KRAFT_RAFT_EPOCH, -1, 619, None)),
    ("Becoming the active controller at epoch 4, next write offset 2133.", QC, (kr.KRAFT_ACTIVATED, -1, 4, None)),
    ("Creating new QuorumController with clusterId 53umScLzTeajz4ICoMMl1A", QC,
     (kr.KRAFT_CONTROLLER_STARTED, -1, None, "53umScLzTeajz4ICoMMl1A")),
    ("writeNoOpRecord: event failed with NotLeaderException (treated as NotControllerException) at epoch 3056 in 1358 "
     "microseconds. Renouncing leadership and reverting to the last committed offset 93644. Exception message: Append "
     "failed because the replica is not the current leader", QC, (kr.KRAFT_RENOUNCED, -1, 3056, "error")),
])
def test_broker_registration_and_quorum_lines(message, logger, expected):
    r = kraft(line(f"[QuorumController id=10] {message}", logger))
    (row,) = r.kraft_rows
    assert (row.kind, row.broker, row.epoch, row.detail) == expected and row.node == 10


def test_renouncing_is_a_renounce_and_the_new_epoch():
    r = kraft(line("[QuorumController id=2] Renouncing the leadership due to a metadata log event. We were the leader at "
                   "epoch 607, but in the new epoch 608, the leader is (none). Reverting to last stable offset 52471.",
                   QC, "WARN"))
    assert [(x.kind, x.epoch, x.leader) for x in r.kraft_rows] == [(kr.KRAFT_RENOUNCED, 607, None),
                                                                    (kr.KRAFT_RAFT_EPOCH, 608, -1)]


def test_other_kraft_lines_are_understood_and_make_no_row():
    r = kraft(line("[QuorumController id=1] In the last 60000 ms period, 325 controller events were completed, which "
                   "took an average of 15.37 ms each.", "org.apache.kafka.controller.EventPerformanceMonitor"),
              line("[QuorumController id=1] handleBrokerUnfenced: changing 52 partition(s)", RCM),
              line("[Broker id=1] Stopped fetchers as part of controlled shutdown for 5 partitions"))
    assert r.kraft and r.kraft_rows == [] and (r.counts.other, r.counts.not_understood) == (3, 0)


# --- the fixtures (no ../shared needed) ---------------------------------------------------------------------------
FIXTURE_VERDICTS = {
    "broker-clean.log": [(15, checks.KRAFT_LEADER_EPOCH_GAP)],
    "broker-planted.log": [(6, checks.KRAFT_DUPLICATE_LEADER), (7, checks.KRAFT_LEADER_NOT_IN_ISR),
                           (8, checks.KRAFT_EPOCH_DECREASED), (9, checks.KRAFT_EPOCH_DECREASED)],
    "controller-findings.log": [(8, checks.KRAFT_RESTART_IN_OLD_SESSION), (11, checks.KRAFT_SESSION_TIMEOUT),
                                (18, checks.KRAFT_ELR_ELECTION), (19, checks.KRAFT_UNCLEAN_ELECTION),
                                (24, checks.KRAFT_TWO_ACTIVE_CONTROLLERS), (28, checks.KRAFT_CONTROLLER_CHURN)],
    "controller-planted.log": [
        (5, checks.KRAFT_INVALID_REGISTRATION), (6, checks.KRAFT_EPOCH_DECREASED), (6, checks.KRAFT_EPOCH_DECREASED),
        (6, checks.KRAFT_INVALID_REGISTRATION), (6, checks.KRAFT_LEADER_NOT_IN_ISR), (7, checks.KRAFT_INVALID_REGISTRATION),
        (9, checks.KRAFT_BROKER_EPOCH_DECREASED), (12, checks.KRAFT_RAFT_EPOCH_DECREASED),
        (13, checks.KRAFT_TWO_LEADERS_IN_EPOCH), (10, checks.KRAFT_STALE_BROKER_EPOCH)],
}


@pytest.mark.parametrize("name", sorted(FIXTURE_VERDICTS))
def test_each_fixture_shows_what_it_was_written_to_show(name):
    reading = read_kafka_log(DATA / name)
    assert reading.era == ERA_KRAFT and reading.counts.not_understood == 0 and reading.rows == []
    assert kinds_at(audited(reading)) == FIXTURE_VERDICTS[name]


def test_a_new_topic_id_starts_the_partition_over():
    # broker-clean.log: t-0 recreated under topic id B at leader epoch 0, after epoch 3 under topic id A.
    rows = read_kafka_log(DATA / "broker-clean.log").kraft_rows
    by_id = {(r.topic_id, r.leader_epoch) for r in rows if r.kind == kr.KRAFT_LEADER and r.node == 1}
    assert by_id == {("AAAAAAAAAAAAAAAAAAAAAA", 0), ("BBBBBBBBBBBBBBBBBBBBBB", 0)}


def test_violation_details_name_what_was_expected():
    report = audited(read_kafka_log(DATA / "controller-planted.log"))
    details = {v.kind: v.detail for v in report.violations}       # the last of each kind
    first = next(v.detail for v in report.violations if v.kind == checks.KRAFT_INVALID_REGISTRATION)
    assert "the ISR is not a subset of the replicas (replicas [1, 2], ISR [1, 3]" in first
    assert "broker epoch 40, not above the broker epoch 50" in details[checks.KRAFT_BROKER_EPOCH_DECREASED]
    assert "Raft epoch 6 after epoch 7" in details[checks.KRAFT_RAFT_EPOCH_DECREASED]
    # A text log's locations read file:line.
    assert all(checks.format_violation(v).startswith(f"{DATA / 'controller-planted.log'}:{v.position} ")
               for v in report.violations)


def test_the_cli_exits_1_on_kraft_violations_and_0_on_findings_alone(tmp_path):
    planted = run_audit([str(DATA / "controller-planted.log")], engine="local")
    assert planted.exit_status == 1 and planted.report.summary["violations"] == 9
    assert planted.report.summary["kraft_violations_by_kind"][checks.KRAFT_INVALID_REGISTRATION] == 3
    findings = run_audit([str(DATA / "controller-findings.log")], engine="local")
    assert findings.exit_status == 0 and findings.report.summary["findings"] == 6
    assert findings.to_json()["finding_kinds"][checks.KRAFT_ELR_ELECTION]


def test_the_spark_path_merge_gives_the_local_report():
    # The runner's Spark path merges the KRaft pass's report into the engine's; on the same rows that must be
    # the report the local engine makes of both at once (a ZooKeeper-era fixture beside the KRaft ones).
    zk = read_kafka_log(LAYOUT_FIXTURE)
    kraft_rows = [r for name in sorted(FIXTURE_VERDICTS) for r in read_kafka_log(DATA / name).kraft_rows]
    for limit in (None, 3):
        whole = local_engine.audit(zk.rows, limit=limit, kraft_rows=kraft_rows)
        merged = checks.merge_reports(local_engine.audit(zk.rows, limit=limit),
                                      local_engine.audit_kraft(kraft_rows, limit=limit), limit)
        assert merged == whole


def test_merged_broker_files_read_as_one_run(tmp_path):
    # Each broker's lines in a file of its own, merged by time: the same KRaft rows as the shared file.
    lines = (DATA / "broker-clean.log").read_text().splitlines()
    by_broker: dict = {}
    for x in lines:
        m = re.search(r"\[Broker id=(\d+)\]", x)
        if m:
            by_broker.setdefault(m[1], []).append(x)
    paths = []
    for b, own in sorted(by_broker.items()):
        paths.append(tmp_path / f"broker-{b}.log")
        paths[-1].write_text("\n".join(own) + "\n")
    from audit.kafka_text_logs import read_kafka_logs
    merged = read_kafka_logs(paths, merge=True)

    def meaning(rows):
        return [r[4:] for r in rows]
    assert meaning(merged.kraft_rows) == meaning(read_kafka_log(DATA / "broker-clean.log").kraft_rows)


# --- the real KRaft files ---------------------------------------------------------------------------------------
def _lines_with(name: str, text: str) -> list[int]:
    with open(REAL_LOGS / name, encoding="utf-8") as f:
        return [no for no, x in enumerate(f, 1) if text in x and not x.startswith("#")]


def _real(name: str):
    reading = read_kafka_log(REAL_LOGS / name)
    return reading, audited(reading)


@needs_real_logs
@pytest.mark.parametrize("name", KRAFT_REAL)
def test_every_real_kraft_file_is_read_whole_into_kraft_rows(name):
    reading, report = _real(name)
    assert reading.era == ERA_KRAFT and reading.rows == [] and reading.counts.not_understood == 0
    assert reading.kraft_rows and report.summary["violations"] == 0, report.violations[:3]
    # The line of every row says what the row says.
    with open(REAL_LOGS / name, encoding="utf-8") as f:
        text = f.read().splitlines()
    for row in reading.kraft_rows:
        x = text[row.position - 1]
        if row.topic is not None and row.partition >= 0 and row.kind != kr.KRAFT_ELECTION:
            assert f"{row.topic}-{row.partition}" in x, (row, x)
        if row.kind in (kr.KRAFT_LEADER, kr.KRAFT_FOLLOWER) and row.detail is None:
            assert f"starts at leader epoch {row.leader_epoch} " in x and f"partition epoch {row.partition_epoch}" in x


@needs_real_logs
def test_ammar_4_0_controller_fencing_restarts_inside_the_old_session_then_session_timeouts():
    name = "ammar-kafka-4.0-controller-fencing.log"
    _, report = _real(name)
    found = Counter(v.kind for v in report.findings)
    assert found == {checks.KRAFT_SESSION_TIMEOUT: 6, checks.KRAFT_RESTART_IN_OLD_SESSION: 5}
    fencing = _lines_with(name, "because its session has timed out")
    assert [v.position for v in report.findings if v.kind == checks.KRAFT_SESSION_TIMEOUT] == fencing
    # Each streak of refused registrations starts right after a controller restart's replays and ends with the
    # fencing that lets the broker in: 5 streaks of 7 refusals.
    refused = _lines_with(name, "DuplicateBrokerRegistrationException")
    starts = [no for i, no in enumerate(refused) if i == 0 or any(f in range(refused[i - 1], no) for f in fencing)
              or no - refused[i - 1] > 20]
    restarts = [v for v in report.findings if v.kind == checks.KRAFT_RESTART_IN_OLD_SESSION]
    assert [v.position for v in restarts] == starts and len(refused) == 35
    assert all("refused 7 time(s)" in v.detail for v in restarts)
    # Broker epochs rise with each incarnation (123, 2157, 2278, 2997, 4375 are the fenced ones).
    assert [int(re.search(r"at epoch (\d+)", v.detail.replace("broker epoch", "at epoch"))[1])
            for v in report.findings if v.kind == checks.KRAFT_SESSION_TIMEOUT] == [123, 2157, 2278, 2278, 2997, 4375]


@needs_real_logs
def test_ammar_4_0_state_change_topic_recreated_under_a_new_topic_id_is_no_epoch_decrease():
    reading, report = _real("ammar-kafka-4.0-state-change.log")
    ids = {r.topic_id for r in reading.kraft_rows if r.topic == "__consumer_offsets"
           and r.kind == kr.KRAFT_PARTITION_CREATED}
    assert len(ids) == 2                    # __consumer_offsets created twice, under two topic ids
    assert report.summary["violations"] == 0 and report.summary["findings"] == 0


@needs_real_logs
def test_betrajj_3_9_controllers_churn():
    for name, expected in (("betrajj-kafka-kraft-3.9-controller-2025-02-07-11.log", [(7, 608, 619)]),
                           ("betrajj-kafka-kraft-3.9-controller-2025-02-11-14.log", []),
                           ("betrajj-kafka-kraft-3.9-controller-2025-02-11-15.log",
                            [(163, 3055, 3080), (631, 3085, 3089), (692, 3092, 3096)])):
        _, report = _real(name)
        churn = [v for v in report.findings if v.kind == checks.KRAFT_CONTROLLER_CHURN]
        assert len(report.findings) == len(churn), name
        got = [(v.position, *map(int, re.search(r"epochs (\d+) to (\d+)", v.detail).groups())) for v in churn]
        assert got == expected, name
        for position, _first, last in expected:   # the line is where the last epoch of the burst is logged
            assert f"In the new epoch {last}," in open(REAL_LOGS / name, encoding="utf-8").read().splitlines()[
                position - 1]


@needs_real_logs
def test_betrajj_3_9_state_change_three_brokers_share_a_file_and_miss_leader_epochs():
    name = "betrajj-kafka-kraft-3.9-state-change.log"
    reading, report = _real(name)
    assert {r.node for r in reading.kraft_rows} == {1, 2, 3}
    gaps = [(v.position, v.detail) for v in report.findings]
    assert [p for p, _ in gaps] == [16, 22, 327, 349, 368]
    text = (REAL_LOGS / name).read_text(encoding="utf-8").splitlines()
    assert "[Broker id=3] Follower kraft-test-0 starts at leader epoch 133 " in text[15]
    assert "[Broker id=3] Follower kraft-test-0 starts at leader epoch 131 " in text[8]
    for p in (327, 349, 368):   # all three brokers go from leader epoch 135 to 137 of kraft-test-0
        assert "Follower kraft-test-0 starts at leader epoch 137 " in text[p - 1]


@needs_real_logs
def test_graphlogistics_4_1_fenced_broker_comes_back_through_elr():
    name = "graphlogistics-kafka-4.1.1-controller-elr.log"
    _, report = _real(name)
    elr = _lines_with(name, "using ELR")
    assert len(elr) == 52
    assert [v.position for v in report.findings if v.kind == checks.KRAFT_ELR_ELECTION] == elr
    assert [v.position for v in report.findings if v.kind == checks.KRAFT_SESSION_TIMEOUT] == \
        _lines_with(name, "Fencing broker 1 at epoch 10 because its session has timed out")
    # The broker's side: every partition's leader epoch goes from 48 to 50 (49 was the leaderless one it missed).
    state = "graphlogistics-kafka-4.1.1-state-change.log"
    reading, broker = _real(state)
    assert [v.position for v in broker.findings] == _lines_with(state, "starts at leader epoch 50")
    assert all(v.kind == checks.KRAFT_LEADER_EPOCH_GAP and "leader epoch 50 after 48" in v.detail
               for v in broker.findings)


@needs_real_logs
@pytest.mark.parametrize("layout", ["strimzi", "dash", "compose", "ecs", "cri"])
def test_the_real_kraft_files_in_other_layouts_give_the_same_kraft_rows(layout, tmp_path):
    from test_log_layouts import LAYOUTS, read_lines, write_variant
    if layout not in LAYOUTS:
        pytest.skip(f"no layout {layout} in the generator")
    for name in KRAFT_REAL:
        original = read_kafka_log(REAL_LOGS / name)
        reading = read_kafka_log(write_variant(read_lines(REAL_LOGS / name), layout, tmp_path / name))
        # Layouts without a millisecond timestamp (or any) change time_ms; the rest is the same.
        assert [r[4:6] + r[7:] for r in reading.kraft_rows] == [r[4:6] + r[7:] for r in original.kraft_rows], name


# --- the decoded metadata log (kafka-dump-log.sh --cluster-metadata-decoder) -------------------------------------
def dump_lines(*records: tuple[str, dict]) -> list[str]:
    import json
    out = ["Dumping /var/lib/kafka/data/__cluster_metadata-0/00000000000000000000.log", "Log starting offset: 0"]
    for i, (kind, data) in enumerate(records):
        payload = json.dumps({"type": kind, "version": 0, "data": data})
        out.append(f"baseOffset: {i} lastOffset: {i} count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 "
                   f"producerEpoch: -1 partitionLeaderEpoch: 1 isTransactional: false isControl: false "
                   f"deleteHorizonMs: OptionalLong.empty position: {100 * i} CreateTime: {1000 + i} size: 100 magic: 2 "
                   f"compresscodec: none crc: 1 isvalid: true")
        out.append(f"| offset: {i} CreateTime: {1000 + i} keySize: -1 valueSize: 90 sequence: -1 headerKeys: [] "
                   f"payload: {payload}")
    return out


PARTITION = ("PARTITION_RECORD", {"partitionId": 0, "topicId": "U1", "replicas": [1, 2, 3], "isr": [1, 2, 3],
                                  "removingReplicas": [], "addingReplicas": [], "leader": 1, "leaderRecoveryState": 0,
                                  "leaderEpoch": 4, "partitionEpoch": 7})


def test_partition_changes_fold_with_kafkas_merge_semantics():
    r = read_kafka_lines(dump_lines(
        ("TOPIC_RECORD", {"name": "t", "topicId": "U1"}), PARTITION,
        # Only the ISR: the leader and its epoch stay, the partition epoch rises by one.
        ("PARTITION_CHANGE_RECORD", {"partitionId": 0, "topicId": "U1", "isr": [1, 2]}),
        # A leader (the same one, to bump its epoch, as Kafka does): the leader epoch rises too.
        ("PARTITION_CHANGE_RECORD", {"partitionId": 0, "topicId": "U1", "leader": 1}),
        # leader -2 and leaderRecoveryState -1 are "no change", as absent fields are.
        ("PARTITION_CHANGE_RECORD", {"partitionId": 0, "topicId": "U1", "leader": -2, "leaderRecoveryState": -1,
                                     "replicas": [1, 2, 4], "isr": None}),
        ("UNKNOWN_FUTURE_RECORD", {"x": 1})), source="dump.txt")
    assert r.era == "kraft-metadata-log" and r.kraft and r.rows == [] and r.counts.not_understood == 0
    states = [(x.leader, x.leader_epoch, x.partition_epoch, x.isr, x.replicas) for x in r.kraft_rows
              if x.kind == kr.KRAFT_REGISTRATION]
    assert states == [(1, 4, 7, (1, 2, 3), (1, 2, 3)), (1, 4, 8, (1, 2), (1, 2, 3)), (1, 5, 9, (1, 2), (1, 2, 3)),
                      (1, 5, 10, (1, 2), (1, 2, 4))]
    assert all(x.node == kr.METADATA_LOG and x.topic == "t" for x in r.kraft_rows if x.kind == kr.KRAFT_REGISTRATION)
    assert [x.time_ms for x in r.kraft_rows][:2] == [1000, 1001]
    assert audited(r).summary["violations"] == 0


def test_a_dump_line_that_is_not_a_record_is_not_understood():
    lines = dump_lines(PARTITION)
    lines.append('| offset: 9 CreateTime: 1 keySize: -1 valueSize: 3 sequence: -1 headerKeys: [] payload: {"type":')
    lines.append("something else")
    r = read_kafka_lines(lines)
    assert r.counts.not_understood == 2 and r.not_understood_sample[1] == (len(lines), "something else")


DUMP_VERDICTS = {
    "metadata-dump.txt": [(40, checks.KRAFT_ELR_ELECTION), (42, checks.KRAFT_UNCLEAN_ELECTION)],
    "metadata-dump-planted.txt": [(17, checks.KRAFT_FENCED_BROKER_USED), (19, checks.KRAFT_FENCED_BROKER_USED),
                                  (21, checks.KRAFT_INVALID_REGISTRATION), (25, checks.KRAFT_EPOCH_DECREASED),
                                  (25, checks.KRAFT_EPOCH_DECREASED)],
}


@pytest.mark.parametrize("name", sorted(DUMP_VERDICTS))
def test_each_metadata_dump_fixture_shows_what_it_was_written_to_show(name):
    reading = read_kafka_log(DATA / name)
    assert reading.era == "kraft-metadata-log" and reading.counts.not_understood == 0
    assert kinds_at(audited(reading)) == DUMP_VERDICTS[name]


def test_the_planted_dump_says_what_it_could_not_fold_and_why_the_fenced_broker_fails():
    reading = read_kafka_log(DATA / "metadata-dump-planted.txt")
    assert any("1 partition change(s) to partitions the dump had not shown" in n for n in reading.notes)
    details = [v.detail for v in audited(reading).violations]
    assert "broker 2 added to the ISR while fenced" in details[0] and "broker 2 made leader while fenced" in details[1]
    assert "the reassignment adds and removes the same replica" in details[2]


def test_a_snapshot_and_a_segment_read_in_order_as_one_history(tmp_path):
    from audit.kafka_text_logs import read_kafka_logs
    lines = (DATA / "metadata-dump.txt").read_text().splitlines()
    cut = next(i for i, x in enumerate(lines) if '"PARTITION_CHANGE_RECORD"' in x) - 1   # at a batch line
    snapshot, segment = tmp_path / "snapshot.txt", tmp_path / "segment.txt"
    snapshot.write_text("\n".join(lines[:cut]) + "\n")
    segment.write_text("\n".join(["Dumping /d/__cluster_metadata-0/00000000000000000021.log"] + lines[cut:]) + "\n")
    whole = read_kafka_log(DATA / "metadata-dump.txt")
    both = read_kafka_logs([snapshot, segment])
    assert [r[4:] for r in both.kraft_rows] == [r[4:] for r in whole.kraft_rows]
    assert {r.source for r in both.kraft_rows} == {str(snapshot), str(segment)}
    alone = read_kafka_log(segment)     # the segment without its snapshot: its changes cannot be folded
    assert any("not folded" in n for n in alone.notes)


def test_the_cli_audits_a_metadata_dump():
    planted = run_audit([str(DATA / "metadata-dump-planted.txt")], engine="local")
    assert planted.exit_status == 1
    assert planted.report.summary["kraft_violations_by_kind"][checks.KRAFT_FENCED_BROKER_USED] == 2
    clean = run_audit([str(DATA / "metadata-dump.txt")], engine="local")
    assert clean.exit_status == 0 and clean.report.summary["findings"] == 2
    assert clean.to_json()["inputs"][0]["era"] == "kraft-metadata-log"


# --- properties ---------------------------------------------------------------------------------------------------
_brokers = st.lists(st.integers(0, 5), max_size=4, unique=True)
_change = st.fixed_dictionaries({}, optional={
    "isr": st.one_of(st.none(), _brokers), "leader": st.integers(-2, 5), "replicas": _brokers,
    "eligibleLeaderReplicas": _brokers, "leaderRecoveryState": st.sampled_from([-1, 0, 1]),
    "addingReplicas": _brokers, "removingReplicas": _brokers})


@settings(max_examples=60, deadline=None)
@given(st.lists(_change, max_size=12))
def test_any_sequence_of_changes_folds_as_kafka_merges(changes):
    records = [("TOPIC_RECORD", {"name": "t", "topicId": "U1"}), PARTITION] + [
        ("PARTITION_CHANGE_RECORD", {"partitionId": 0, "topicId": "U1", **c}) for c in changes]
    regs = [x for x in read_kafka_lines(dump_lines(*records)).kraft_rows if x.kind == kr.KRAFT_REGISTRATION]
    assert len(regs) == len(changes) + 1
    # A reference fold, field by field.
    state = {"leader": 1, "le": 4, "isr": (1, 2, 3), "replicas": (1, 2, 3)}
    for change, reg, before in zip(changes, regs[1:], regs):
        assert reg.partition_epoch == before.partition_epoch + 1          # every change raises it by one
        if change.get("leader", -2) != -2:
            state["leader"], state["le"] = change["leader"], state["le"] + 1
        if change.get("isr") is not None:
            state["isr"] = tuple(change["isr"])
        if change.get("replicas") is not None:
            state["replicas"] = tuple(change["replicas"])
        assert (reg.leader, reg.leader_epoch, reg.isr, reg.replicas) == (
            state["leader"], state["le"], state["isr"], state["replicas"])


@settings(max_examples=80, deadline=None)
@given(st.lists(st.sampled_from([
    "[Broker id=1] Leader ", "[Broker id=1] Follower ", "[Broker id=1] Creating new partition ",
    "[QuorumController id=1] Replayed PartitionRecord for new partition ", "Setting new leader for topicId ",
    "[QuorumController id=1] UNCLEAN partition change for ", "[QuorumController id=1] In the new epoch ",
    "[Broker id=1] Transitioning 1 partition(s) to local leaders.", "t-0 ", "with topic id Some(U) ",
    "starts at leader epoch 1 ", "from offset 0 with partition epoch 2, ", "ISR [1,2]", "PartitionRegistration(",
    "leader=1, ", "]", ")", "7", "-", " "]), max_size=12), st.sampled_from(
        ["state.change.logger", "org.apache.kafka.controller.QuorumController",
         "org.apache.kafka.controller.PartitionChangeBuilder"]))
def test_any_kraft_like_line_is_read_without_raising(parts, logger):
    r = kraft(TRANSITIONING, line("".join(parts), logger))
    report = audited(r)
    assert r.counts.total == 2 and report.summary["rows"] == len(r.kraft_rows)
