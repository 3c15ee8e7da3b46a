"""Shared pytest fixtures for passlens."""
