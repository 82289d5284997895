"""A full disk for the quest log, injected at the edge of a *child* process.

Not a test module: the full-disk tests put this directory first on ``PYTHONPATH`` of the
processes they start (the bash monitor), and Python imports ``sitecustomize`` at start-up.
While the file named by ``DS_TEST_FULL_DISK`` exists, ``os.write`` to a quest's
``.ds/events.jsonl`` fails with ENOSPC, as on a full disk; every other write (the
session's output log, monitor.log) goes through. The monitor's own code runs unchanged.
"""

import errno
import os

_FLAG = os.environ.get("DS_TEST_FULL_DISK")

if _FLAG:
    _real_write = os.write

    def _write(fd, data):
        if os.path.exists(_FLAG):
            try:
                target = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                target = ""
            if target.endswith(os.path.join(".ds", "events.jsonl")):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return _real_write(fd, data)

    os.write = _write
