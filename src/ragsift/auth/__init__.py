"""API keys: who may reach the service, with which role and within which data scope."""
