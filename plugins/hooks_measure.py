"""Pytest hooks for the measure stage (thin: hands off to a session object in config.stash)."""
