"""Benchmark: operator-driven operations of the controller on a Cluster.

1. Controlled shutdown. In a 30-broker cluster one broker (the victim, not the controller) hosts
   10,000 RF-3 partitions: it leads 5,000 of them and follows the other 5,000 (explicit
   assignments). The cluster's other partitions (``--background``) avoid the victim, so every
   broker hosts about as many replicas as the victim. Measured: the single ControlledShutdown
   request (``controlled_shutdown``: leader elections, ISR shrinks, StopReplica, records) — goal
   <= 300 ms — and then the clean stop that ends ``stop_broker`` (its BrokerStopped input: the
   session closes and the controller handles the broker change).
2. Reassignment of 10,000 RF-3 partitions, in topics of ``--reassign-topic-partitions``, to
   ``--new-brokers`` brokers that joined after the topics were created. Every replica moves.
   Measured end to end: the start (the AlterPartitionReassignments API), then
   ``catch_up_followers`` (ISR expansions sent by AlterPartition, which complete the
   reassignments) until ``list_reassignments()`` is empty. Each completed partition rewrites the
   whole znode of its topic, as in Kafka, so the cost grows with the topic size.
3. Deletion of a 10,000-partition topic: ``delete_topic`` until the topic is gone from the
   controller's context and from the store.

Records go to a sink that drops them; the cluster still folds them into its view. Every phase
checks its outcome with asserts and runs on a fresh cluster ``--repeat`` times (reassignment
``--reassign-repeat`` times); the best run is reported: wall time, with the process CPU time and
the time spent in the cyclic GC in brackets. Before each timed step a ``gc.collect()`` runs;
with ``--gc-freeze``, a ``gc.freeze()`` follows it, so that the cyclic GC stops rescanning the
cluster's long-lived objects. ``--profile`` runs each phase once more under pyinstrument. It
prints the functions with the most self time and the engine functions with the most cumulative
time. ``--profile-dir`` also writes the call trees there.

    .venv/bin/python bench/bench_operations.py [--brokers 30] [--partitions 10000] [--background 90000]
        [--repeat 3] [--reassign-topic-partitions 1000] [--gc-freeze] [--profile [--profile-dir DIR]]
        [--only shutdown,reassign,delete]
"""
from __future__ import annotations

import argparse
import gc
import os
import platform
import resource
import sys
import time
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import structlog  # noqa: E402

from controller.assignment import assign_replicas_to_brokers  # noqa: E402
from controller.embedding.cluster import Cluster  # noqa: E402
from controller.controller_events import NONE  # noqa: E402
from events.records import BrokerStopped  # noqa: E402

PER_TOPIC = 10_000
GC_FREEZE = False


def rss_mb() -> float:
    """Peak resident set size so far (ru_maxrss is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def quiesce() -> None:
    gc.collect()
    if GC_FREEZE:
        gc.freeze()


def release() -> None:
    if GC_FREEZE:
        gc.unfreeze()
    gc.collect()


class GcClock:
    """Time spent in the cyclic garbage collector (through gc.callbacks)."""

    def __init__(self) -> None:
        self.total = 0.0
        self._start = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.total += time.perf_counter() - self._start


GC_CLOCK = GcClock()


class Timer:
    """Wall, process CPU and GC time of a block, optionally under pyinstrument. Several blocks add up."""

    def __init__(self, profile: bool = False):
        self.wall = self.cpu = self.gc = 0.0
        self.profile = profile
        self.session = None
        self._profiler = None

    def __enter__(self):
        if self.profile and self._profiler is None:
            from pyinstrument import Profiler
            self._profiler = Profiler(interval=0.001)
        if self._profiler is not None:
            self._profiler.start()
        self._gc = GC_CLOCK.total
        self._cpu = time.process_time()
        self._wall = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.wall += time.perf_counter() - self._wall
        self.cpu += time.process_time() - self._cpu
        self.gc += GC_CLOCK.total - self._gc
        if self._profiler is not None:
            self._profiler.stop()
            self.session = self._profiler.last_session
        return False

    def report(self, name: str, directory: str | None, top: int = 12) -> None:
        """Print the functions with the most self time, and the engine functions (controller/,
        statemachines/, events/) with the most cumulative time."""
        if self.session is None:
            return
        root = self.session.root_frame()
        total = root.time if root is not None else 0.0
        own: dict[str, float] = defaultdict(float)
        cumulative: dict[str, float] = defaultdict(float)

        def walk(frame, on_stack: frozenset) -> None:
            if frame.is_synthetic:
                return
            func = f"{frame.class_name}.{frame.function}" if frame.class_name else frame.function
            key = f"{func}  ({frame.file_path_short}:{frame.line_no})"
            own[key] += frame.total_self_time
            if key not in on_stack:
                cumulative[key] += frame.time
            for c in frame.children:
                walk(c, on_stack | {key})
        if root is not None:
            walk(root, frozenset())
        print(f"#   profile of {name}: {total:.2f} s sampled; most self time:")
        for key, t in sorted(own.items(), key=lambda kv: -kv[1])[:top]:
            print(f"#     {100 * t / total:5.1f}%  {t:7.3f} s  {key}")
        print("#   most cumulative time in engine code:")
        skip = ("Cluster.", "BrokerServer.", "ControllerEventManager.", "QueuedEvent.", "KafkaController.process ",
                "<lambda>  (controller/kafka_controller")
        engine = [(k, t) for k, t in cumulative.items()
                  if any(f"({d}/" in k for d in ("controller", "statemachines", "events")) and not k.startswith(skip)]
        for key, t in sorted(engine, key=lambda kv: -kv[1])[:top]:
            print(f"#     {100 * t / total:5.1f}%  {t:7.3f} s  {key}")
        if directory:
            from pyinstrument.renderers import ConsoleRenderer
            os.makedirs(directory, exist_ok=True)
            with open(os.path.join(directory, f"{name}.txt"), "w") as f:
                f.write(ConsoleRenderer(unicode=False, color=False, show_all=False).render(self.session))


def build(brokers: int, background: int, *, exclude: int | None = None) -> Cluster:
    """Brokers 0..brokers-1 and ``background`` partitions (RF 3, topics of up to 10,000 partitions)
    placed by Kafka's rule on every broker but ``exclude``."""
    cluster = Cluster(seed=1, sink=lambda rec: None)
    cluster.start_brokers(range(brokers))
    hosts = [b for b in range(brokers) if b != exclude]
    i = 0
    while background > 0:
        n = min(PER_TOPIC, background)
        assignment = assign_replicas_to_brokers(hosts, n, 3, fixed_start_index=i % len(hosts))
        cluster.create_topic(f"background-{i:03d}", assignment=assignment)
        background -= n
        i += 1
    return cluster


# --- 1. controlled shutdown ---------------------------------------------------------------------------
def victim_assignment(brokers: int, victim: int, hosted: int, leads: int) -> list[tuple]:
    """``hosted`` RF-3 partitions on ``victim``: it leads ``leads`` of them (as first replica), spread
    evenly, and follows the others (as second replica); the two other replicas of each partition
    are spread over the other brokers."""
    others = [b for b in range(brokers) if b != victim]
    pairs = assign_replicas_to_brokers(others, hosted, 2, fixed_start_index=0)
    out = []
    for p, (a, b) in enumerate(pairs):
        led = (p * leads) // hosted != ((p + 1) * leads) // hosted
        out.append((victim, a, b) if led else (a, victim, b))
    return out


def run_shutdown(args, profile: bool = False) -> dict:
    victim = args.victim
    cluster = build(args.brokers, args.background, exclude=victim)
    cluster.create_topic("victim-topic", assignment=victim_assignment(args.brokers, victim, args.partitions,
                                                                      args.victim_leads))
    assert cluster.controller_id != victim, "the victim must not be the controller"
    ctx = cluster.controller.context
    hosted = ctx.partitions_on_broker(victim)
    led = [tp for tp in hosted if ctx.partition_leader(tp) == victim]
    assert len(hosted) == args.partitions and len(led) == args.victim_leads, (len(hosted), len(led))

    cs = Timer(profile)
    r0 = cluster.journal.next_offset
    quiesce()
    with cs:
        response = cluster.controlled_shutdown(victim)
    r1 = cluster.journal.next_offset
    assert response == (NONE, ()), response
    ctx = cluster.controller.context
    for tp in hosted:
        replicas = ctx.partition_replica_assignment(tp)
        leader, isr = ctx.partition_leader(tp), ctx.partition_leadership_info(tp).leader_and_isr.isr
        if len(replicas) > 1:
            assert leader != victim and leader in replicas and victim not in isr, (tp, replicas, leader, isr)
    assert not ctx.partition_leaders_on_broker(victim)
    assert victim in ctx.shutting_down_broker_ids

    # The rest of stop_broker(victim) after a successful controlled shutdown: its BrokerStopped input.
    stop = Timer(profile)
    with stop:
        cluster._input(None, BrokerStopped, victim)
    r2 = cluster.journal.next_offset
    release()
    ctx = cluster.controller.context
    assert victim not in ctx.live_or_shutting_down_broker_ids and victim not in ctx.shutting_down_broker_ids
    assert not cluster.brokers[victim].alive
    elsewhere = 0
    for tp in hosted:
        if len(ctx.partition_replica_assignment(tp)) > 1:
            assert ctx.partition_leader(tp) not in (victim, -1), tp
            elsewhere += 1
    return {"cs": cs, "stop": stop, "cs_records": r1 - r0, "stop_records": r2 - r1, "hosted": len(hosted),
            "led": len(led), "elsewhere": elsewhere, "total_partitions": sum(len(ts) for ts in ctx.topics.values())}


# --- 2. reassignment -----------------------------------------------------------------------------------
def run_reassign(args, profile: bool = False) -> dict:
    cluster = build(args.brokers, args.background)
    new = list(range(args.brokers, args.brokers + args.new_brokers))
    targets: dict[tuple, tuple] = {}
    left, topics = args.partitions, 0
    while left > 0:
        n = min(args.reassign_topic_partitions, left)
        topic = f"moving-{topics:03d}"
        cluster.create_topic(topic, n, 3)
        moved = assign_replicas_to_brokers(new, n, 3, fixed_start_index=topics % len(new))
        targets.update(((topic, p), r) for p, r in enumerate(moved))
        left -= n
        topics += 1
    cluster.start_brokers(new)
    ctx = cluster.controller.context
    assert all(not set(ctx.partition_replica_assignment(tp)) & set(new) for tp in targets)

    start, catch_up, listing = Timer(profile), Timer(profile), Timer()
    r0 = cluster.journal.next_offset
    quiesce()
    with start:
        response = cluster.reassign_partitions(targets)
    r1 = cluster.journal.next_offset
    assert response is not None and response[0] == NONE, response
    assert len(response[1]) == len(targets) and all(err == NONE for err in response[1].values())
    with listing:
        listed = cluster.list_reassignments()
    assert len(listed) == len(targets), len(listed)
    rounds = 0
    while listed:
        rounds += 1
        assert rounds <= 5, f"{len(listed)} reassignments still in progress after {rounds - 1} rounds"
        with catch_up:
            cluster.catch_up_followers()
        with listing:
            listed = cluster.list_reassignments()
    r2 = cluster.journal.next_offset
    release()

    ctx = cluster.controller.context
    stored = cluster.admin.get_full_replica_assignment_for_topics({t for t, _ in targets})
    for tp, target in targets.items():
        full = ctx.partition_full_replica_assignment(tp)
        assert full.replicas == target and not full.is_being_reassigned, (tp, full, target)
        assert stored[tp].replicas == target and not stored[tp].is_being_reassigned, (tp, stored[tp])
        lai = ctx.partition_leadership_info(tp).leader_and_isr
        assert lai.leader in target and set(lai.isr) == set(target), (tp, lai, target)
    assert not ctx.partitions_being_reassigned
    return {"start": start, "catch_up": catch_up, "list": listing, "rounds": rounds, "topics": topics,
            "total": start.wall + catch_up.wall + listing.wall, "total_cpu": start.cpu + catch_up.cpu + listing.cpu,
            "start_records": r1 - r0, "catch_up_records": r2 - r1, "partitions": len(targets)}


# --- 3. deletion ---------------------------------------------------------------------------------------
def run_delete(args, profile: bool = False) -> dict:
    cluster = build(args.brokers, args.background)
    cluster.create_topic("doomed", args.partitions, 3)
    assert "doomed" in cluster.controller.context.topics
    delete = Timer(profile)
    r0 = cluster.journal.next_offset
    quiesce()
    with delete:
        cluster.delete_topic("doomed")
    r1 = cluster.journal.next_offset
    release()
    ctx = cluster.controller.context
    assert "doomed" not in ctx.topics and "doomed" not in ctx.topics_to_be_deleted
    assert "doomed" not in ctx.topics_with_deletion_started and "doomed" not in ctx.topics_ineligible_for_deletion
    assert not any(tp[0] == "doomed" for tp in ctx.partitions_being_reassigned)
    assert not any(tp[0] == "doomed" for tp in ctx.all_partitions())
    admin = cluster.admin
    assert not admin.topic_exists("doomed") and "doomed" not in admin.get_all_topics_in_cluster()
    assert not admin.is_topic_marked_for_deletion("doomed")
    for path in ("/brokers/topics/doomed", "/config/topics/doomed", "/admin/delete_topics/doomed"):
        assert not admin.path_exists(path), path
    for server in cluster.brokers.values():
        assert not any(tp[0] == "doomed" for tp in server.leader_and_isr), server.broker_id
    return {"delete": delete, "records": r1 - r0, "partitions": args.partitions}


# --- reporting -------------------------------------------------------------------------------------------
def ms(t: Timer) -> str:
    return f"{t.wall * 1e3:,.0f} ms (cpu {t.cpu * 1e3:,.0f}, gc {t.gc * 1e3:,.0f})"


def runs_ms(runs: list[dict], key: str) -> str:
    return ", ".join(f"{r[key].wall * 1e3:,.0f}" for r in runs)


def main() -> None:
    global GC_FREEZE
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--brokers", type=int, default=30)
    ap.add_argument("--partitions", type=int, default=10_000,
                    help="partitions hosted by the shut-down broker; reassigned; in the deleted topic")
    ap.add_argument("--victim", type=int, default=5)
    ap.add_argument("--victim-leads", type=int, default=None, help="partitions it leads (default: half)")
    ap.add_argument("--background", type=int, default=90_000,
                    help="other partitions in each cluster (RF 3; off the victim in the shutdown phase)")
    ap.add_argument("--new-brokers", type=int, default=6, help="brokers the reassigned partitions move to")
    ap.add_argument("--reassign-topic-partitions", type=int, default=1_000,
                    help="partitions per reassigned topic (10,000: one topic; the cost grows with the topic size)")
    ap.add_argument("--repeat", type=int, default=3, help="fresh clusters for the shutdown and deletion phases")
    ap.add_argument("--reassign-repeat", type=int, default=1, help="fresh clusters for the reassignment phase")
    ap.add_argument("--gc-freeze", action="store_true", help="gc.freeze() the cluster before each timed step")
    ap.add_argument("--only", default="shutdown,reassign,delete")
    ap.add_argument("--profile", action="store_true", help="one more run of each phase under pyinstrument")
    ap.add_argument("--profile-dir", default=None, help="also write pyinstrument call trees here")
    args = ap.parse_args()
    if args.victim_leads is None:
        args.victim_leads = args.partitions // 2
    assert 0 < args.victim_leads <= args.partitions
    GC_FREEZE = args.gc_freeze
    only = set(args.only.split(","))
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(50))
    print(f"# {platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cpus"
          f"{', gc.freeze() before timed steps' if GC_FREEZE else ''}")

    if "shutdown" in only:
        runs = [run_shutdown(args) for _ in range(args.repeat)]
        r = min(runs, key=lambda x: x["cs"].wall)
        cs = r["cs"]
        print(f"controlled shutdown of broker {args.victim} ({r['hosted']:,} replicas, {r['led']:,} led; "
              f"{args.brokers} brokers, {r['total_partitions']:,} partitions): {ms(cs)} "
              f"[best of {len(runs)}: {runs_ms(runs, 'cs')}] = {cs.wall / r['hosted'] * 1e6:,.1f} us per hosted "
              f"partition, {cs.wall / r['led'] * 1e6:,.1f} us per led partition; {r['cs_records']:,} records; "
              f"goal <= 300 ms {'met' if cs.wall <= 0.3 else 'NOT met'}")
        r = min(runs, key=lambda x: x["stop"].wall)
        stop = r["stop"]
        print(f"clean stop after it (BrokerStopped): {ms(stop)} [best of {len(runs)}: {runs_ms(runs, 'stop')}] "
              f"= {stop.wall / r['hosted'] * 1e6:,.1f} us per hosted partition; {r['stop_records']:,} records; "
              f"{r['elsewhere']:,} partitions led elsewhere after (peak RSS {rss_mb():,.0f} MB)")

    if "reassign" in only:
        runs = [run_reassign(args) for _ in range(args.reassign_repeat)]
        r = min(runs, key=lambda x: x["total"])
        n, total = r["partitions"], r["total"]
        records = r["start_records"] + r["catch_up_records"]
        print(f"reassignment of {n:,} partitions (RF 3; {r['topics']} topic(s) of {args.reassign_topic_partitions:,}) "
              f"to {args.new_brokers} new brokers ({args.brokers} brokers, {args.background + n:,} partitions): "
              f"start {r['start'].wall:.2f} s (cpu {r['start'].cpu:.2f}, gc {r['start'].gc:.2f}; "
              f"{r['start_records']:,} records), catch-up {r['catch_up'].wall:.2f} s (cpu {r['catch_up'].cpu:.2f}, "
              f"gc {r['catch_up'].gc:.2f}; {r['rounds']} round(s); "
              f"{r['catch_up_records']:,} records), list {ms(r['list'])}; total {total:.2f} s "
              f"(cpu {r['total_cpu']:.2f}) [best of {len(runs)}: {', '.join(format(x['total'], '.2f') for x in runs)}] "
              f"= {n / total:,.0f} partitions/s, {records / total:,.0f} records/s (peak RSS {rss_mb():,.0f} MB)")

    if "delete" in only:
        runs = [run_delete(args) for _ in range(args.repeat)]
        r = min(runs, key=lambda x: x["delete"].wall)
        d = r["delete"]
        print(f"deletion of a {r['partitions']:,}-partition topic (RF 3; {args.brokers} brokers, "
              f"{args.background + r['partitions']:,} partitions): {ms(d)} "
              f"[best of {len(runs)}: {runs_ms(runs, 'delete')}] = {d.wall / r['partitions'] * 1e6:,.1f} us per "
              f"partition; {r['records']:,} records = {r['records'] / d.wall:,.0f} records/s "
              f"(peak RSS {rss_mb():,.0f} MB)")

    if args.profile:
        if "shutdown" in only:
            r = run_shutdown(args, profile=True)
            r["cs"].report("controlled-shutdown", args.profile_dir)
            r["stop"].report("broker-stopped", args.profile_dir)
        if "reassign" in only:
            r = run_reassign(args, profile=True)
            r["start"].report("reassign-start", args.profile_dir)
            r["catch_up"].report("reassign-catch-up", args.profile_dir)
        if "delete" in only:
            run_delete(args, profile=True)["delete"].report("delete-topic", args.profile_dir)


if __name__ == "__main__":
    main()
