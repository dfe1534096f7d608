"""Scoring rules of the bundled benchmarks, in one tested place.

Task folders only wire these into ``process_results`` and aggregations; a user's own task can
import them too. Every function is deterministic (no random fallbacks, no module state), so a
task scores the same however often, and beside whatever other tasks, it runs in one process.
"""
