"""fedtopic: federated topic modelling for consortia whose documents never leave their owners."""

__version__ = "0.1.0"
