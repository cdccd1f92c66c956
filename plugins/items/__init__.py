"""Stage 4, items: slips rendered, prompts built, six items per kept family."""
