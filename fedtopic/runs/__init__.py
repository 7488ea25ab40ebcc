"""fedtopic.runs: the run folder every training command writes and every reader reads."""
