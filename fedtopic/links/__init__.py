"""Links, the fourth door: how parties' messages travel (``base``: the shape; ``registry``: names → links)."""

from fedtopic.links.base import (
    AggregatorAt,
    Answer,
    Board,
    Channels,
    Link,
    LinkMode,
    TransportFailure,
    Wire,
)
from fedtopic.links.registry import get_link, link_names

__all__ = ["AggregatorAt", "Answer", "Board", "Channels", "Link", "LinkMode", "TransportFailure", "Wire", "get_link",
           "link_names"]
