"""fedtopic.consortium: the consortium config shared by every party, and creating a new consortium."""
