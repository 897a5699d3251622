"""The researcher's REST API (token or session authentication); schema at /api/schema/."""
