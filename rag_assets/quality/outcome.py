"""What a check found, in a form both tests and the Dagster skin read."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class CheckOutcome:
    passed: bool
    description: str
    metadata: dict = field(default_factory=dict)


def outcome(problems: list[str], ok: str, metadata: dict | None = None) -> CheckOutcome:
    """Pass with `ok`, or fail listing the first problems."""
    if not problems:
        return CheckOutcome(True, ok, metadata or {})
    shown = "; ".join(problems[:5]) + (f" (+{len(problems) - 5} more)" if len(problems) > 5 else "")
    return CheckOutcome(False, shown, {**(metadata or {}), "problems": len(problems)})
