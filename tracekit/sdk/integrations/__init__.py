"""Adapters that trace agent frameworks through the SDK (one module a framework)."""
