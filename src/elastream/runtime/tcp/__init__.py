"""The decentralized policy's TCP message transport: agents on asyncio hosts in a driver thread."""
