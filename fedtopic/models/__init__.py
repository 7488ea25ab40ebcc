"""fedtopic.models"""
