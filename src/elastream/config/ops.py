"""Operations settings of a run: the Prometheus /metrics endpoint (and live view) it serves."""

from __future__ import annotations

from pydantic import Field, SecretStr

from elastream.base.settings import Settings

DEFAULT_METRICS_PORT = 9464  # the port commonly used by Prometheus exporters of this kind


class MetricsSettings(Settings):
    """The HTTP endpoint a run serves its Prometheus metrics on (docs/deploy.md §Metrics)."""

    host: str = Field(
        "127.0.0.1",
        description="address to bind; any address other than loopback needs `token`",
    )
    port: int | None = Field(
        None,
        ge=0,
        le=65535,
        description=f"port (None: {DEFAULT_METRICS_PORT}, or a free one if that is taken, and "
        "the run goes on without metrics if prometheus_client is missing; 0: no endpoint)",
    )
    token: SecretStr | None = Field(
        None,
        description="bearer token a scraper must send (Authorization: Bearer TOKEN); required "
        "on a non-loopback address; default: the ELASTREAM_METRICS_TOKEN environment variable",
    )
    linger_s: float = Field(
        0.0, ge=0, description="keep serving this long after the run ends, for a last scrape"
    )
