"""Dispatch requests to engines (asyncio, limits, retries, progress) and the solvers."""
