"""Provider adapters over httpx: one model call per ``complete``, errors typed.

``load_profiles`` names the profiles, ``make_provider`` builds the adapter of one,
``call_with_retries`` retries its transient errors with backoff.
"""

from workers.errors import (
    FatalError,
    PrefillUnsupported,
    PreviousResponseNotFound,
    ProfileConfigError,
    ProviderError,
    TransientError,
)
from workers.providers.base import CallRequest, Provider, uses_prefill
from workers.providers.profiles import Profile
from workers.providers.redact import redact
from workers.providers.registry import default_providers, load_profiles, make_provider
from workers.providers.retry import backoff_delay, call_with_retries

__all__ = [
    "CallRequest",
    "FatalError",
    "PrefillUnsupported",
    "PreviousResponseNotFound",
    "Profile",
    "ProfileConfigError",
    "Provider",
    "ProviderError",
    "TransientError",
    "backoff_delay",
    "call_with_retries",
    "default_providers",
    "load_profiles",
    "make_provider",
    "redact",
    "uses_prefill",
]
