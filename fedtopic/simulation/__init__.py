"""fedtopic.simulation: one-process harnesses that drive whole consortia (threads, virtual clock, lock-step, loopback aggregator)."""
