"""A writer process for the multi-process and crash tests (not a test module).

Usage: python log_writer.py LOG_PATH NAME COUNT POLICY [BATCH]
Appends COUNT messages (in batches of BATCH) and prints "seq id" of every event whose
append returned, flushing after each, so a parent that kills it knows exactly which
events were acknowledged.
"""

from __future__ import annotations

import sys

from ds_events.events import ConversationMessage
from ds_events.log import EventLog


def main() -> None:
    path, name, count, policy = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    batch = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    # A long payload makes a kill during write() more likely to tear a line.
    pad = "x" * (int(sys.argv[6]) if len(sys.argv) > 6 else 0)
    out = sys.stdout
    with EventLog(path, quest_id="q", actor=name, policy=policy) as log:  # type: ignore[arg-type]
        i = 0
        print("ready", flush=True)
        while i < count:
            events = [ConversationMessage(role="user", content=f"{name}-{i + k}{pad}") for k in range(min(batch, count - i))]
            for event in log.append(events):  # type: ignore[union-attr]
                out.write(f"{event.seq} {event.id}\n")
            out.flush()
            i += len(events)


if __name__ == "__main__":
    main()
