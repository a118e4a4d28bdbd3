"""Private infrastructure: types, limits, virtual time, the watchdog, isolation, the store, the trace.

Nothing here imports anything above it (the engine, policies, invariants, agents, the
scenario loader, reports, commands or the pytest layer): see docs/architecture.md.
"""
