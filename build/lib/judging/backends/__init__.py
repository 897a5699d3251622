"""Where answers come from: an OpenAI-compatible endpoint, or a baseline that needs no model."""
