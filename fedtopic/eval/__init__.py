"""fedtopic.eval"""
