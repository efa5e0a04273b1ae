"""The simulated LLM: an OpenAI-compatible server that writes long documents (``docs/sim.md``).

- ``sim.documents``: ``target(prompt, fmt=, size=, seed=)``, the deterministic documents.
- ``sim.model``: ``SimModel.respond(body) -> SimResult``, the logic without I/O.
- ``sim.app``: ``create_app(options)`` (FastAPI) and ``make_transport(options)`` (httpx,
  in-process); not imported here, so reading options does not load the web stack.
"""

from sim.documents import format_from_prompt, target
from sim.model import SimModel
from sim.options import SimOptions
from sim.replies import SimResult

__all__ = ["SimModel", "SimOptions", "SimResult", "format_from_prompt", "target"]
