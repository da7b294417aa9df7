"""Text helpers: token counting, identifier tokens, splitting."""
