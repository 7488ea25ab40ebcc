"""fedtopic.experiments: the papers' experiments, the demo, timing and attack studies. Nothing in fedtopic imports this package except the CLI."""
