"""fedtopic.network"""
