"""What a reduction raises, whichever compiler's reducer runs (`explorer.reduce`)."""

from __future__ import annotations

from compiler import PasslensError


class ReduceError(PasslensError, RuntimeError):
    """A reduction could not be made: no finding to reduce, a pipeline that cannot run here,
    a budget spent before anything showed the finding again."""


class NotReproducible(ReduceError):
    """The finding does not show on its own (it needs the trace's own inputs, the framework's
    reference, or is not a pass's finding); the message says why."""


def diverged_finding(report, finding, whose: str, shrinks: str):
    """The finding a compiler's reducer shrinks: `finding` as given (a Finding of `report`,
    its index, or None for the first failure), which must be `diverged`; `whose` names the
    trace ("an IREE trace's") and `shrinks` what the reducer shrinks, for the error."""
    if isinstance(finding, int) and not isinstance(finding, bool):
        if not -len(report.findings) <= finding < len(report.findings):
            raise ReduceError(
                f"the report has {len(report.findings)} finding(s): no finding {finding}"
            )
        finding = report.findings[finding]
    elif finding is not None and not hasattr(finding, "kind"):
        raise ReduceError("finding is a Finding of the report, its index, or None")
    finding = finding if finding is not None else report.first_failure
    if finding is None:
        raise ReduceError("the check found nothing to reduce")
    if finding.kind != "diverged":
        raise ReduceError(
            f"{whose} {finding.kind} finding cannot be reduced: the reducer shrinks {shrinks}"
        )
    return finding


__all__ = ["NotReproducible", "ReduceError", "diverged_finding"]
