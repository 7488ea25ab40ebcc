"""fedtopic.corpus"""
