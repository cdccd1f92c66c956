"""Pytest hooks for the items stage (thin: hands off to a session object in config.stash)."""
