"""The neural parts (FedNMF+MI's SMILE estimator and its SGD engine): the only modules that import torch.

torch comes from the optional extra ``fedtopic[neural]`` (pinned to the CPU
build ``torch==2.13.0``). Every entry point goes through
:func:`fedtopic.neural.require.require_torch`, so a missing extra is one
clear line naming it, never an ImportError traceback.
"""
