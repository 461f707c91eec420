"""Rendering toolkit (Markdown tables, figure helpers) below every suite and publish."""
