"""The dispatch library: requests to engines (asyncio, limits, retries, progress), the circuit
breaker and the solvers. The run stage that plans, resumes and ledgers a run over it is
``stages.run``."""
