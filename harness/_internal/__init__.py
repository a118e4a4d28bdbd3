"""Private core of the domain: tool calls, model turns and the model double's reading, trace events,
budgets and ceilings, terminal states, the trace, the store, shards.

Users import these names from ``toolchaos.events`` (and ``toolchaos``). The OS plumbing a run
needs (virtual time, the watchdog, isolation, contained children) is ``toolchaos._plumbing``,
above this package. Nothing here imports anything above it: see docs/architecture.md.
"""
