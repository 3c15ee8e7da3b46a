"""explorer.fmt: the one way numbers are written for people."""

from explorer.fmt import format_bytes, num, signed, signed_bytes


def test_bytes_in_decimal_units():
    assert [format_bytes(n) for n in (0, 999, 1000, 262_144, 14_400_000, 2.5e9)] == [
        "0 B",
        "999 B",
        "1.0 kB",
        "262.1 kB",
        "14.4 MB",
        "2.5 GB",
    ]


def test_signed_deltas_and_their_zero():
    assert signed_bytes(14_400_000) == "+14.4 MB" and signed_bytes(-2048) == "-2.0 kB"
    assert signed_bytes(0) == "±0 B" and signed_bytes(0, zero="") == ""
    assert signed_bytes(-5) == "-5 B"  # ASCII, everywhere
    assert (signed(3), signed(-2), signed(0)) == ("+3", "-2", "")


def test_measured_values():
    assert (num(None), num(0.0), num(-0.0), num(1.23456e-5), num(42)) == (
        "",
        "0",
        "0",
        "1.23e-05",
        "42",
    )
