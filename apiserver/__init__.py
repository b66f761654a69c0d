"""The API server: stateless aiohttp replicas over the storage layer (DESIGN.md)."""
