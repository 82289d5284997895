"""Helpers of the `bash_exec` domain.

- :mod:`.linelog`: the numbered line log of a session's output, read with bounded memory.
- :mod:`.procs`: process identity (pid + start time + boot) and process-group signals.
- :mod:`.spawn`: starting a monitor and its handshake.
- :mod:`.child`: the monitor's start of the command (own session and group, a terminal).
- :mod:`.checks`: validation of requests (workdir, env, timeouts, windows).

The package itself imports nothing: the monitor loads only what it needs before "go".
"""
