"""fedtopic.algorithms"""
