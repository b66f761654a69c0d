"""Test support: start real API server processes (``launcher``) and pytest fixtures that put
them over each storage backend (``fixtures``)."""
