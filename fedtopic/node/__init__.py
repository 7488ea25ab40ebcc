"""fedtopic.node"""
