"""fedtopic.crypto"""
