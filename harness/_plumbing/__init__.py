"""Private OS plumbing: what a run needs of the operating system, apart from the domain's types.

- ``clock``: virtual time (``time``, ``datetime``, ``asyncio`` and the C-level sleeps of a run follow
  the run's clock), installed once per process; ``pydantic_time``: pydantic's view of it;
- ``watchdog``: the no-progress and total limits of a run, and ``opportunity``: the time a run
  could not use (CPU wait, a stopped process), which the no-progress limit does not count;
- ``isolation``: the in-process guard (no network, no subprocess) and ``children``: contained
  child processes (namespaces, private temporary folders, a relay socket);
- ``environ``: the environment a process agent gets; ``exits``: threads and exits at a run's end.

The domain's types (tool calls, model turns, trace events, budgets, the trace, the store) are in
``toolchaos._internal``, below this package; users import them from ``toolchaos.events``.
"""
