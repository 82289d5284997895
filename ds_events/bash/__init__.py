"""Helpers of the `bash_exec` domain: the numbered line log and process checks.

Kept free of heavy imports: the monitor process imports them before anything else.
"""
