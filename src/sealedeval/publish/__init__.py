"""Publish: result.json, report.md (and later figures, PDF, scorecards) from raw runs only."""
