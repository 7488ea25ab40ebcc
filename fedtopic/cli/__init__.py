"""fedtopic.cli"""
