"""Seeded generator of the versioned-policy benchmark (BEIR layout + manifest)."""
