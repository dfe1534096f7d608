"""Core contracts: Instance, the lmms model base class, registries, tasks, metrics, filters."""
