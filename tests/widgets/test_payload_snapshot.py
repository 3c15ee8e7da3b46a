"""The graph payload is the same as the one recorded before its computation was made faster
(tests/widgets/payload_snapshot.py): every recorded field of every node, edge, group and detail,
in the same order. Fields added to the payload since it was recorded are not compared."""

import pytest

from tests.widgets.payload_snapshot import payloads, recorded


@pytest.fixture(scope="module")
def both():
    return payloads(), recorded()


def _recorded_part(now, then, where: str):
    """``now`` restricted to the keys ``then`` has (recursively in dicts), so a field added to
    the payload later does not count as a difference; lists must have the same length."""
    if isinstance(then, dict):
        assert isinstance(now, dict), where
        missing = set(then) - set(now)
        assert not missing, f"{where}: fields gone: {sorted(missing)}"
        return {k: _recorded_part(now[k], then[k], f"{where}.{k}") for k in then}
    if isinstance(then, list):
        assert isinstance(now, list) and len(now) == len(then), f"{where}: length"
        return [
            _recorded_part(a, b, f"{where}[{i}]")
            for i, (a, b) in enumerate(zip(now, then, strict=True))
        ]
    return now


def test_every_recorded_case_is_still_built(both):
    now, then = both
    assert set(now) == set(then)
    assert len(then) >= 20


@pytest.mark.parametrize(
    "case",
    [
        "decoder2#2",
        "decoder2#2/boxes12",
        "many_ops300#2",
        "many_ops300#2/boxes12",
        "flat_chain300#2",
        "flat_chain300#2/boxes12",
        "bloat#2",
        "bloat#2/stats",
        "bloat#2/boxes12",
        "failed#2",
        "mlp_default#*",
    ],
)
def test_the_payload_is_the_recorded_one(both, case):
    now, then = both
    keys = [k for k in then if k.startswith(case[:-1])] if case.endswith("*") else [case]
    assert keys
    for key in keys:
        for side in ("after", "before"):
            a, b = now[key][side], then[key][side]
            if b is None:
                assert a is None, f"{key} {side}"
                continue
            for field in b:  # field by field, so a failure says which
                assert _recorded_part(a[field], b[field], f"{key}.{side}.{field}") == b[field], (
                    f"{key}: {side}.{field} differs"
                )
