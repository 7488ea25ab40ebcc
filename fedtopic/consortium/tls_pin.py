"""The aggregator's certificate made and pinned in a consortium's config: ``consortium tls`` and a simulation
whose aggregator other machines reach (``simulation.local_consortium``) do it the same way."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from fedtopic.consortium.config import ConsortiumConfig
from fedtopic.network.tls import TLS_DIR, make_certificate, url_host


def pin_certificate(cfg: ConsortiumConfig, config_dir: Path, hosts: Sequence[str],
                    port: int) -> tuple[ConsortiumConfig, Path, Path]:
    """(``cfg`` with aggregator.url = https://HOSTS[0]:PORT and aggregator.tls_cert the new certificate, the
    certificate, its key): a self-signed certificate for ``hosts`` written to ``config_dir``/tls."""
    cert, key = make_certificate(hosts, config_dir / TLS_DIR)
    aggregator = cfg.aggregator.model_copy(update={"url": f"https://{url_host(hosts[0])}:{port}",
                                                   "tls_cert": str(cert.relative_to(config_dir))})
    return cfg.model_copy(update={"aggregator": aggregator}), cert, key
