"""fedtopic.ledger"""
