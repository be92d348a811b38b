"""The remembered parsers of the Kafka-log reading (issue 16's speed) give what the plain ones give."""
from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from audit import kafka_line_patterns as pat
from audit.kraft_rows import int_tuple

_digits = st.integers(min_value=-3, max_value=100_000).map(str)
_isr = st.lists(st.integers(min_value=-2, max_value=20_000), max_size=6)


@given(st.one_of(_digits, st.from_regex(r"-?[0-9]{1,6}", fullmatch=True), st.from_regex(r"\d{1,3}", fullmatch=True)))
def test_ints_table_is_int(text):
    assert pat.INTS[text] == int(text)


@settings(max_examples=300)
@given(_isr, st.sampled_from([",", ", "]), st.sampled_from(["{}", "List({})", "[{}]", "Set({})"]))
def test_parse_ints_remembered(values, sep, shape):
    text = shape.format(sep.join(map(str, values)))
    expected = list(map(int, re.findall(r"-?\d+", text)))
    first, again = pat.parse_ints(text), pat.parse_ints(text)
    assert first == again == expected
    assert first is not again                     # a list of its own each time: callers may keep it


@settings(max_examples=300)
@given(_isr, st.sampled_from([",", ", "]))
def test_int_tuple_remembered(values, sep):
    text = sep.join(map(str, values))
    assert int_tuple(text) == int_tuple(text) == tuple(values)


_leaderships = st.builds(
    lambda leader, epoch, isr, form: form.format(leader=leader, epoch=epoch, isr=",".join(map(str, isr)),
                                                 isr_sp=", ".join(map(str, isr))),
    st.integers(-1, 50), st.integers(0, 500), _isr,
    st.sampled_from([
        "(Leader:{leader},ISR:{isr},LeaderEpoch:{epoch},ControllerEpoch:1)",
        "(Leader:{leader},ISR:{isr},LeaderRecoveryState:RECOVERED,LeaderEpoch:{epoch},ControllerEpoch:1)",
        "LeaderAndIsr(leader={leader}, leaderEpoch={epoch}, isr=List({isr_sp}), zkVersion=3)",
        "LeaderAndIsr(leader={leader}, leaderEpoch={epoch}, isr=List({isr_sp}), leaderRecoveryState=RECOVERED, "
        "partitionEpoch=4)",
        '{{"leader":{leader},"leader_epoch":{epoch},"isr":[{isr}]}}',
        "PartitionState(controllerEpoch=1, leader={leader}, leaderEpoch={epoch}, isr={isr}, zkVersion=1, "
        "replicas=1)",
        "not a leadership {leader}",
    ]))


@settings(max_examples=300)
@given(_leaderships)
def test_leadership_remembered_is_parse_leadership(text):
    lead = pat.parse_leadership(text)
    for _ in range(2):
        got = pat.leadership(text)
        if lead is None:
            assert got is None
        else:
            isr = None if lead.isr is None else tuple(lead.isr)
            assert got == (lead.leader, lead.leader_epoch, isr, pat.leadership_version_hint(text))
