"""The schedule of a derived backward, as the core reports it: one entry per
shadow (how its gradient is accumulated), per reversed loop, per stabilizer,
and for the program loop of partial buffers (cpp/include/tritonad/Schedule.h).

``bwd.schedule()`` returns a :class:`Schedule`: the text people read, one line
per entry, that also carries the entries as data::

    sched = bwd.schedule()
    print(sched)                                   # x_ptr: plain (proven: ...)
    [e.subject for e in sched.entries if e.strategy == "atomic"]
"""

from dataclasses import dataclass, field
from typing import List, Optional, Sequence

from tritonad import _contract

__all__ = ["Schedule", "ScheduleEntry"]

# (a schedule entry record's fields: LaunchContract.h, kScheduleEntryRecord)
_RECORD_FIELDS = _contract.fields("schedule_entry", "kind", "subject", "location", "strategy",
                                  "how", "notes")


@dataclass(frozen=True)
class ScheduleEntry:
    """kind: "shadow", "loop", "programs", "stabilizer" or "residual". subject: the
    forward's pointer argument (shadow), the op name (loop), "max"/"min"
    (stabilizer), the value's name (residual: saved by the forward).
    strategy: "plain", "overwrite", "plain-when-disjoint",
    "overwrite-when-disjoint", "atomic", "partial-buffer", "re-parallelized",
    "scatter-slots", "output", "no-gradient" (shadows); "forward-order", "final-stabilizers",
    "taped", "replayed" (loops); "grid-stride", "longest-first" (programs);
    "stabilizer"; "saved"
    (residual).
    how: what and why, for people; notes: what later decisions added."""
    kind: str
    subject: str
    location: str
    strategy: str
    how: str
    notes: Sequence[str] = field(default_factory=tuple)

    def line(self) -> str:
        prefix = {"shadow": f"{self.subject}: ",
                  "loop": f"loop {self.subject} at {self.location}: ",
                  "programs": "programs: ",
                  "stabilizer": f"stabilizer at {self.location}: ",
                  "residual": f"residual {self.subject} at {self.location}: "}[self.kind]
        return prefix + "; ".join([self.how, *self.notes])


class Schedule(str):
    """The schedule's text (one line per entry), with the entries in ``entries``."""
    entries: List[ScheduleEntry]

    def __new__(cls, entries: Sequence[ScheduleEntry]):
        text = "".join(entry.line() + "\n" for entry in entries)
        schedule = super().__new__(cls, text)
        schedule.entries = list(entries)
        return schedule

    def __reduce__(self):  # (a str subclass would be rebuilt from its text)
        return Schedule, (self.entries,)

    @classmethod
    def from_records(cls, records: Optional[Sequence[dict]]) -> Optional["Schedule"]:
        """From the core's records (dicts, as kept in a compiled kernel's metadata)."""
        if records is None:
            return None
        kind, subject, location, strategy, how, notes = _RECORD_FIELDS
        return cls([ScheduleEntry(r[kind], r[subject], r[location], r[strategy], r[how],
                                  tuple(r[notes])) for r in records])
