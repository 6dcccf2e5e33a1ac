"""The modelling service: FastAPI app with asynchronous jobs, and the shared what-if operations."""
