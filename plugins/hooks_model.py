"""Pytest hooks for the model stage (thin: hands off to a session object in config.stash)."""
