"""The simulated LLM: an OpenAI-compatible server that writes long documents."""
