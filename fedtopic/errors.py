"""One exception root with a subtree per domain.

The CLI turns every ``FedTopicError`` into one clear line and a non-zero exit;
anything else is a bug and keeps its traceback. Each subpackage may refine its
own subtree (e.g. ``fedtopic.ledger.errors``) but must derive from a class here.
"""


class FedTopicError(Exception):
    """Root of every error a user can cause or fix."""


class ConfigError(FedTopicError):
    """A consortium config, run option or key file is wrong."""


class CorpusError(FedTopicError):
    """A corpus cannot be read, is empty, or has the wrong shape."""


class DatasetError(CorpusError):
    """A built-in dataset is unknown or cannot be fetched or verified."""


class ModelError(FedTopicError):
    """Model hyper-parameters or saved model files are invalid."""


class EvalError(FedTopicError):
    """An evaluation cannot be computed on the given inputs."""


class CryptoError(FedTopicError):
    """Key handling, encryption or encoding failed."""


class DecryptionError(CryptoError):
    """Opaque: any failure to authenticate or decrypt (never says why)."""


class LedgerError(FedTopicError):
    """Chain, contract or channel failure."""


class NetworkError(FedTopicError):
    """Aggregator or HTTP transport failure."""


class TrainingError(FedTopicError):
    """A federated training run cannot go on (checkpoint, round order, party)."""


class SessionMismatch(TrainingError):
    """Two parties' updates are not comparable: another algorithm, K, option or vocabulary."""


class AggregatorMisbehaved(TrainingError):
    """What the aggregator relayed or served fails a check the parties make themselves: a setup the launcher did
    not sign, an aggregate other parties did not receive. The party stops before any update leaves it."""


class PrivacyError(FedTopicError):
    """A privacy parameter is out of range, or a privacy budget is spent."""


class BudgetExhausted(PrivacyError):
    """The next step would spend more than the privacy budget allows."""


def join_problems(problems: list[str]) -> str:
    """Several problems as the one line an error message is: "3 problems: a; b; c" (one problem as itself)."""
    head = f"{len(problems)} problems: " if len(problems) > 1 else ""
    return head + "; ".join(problems)
