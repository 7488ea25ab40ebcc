"""A conformance kit, as scikit-learn's ``check_estimator``: the whole contract of a registered protection or
engine, built-in or plugin, run on it by name. ``check_protection("zsum")`` returns the clauses it checked, or
raises ``ConformanceError`` naming the first broken clause and why. Plugin authors run it in their own tests
(docs/algorithms.md); fedtopic's suite runs it on every built-in and on its test plugins."""

from fedtopic.testing.contract import ConformanceError
from fedtopic.testing.engine_contract import check_engine
from fedtopic.testing.protection_contract import check_protection

__all__ = ["ConformanceError", "check_engine", "check_protection"]
