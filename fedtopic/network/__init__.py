"""fedtopic.network: the CSFed aggregator (FastAPI), its client, and the wire format of updates.

Server: ``fedtopic.network.app.create_app(AggregatorSettings)``; client:
``fedtopic.network.client.AggregatorClient``; aggregation rules:
``fedtopic.network.combiners.COMBINERS``.
"""
